"""``python -m tools.model_drive``: the model drive's command line (tools/model_drive/cli.py)."""

import sys

from tools.model_drive.cli import main

if __name__ == "__main__":
    sys.exit(main())
