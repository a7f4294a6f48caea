"""The toolkit's own bash renderers driven from Python, for the tests and the benches that need a
section's jobfiles without running a section (lib/ceiling.bash, lib/jobfile.bash)."""

from __future__ import annotations

import shlex
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def render_ceiling(folder: Path, cases: dict[str, str], engines: dict[str, str],
                   direct: int = 1, uring: str = "", jobfiles: bool = False,
                   target: str = "/dev/null") -> None:
    """folder/ceiling.fio and ceiling.tsv as the run loop renders them (lib/ceiling.bash), and with
    `jobfiles` each case's folder/<case>/job.fio (lib/jobfile.bash render_jobfile, a 64 MiB region
    of `target`, /dev/null unless a test names a device): the cases {name: "rw=randread bs=4k
    ..."} in add_case's words, each on the engine `engines` names (the test's choice, where a run's is lib/engine.bash's by depth),
    io_uring's options `uring` (lib/uring.bash's URING_OPTS), jobs on any CPU."""
    lines = ["set -euo pipefail", "source lib/run.bash",
             "SECTION=test PROFILE=tiny RUNTIME=1 RAMP=0 REGION_BYTES=67108864",
             f"TARGET_PATH={shlex.quote(target)}",
             f"DIRECT={direct} URING_OPTS={shlex.quote(uring)}",
             "PLACEMENT_NOTE='any CPU (a test)' PLACEMENT_CPUS=''",
             "declare -A ENGINES=()",
             'engine_for_case() { printf %s "${ENGINES[${CASE_NAMES[$1]}]}"; }']
    for k, (name, opts) in enumerate(cases.items()):
        lines += [f"add_case {shlex.quote(name)} {' '.join(map(shlex.quote, opts.split()))}",
                  f"ENGINES[{shlex.quote(name)}]={shlex.quote(engines[name])}"]
        if jobfiles:
            lines += [f"mkdir -p {shlex.quote(str(folder / name))}",
                      (f'render_jobfile {k} "$(engine_for_case {k})" "$DIRECT" '
                       f">{shlex.quote(str(folder / name / 'job.fio'))}")]
    lines.append(f"mkdir -p {shlex.quote(str(folder))}; render_ceiling {shlex.quote(str(folder))}")
    subprocess.run(["bash", "-c", "\n".join(lines)], cwd=REPO, check=True, capture_output=True,
                   text=True)
