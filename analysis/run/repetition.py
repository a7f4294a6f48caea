"""Is results/<section>/<case>/rep<k>.json a good repetition of its case?

One check, used both by the run loop (through analysis.run.runner_service, right after fio and when a
run resumes) and by the analysis (analysis.rules.cases, each time it reads a repetition), so that what
the run keeps and what the analysis counts never disagree. A repetition is good when:

* it parses as fio JSON output;
* fio reported no error for its job;
* it did I/O;
* its job options are those of its case in the section's manifest.json (the case's own options,
  such as rw, bs, iodepth, numjobs, rwmixread, plus the run's engine, direct and region size):
  a file copied from another case, another run or another tree is not this case, whatever its
  folder says.

Kept small and free of pandas: the run loop's helper process imports it for every section.
"""

from __future__ import annotations

from pathlib import Path

from analysis.fio.job_options import parse_size
from analysis.fio.output import RERUN_HINT, FioOutputError, JobGroup, read_groups
from analysis.run.manifest import case_options

# Options fio applies when a job does not set them: a case that leaves them out means these.
FIO_DEFAULTS = {"iodepth": "1", "numjobs": "1"}
# The manifest's settings that every job of the run was rendered with (lib/jobfile.bash
# render_jobfile): fio option -> manifest key.
RUN_OPTIONS = {"direct": "direct", "size": "region_bytes"}


class BadRepetition(Exception):
    """str(e) is a one-line reason, e.g. 'fio reported error 5 (Input/output error)'."""


def run_engines(manifest: dict) -> str:
    """The engines the run's jobfiles name: `engines` ("psync io_uring": one at QD=1, one
    deeper, lib/engine.bash engine_for_case)."""
    return str(manifest.get("engines") or "").strip()


def rep_files(case_dir: Path) -> list[Path]:
    """rep<k>.json in repetition order; rep<k>.failed.json (kept for post-mortems) never counts."""
    reps = [p for p in case_dir.glob("rep*.json") if p.stem.removeprefix("rep").isdigit()]
    return sorted(reps, key=lambda p: int(p.stem.removeprefix("rep")))


def expected_options(manifest: dict, case: str) -> dict[str, str] | None:
    """The job options a repetition of `case` must show, or None when the manifest does not
    describe the case (a tree from before manifests held the matrix: nothing to compare). A
    value with spaces lists the values allowed (the run's engines)."""
    matrix = case_options(manifest)
    if case not in matrix:
        return None
    expected = dict(matrix[case])  # the case's own first: they name the case in a message
    for opt, key in RUN_OPTIONS.items():
        if str(manifest.get(key, "")) != "":
            expected.setdefault(opt, str(manifest[key]))
    if run_engines(manifest):
        expected.setdefault("ioengine", run_engines(manifest))
    for opt, value in FIO_DEFAULTS.items():
        expected.setdefault(opt, value)
    return with_stripes(expected)


SEQUENTIAL = ("read", "write", "rw", "readwrite")


def with_stripes(expected: dict[str, str]) -> dict[str, str]:
    """Sequential jobs of one case each get a stripe of their own (job_stripes in lib/jobfile.bash:
    size and offset_increment of region/jobs, whole MiB): their job options show the stripe."""
    jobs = int(expected.get("numjobs") or 1)
    whole = parse_size(expected.get("size") or "")
    if jobs <= 1 or expected.get("rw") not in SEQUENTIAL or whole is None:
        return expected
    stripe = str((whole // jobs) >> 20 << 20)
    return {**expected, "size": stripe, "offset_increment": stripe}


def same_value(have: str | None, want: str) -> bool:
    """fio echoes options as written; sizes may be spelt two ways (4k and 4096); `want` may list
    the values allowed, separated by spaces."""
    if have is None:
        return False
    if have == want or (" " in want and have in want.split()):
        return True
    a, b = parse_size(have), parse_size(want)
    return a is not None and a == b


def option_mismatches(group: JobGroup, expected: dict[str, str]) -> list[str]:
    out = []
    for key, want in expected.items():
        have = group.options.get(key, FIO_DEFAULTS.get(key))
        if not same_value(have, want):
            allowed = " or ".join(f"{key}={w}" for w in want.split()) if " " in want else \
                f"{key}={want}"
            out.append(f"{key}={have if have is not None else '(not set)'} where its case has "
                       f"{allowed}")
    return out


def check(path: Path | str, expected: dict[str, str] | None = None) -> JobGroup:
    """The repetition's job group, or BadRepetition saying why it is not a good one."""
    skipped: list[str] = []  # groups read_groups left out: an error, or no I/O
    try:
        groups = read_groups(path, skipped)
    except FioOutputError as e:
        # The toolkit wrote this file itself with json+: the remedy is to run it again.
        raise BadRepetition(str(e).replace(f"; {RERUN_HINT}", "")) from None
    except OSError as e:
        raise BadRepetition(f"cannot read {path}: {e.strerror}") from None
    if skipped:
        raise BadRepetition(skipped[0])
    group = groups[0]  # the section jobfiles hold one group_reporting job
    if len(groups) > 1:
        raise BadRepetition(f"{len(groups)} jobs in one file, where a repetition holds one")
    mismatches = option_mismatches(group, expected) if expected else []
    if mismatches:
        raise BadRepetition("not a repetition of this case: its job options say "
                            + "; ".join(mismatches))
    return group
