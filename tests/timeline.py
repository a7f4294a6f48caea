"""Where make test's time goes: its junit, read as a timeline of its workers.

tests/conftest.py records each test's start (epoch s), worker and CPU seconds (cpu_s: the
worker's and every child it waited for) as junit properties. This reads a run's junit and prints,
per minute of the suite, how many tests ran on the workers and how many CPU-seconds they used, then
each file's wall time, its CPU time and its share of the wall spent not using a CPU (waiting on
fio's runtime, a lock or the NVMe VM):

    $ make test          # keeps tmp/junit.xml (the parallel part), tmp/junit-paced.xml and
    #                      tmp/junit-alone.xml (the `alone` tests, paced two at a time, then the rest)
    $ .venv/bin/python -m tests.timeline tmp/junit.xml
    minute  tests running (of 6 workers)  CPU s in the minute
         0   3.9                           95.2
    ...
    file                       wall s   cpu s  started  ended
    test_nvme_e2e.py            478.6   439.6       0    479
    ...

A file's rows are its tests' setup to teardown, so a test that waits on a lock (tests/toolkit.py)
counts the wait as wall time: "started" and "ended" show when the file held its worker.
"""

from __future__ import annotations

import argparse
import collections
import xml.etree.ElementTree as ET
from dataclasses import dataclass


@dataclass(frozen=True)
class Test:
    file: str
    name: str
    worker: str
    start: float  # epoch s
    wall: float  # s, as junit's time: setup, call and teardown
    cpu: float  # s


def read(path: str) -> list[Test]:
    """The tests of a junit file that carry the start property (tests/conftest.py)."""
    out = []
    for case in ET.parse(path).iter("testcase"):
        props = {p.get("name"): p.get("value") for p in case.iter("property")}
        if "start" not in props:
            continue
        out.append(Test(case.get("classname", "").split(".")[-1] + ".py", case.get("name", ""),
                        props.get("worker", "main"), float(props["start"]),
                        float(case.get("time", 0)), float(props.get("cpu_s", 0))))
    return out


def by_minute(tests: list[Test]) -> list[tuple[int, float, float]]:
    """(minute, mean tests running, CPU s): each test's wall and CPU spread evenly over its span."""
    t0 = min(t.start for t in tests)
    running, cpu = collections.Counter(), collections.Counter()
    for t in tests:
        a, b = t.start - t0, t.start - t0 + t.wall
        m = int(a // 60)
        while m * 60 < b:
            overlap = min(b, (m + 1) * 60) - max(a, m * 60)
            running[m] += overlap / 60
            cpu[m] += t.cpu * overlap / t.wall if t.wall else 0
            m += 1
    return [(m, running[m], cpu[m]) for m in sorted(running)]


def by_file(tests: list[Test]) -> list[tuple[str, float, float, float, float]]:
    """(file, wall s, CPU s, started, ended: s from the suite's start), the costliest first."""
    t0 = min(t.start for t in tests)
    files = collections.defaultdict(list)
    for t in tests:
        files[t.file].append(t)
    rows = [(f, sum(t.wall for t in ts), sum(t.cpu for t in ts), min(t.start for t in ts) - t0,
             max(t.start + t.wall for t in ts) - t0) for f, ts in files.items()]
    return sorted(rows, key=lambda r: -r[2])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("junit", help="make test's junit, with tests/conftest.py's properties")
    parser.add_argument("--files", type=int, default=25, help="files to list (default 25)")
    args = parser.parse_args(argv)
    tests = read(args.junit)
    if not tests:
        parser.error(f"{args.junit}: no test carries a start property (an older junit?)")
    workers = len({t.worker for t in tests})
    print(f"minute  tests running (of {workers} workers)  CPU s in the minute")
    for m, running, cpu in by_minute(tests):
        print(f"{m:6d}  {running:4.1f}  {cpu:36.1f}")
    print(f"\n{'file':32s} {'wall s':>8s} {'cpu s':>7s} {'started':>8s} {'ended':>6s}")
    for f, wall, cpu, a, b in by_file(tests)[:args.files]:
        print(f"{f:32s} {wall:8.1f} {cpu:7.1f} {a:8.0f} {b:6.0f}")
    print(f"\nall: {sum(t.wall for t in tests):.0f} s of tests' wall, "
          f"{sum(t.cpu for t in tests):.0f} CPU s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
