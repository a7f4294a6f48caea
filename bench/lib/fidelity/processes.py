"""bench/fidelity's processes and messages: its children in their own process groups (so Ctrl-C
reaches the bench, which stops them), the failures it reports, and how quiet the machine was."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

from bench.lib.fidelity.model import EXIT_MISSED


class Interrupted(Exception):
    pass


class Failed(Exception):
    """A step failed: the message says what happened and how to fix it; code is the exit code."""

    def __init__(self, message: str, code: int = EXIT_MISSED):
        super().__init__(message)
        self.code = code


def info(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def on_signal(signum, frame):
    raise Interrupted()


def stop_group(proc: subprocess.Popen) -> None:
    """Stop a child and everything it started (fio forks one process per job; the toolkit stops
    its fio on TERM and then cleans up), then make sure: KILL after 15 s."""
    for sig, grace in ((signal.SIGTERM, 15), (signal.SIGKILL, 5)):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(timeout=grace)
            return
        except subprocess.TimeoutExpired:
            continue


def run(argv: list[str], log: Path, timeout: float, cwd: Path | None = None,
        env: dict | None = None) -> int:
    """Run a command in its own process group (so Ctrl-C reaches the bench, which then stops the
    whole group), stdout and stderr to `log`; its exit code. A command over `timeout` s is
    stopped and counts as failed (124)."""
    with open(log, "ab") as out:
        proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, cwd=cwd, env=env,
                                start_new_session=True)
        try:
            return proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            stop_group(proc)
            return 124
        except BaseException:
            stop_group(proc)
            raise


def tail(path: Path, lines: int = 15) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return ""


# --- the machine ---------------------------------------------------------------------------------
class Machine:
    """How quiet the machine was: these targets are RAM, so every number here is CPU time, and
    another engineer's tests on the same CPUs move it. Other fio processes are looked for between
    the bench's own runs (fio servers waiting for a client are left out)."""

    def __init__(self) -> None:
        self.load_start = self.load()
        self.checks = self.busy = 0
        self.pids: set[str] = set()

    @staticmethod
    def load() -> str:
        try:
            return Path("/proc/loadavg").read_text().split()[0]
        except OSError:
            return "?"

    def check(self) -> None:
        self.checks += 1
        seen = set()
        for proc in Path("/proc").iterdir():
            if not proc.name.isdigit():
                continue
            try:
                argv = (proc / "cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            if argv and os.path.basename(argv[0]) == b"fio" and not any(
                    a.startswith(b"--server") for a in argv):
                seen.add(proc.name)
        if seen:
            self.busy += 1
            self.pids |= seen

    def summary(self) -> str:
        other = (f"other fio running at {self.busy} of {self.checks} checks (pid "
                 f"{' '.join(sorted(self.pids, key=int)[:8])}): numbers are disturbed"
                 if self.busy else f"no other fio seen at {self.checks} checks between runs")
        return (f"{len(os.sched_getaffinity(0))} CPUs; load average {self.load_start} at start, "
                f"{self.load()} at end; {other}")
