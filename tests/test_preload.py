"""The preloaded analysis (analysis/core/preload.py): a command sent to it does what the caller's
own process does (files, output, exit code, signals), and runs there only on the same code.

Each test starts a server of its own, so that what it counts (the server's CPU, its children)
is its own calls', not the session's (conftest.py's server serves the rest of the suite).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.toolkit import REPO, make_copy, preloaded_analysis, tree_cpu_seconds, tree_digest

FIXTURE = REPO / "tests" / "fixtures" / "results"


@pytest.fixture
def server():
    with preloaded_analysis() as (sock, proc):
        yield sock, proc


@pytest.fixture
def copy():
    root = make_copy()
    shutil.copytree(FIXTURE, root / "results", dirs_exist_ok=True)
    yield root
    shutil.rmtree(root, ignore_errors=True)


def analysis(root: Path, *args: str, sock: Path | None, **popen) -> subprocess.Popen:
    """`python -m analysis ARGS` in `root`, sent to the server at `sock` (None: no server)."""
    env = {k: v for k, v in os.environ.items() if k != "TK_ANALYSIS_SERVER"}
    env["PYTHONPATH"] = str(root)
    if sock:
        env["TK_ANALYSIS_SERVER"] = str(sock)
    return subprocess.Popen([sys.executable, "-m", "analysis", *args], cwd=root, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **popen)


def run_and_time(root: Path, *args: str, sock: Path | None) -> tuple[int, str, str, float]:
    """Exit code, stdout, stderr and the caller's own CPU seconds (its process and children:
    a worker of the server is neither)."""
    before = os.times()
    proc = analysis(root, *args, sock=sock)
    out, err = proc.communicate(timeout=300)
    after = os.times()
    return (proc.returncode, out, err,
            after.children_user + after.children_system
            - before.children_user - before.children_system)


def workers_of(server: subprocess.Popen) -> list[int]:
    """The server's calls in flight: its children (each waits on its worker)."""
    found = subprocess.run(["pgrep", "-P", str(server.pid)], capture_output=True, text=True,
                           check=False).stdout.split()
    return [int(pid) for pid in found]


def test_a_section_sent_to_the_server_writes_what_its_own_process_writes(server, copy):
    sock, proc = server
    other = make_copy()
    try:
        shutil.copytree(FIXTURE, other / "results", dirs_exist_ok=True)
        cpu_before = tree_cpu_seconds(proc.pid)
        sent = run_and_time(copy, "qd1", sock=sock)
        time.sleep(0.5)  # the call's handler is reaped on SIGCHLD, its CPU then counted
        server_cpu = tree_cpu_seconds(proc.pid) - cpu_before
        own = run_and_time(other, "qd1", sock=None)
        assert sent[0] == own[0] == 0, sent[2] + own[2]
        assert sent[1] == own[1] and sent[1].startswith("case ")
        assert sent[2] == own[2]
        written = {d: tree_digest(copy / d) for d in ("tables", "figs", "out", "results")}
        assert written == {d: tree_digest(other / d) for d in ("tables", "figs", "out", "results")}
        assert written["figs"] and written["tables"]
        # the work ran in the server: the caller spent a fraction of what the server did
        assert sent[3] < server_cpu / 2, (sent[3], server_cpu)
        assert own[3] > server_cpu / 2, (own[3], server_cpu)
    finally:
        shutil.rmtree(other, ignore_errors=True)


def test_a_failing_command_exits_and_says_what_its_own_process_does(server, copy):
    sock, _ = server
    sent = run_and_time(copy, "qd1", "--results", "no-such-tree", sock=sock)
    own = run_and_time(copy, "qd1", "--results", "no-such-tree", sock=None)
    assert sent[0] == own[0] != 0
    assert sent[1:3] == own[1:3] and "no-such-tree" in sent[2]


def test_other_code_or_no_server_runs_in_the_callers_process(server, copy):
    sock, proc = server
    assert run_and_time(copy, "qd1", sock=sock.with_name("none.sock"))[0] == 0
    module = copy / "analysis" / "sections" / "qd1.py"
    module.write_text(module.read_text() + "\n# changed in the copy\n")
    before = tree_cpu_seconds(proc.pid)
    code, _, err, cpu = run_and_time(copy, "qd1", sock=sock)
    time.sleep(0.5)
    assert code == 0, err
    assert tree_cpu_seconds(proc.pid) - before < 0.5 < cpu  # its own process did the work


def _outputs(root: Path) -> dict[Path, int]:
    """What the analysis has written so far: each table's and figure's path and mtime."""
    found = {}
    for p in [*(root / "tables").rglob("*"), *(root / "figs").rglob("*")]:
        with contextlib.suppress(FileNotFoundError):   # replaced as we look
            found[p] = p.stat().st_mtime_ns
    return found


def _interrupted(root: Path, sock: Path | None, server: subprocess.Popen | None,
                 signum: int) -> int:
    """`all` (several seconds of figures), sent `signum` once it is under way: once it has
    written its first table or figure, past its imports on either path. (A fixed second after the start
    found the caller's own process still importing on a loaded machine, and SIGINT there ended
    it with SIGABRT, -6: Python's end, not the command's.)"""
    before = _outputs(root)
    proc = analysis(root, "all", sock=sock, start_new_session=True)
    deadline = time.monotonic() + 120
    while _outputs(root) == before and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert proc.poll() is None, "finished before the signal: the test needs a longer command"
    if server:
        assert workers_of(server), "the command did not run in the server"
    os.kill(proc.pid, signum)
    proc.communicate(timeout=60)
    return proc.returncode


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_to_the_caller_ends_the_worker_as_it_would_end_the_callers_process(
        server, copy, signum):
    sock, proc = server
    assert _interrupted(copy, sock, proc, signum) == _interrupted(copy, None, None, signum) == -signum
    assert not workers_of(proc)


def test_kill_9_of_the_caller_kills_its_worker(server, copy):
    sock, proc = server
    assert _interrupted(copy, sock, proc, signal.SIGKILL) == -signal.SIGKILL
    deadline = time.monotonic() + 10
    while workers_of(proc) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not workers_of(proc)
    report = copy / "out" / "report.md"
    time.sleep(1.0)
    assert not report.exists()  # `all` ends with the report: it never got there
