"""``python -m bench.lib.fidelity``: the fidelity bench (bench/fidelity runs this)."""

import sys

from bench.lib.fidelity.cli import main

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
