"""Shared fixtures: the real fio samples, and real fio runs made once per session."""

from __future__ import annotations

import collections
import errno
import json
import os
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
# A suite started from a script's background job inherits SIGINT ignored, and so would every
# script it starts (an ignored signal cannot be trapped): the tests of Ctrl-C need a terminal's.
if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)
# Real fio output from real drives, committed with its provenance (tests/fixtures/fio-samples/README.md).
SAMPLES = REPO / "tests" / "fixtures" / "fio-samples"

# `pytest` run from anywhere (not only from the repo, where pyproject.toml sets pythonpath)
# must import the analysis package.
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from tests.toolkit import (  # after REPO is on the path
    beside_others,
    free_port,
    preloaded_analysis,
    teardown_on_sigterm,
    tree_cpu_seconds,
    unless_installable,
    wait_listening,
)

teardown_on_sigterm()  # in the controller and in each xdist worker

TARGET_SIZE = 16 * 1024 * 1024
COMMON = ["--bs=4k", "--lat_percentiles=1", "--output-format=json+", "--randrepeat=0"]

# name -> (target file, fio arguments). Short runs, all started at once.
# The number_ios runs pin N so that p/100*N is an integer (60% of 25, 30% of
# 50 and 100, 99.95% of 2000): there plain-double or literal long-double
# arithmetic picks a different sample than fio does, so the percentile
# algorithm is checked where it is easiest to get wrong.
RUNS = {
    "psync": ("read.img", ["--rw=randread", "--ioengine=psync", "--runtime=1", "--time_based"]),
    "io_uring": ("read.img", ["--rw=randread", "--ioengine=io_uring", "--iodepth=8",
                              "--runtime=1", "--time_based"]),
    "randrw": ("rw.img", ["--rw=randrw", "--rwmixread=70", "--ioengine=psync",
                          "--runtime=1", "--time_based"]),
    "n25": ("read.img", ["--rw=randread", "--ioengine=psync", "--number_ios=25",
                         "--percentile_list=30:60"]),
    "n50": ("read.img", ["--rw=randread", "--ioengine=psync", "--number_ios=50",
                         "--percentile_list=30:60"]),
    "n100": ("read.img", ["--rw=randread", "--ioengine=psync", "--number_ios=100",
                          "--percentile_list=30:60"]),
    "n2000": ("read.img", ["--rw=randread", "--ioengine=psync", "--number_ios=2000",
                           "--percentile_list=99.95"]),
}

CLIENT_JOB = """\
[global]
filename={target}
direct={direct}
bs=4k
runtime=1
time_based
lat_percentiles=1
[clients]
rw=randread
numjobs=2
"""


def _make_target(path: Path) -> None:
    """A file full of incompressible data (never-written extents read as zeros)."""
    path.write_bytes(os.urandom(TARGET_SIZE))


def _supports_direct(path: Path) -> bool:
    """tmpfs and some overlay filesystems refuse O_DIRECT."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_DIRECT", 0))
    except OSError as exc:
        if exc.errno == errno.EINVAL:
            return False
        raise
    os.close(fd)
    return True


def _start(cmd: list[str], output: Path) -> subprocess.Popen:
    """Start fio with its stdout (where the JSON goes) in ``output``."""
    with open(output, "wb") as out:  # the child keeps its own copy of the descriptor
        return subprocess.Popen(cmd, stdout=out, stderr=subprocess.DEVNULL)


@pytest.fixture(scope="session")
def fio_runs():
    """Real fio runs: {name: {'doc': parsed JSON, 'text': the JSON text, 'path': fio's
    stdout file} or None}, for RUNS plus 'client' (a client/server run of two jobs).

    Made under the repo's tmp/ (git-ignored, on disk, unlike a tmpfs /tmp), in
    parallel so the whole set costs about one run's time, and removed afterwards.
    A run that fails (e.g. io_uring blocked in a container) maps to None and the
    tests that need it skip, saying why.
    """
    if shutil.which("fio") is None:
        unless_installable("fio is not installed")
    (REPO / "tmp").mkdir(exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="pytest-fio-", dir=REPO / "tmp"))
    procs = {}
    server = None
    try:
        for name in ("read.img", "rw.img"):
            _make_target(work / name)
        direct = "1" if _supports_direct(work / "read.img") else "0"
        for name, (target, args) in RUNS.items():
            procs[name] = _start(["fio", f"--name={name}", f"--filename={work / target}",
                                  f"--direct={direct}", *COMMON, *args], work / f"{name}.json")

        port = free_port()
        # in its own folder, stopped once the client's run is read (below): it had listened,
        # idle, for the rest of the session, in the repository
        server = subprocess.Popen(["fio", f"--server=ip:127.0.0.1,{port}"], cwd=work,
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        if wait_listening(port):
            job = work / "client.fio"
            job.write_text(CLIENT_JOB.format(target=work / "read.img", direct=direct))
            procs["client"] = _start(["fio", f"--client=ip:127.0.0.1,{port}",
                                      "--output-format=json+", str(job)], work / "client.json")

        docs = {}
        for name, proc in procs.items():
            try:
                proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
            text = (work / f"{name}.json").read_text(errors="replace")
            text = text[text.find("{\n"):]  # fio may print messages before the JSON
            try:
                doc = json.loads(text)
            except ValueError:
                doc = None
            ok = proc.returncode == 0 and doc is not None
            docs[name] = {"doc": doc, "path": work / f"{name}.json", "text": text} if ok else None
        docs.setdefault("client", None)
        _stop(server)
        yield docs
    finally:
        for proc in procs.values():
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        if server is not None:
            _stop(server)
        shutil.rmtree(work, ignore_errors=True)


def _stop(server: subprocess.Popen) -> None:
    if server.poll() is not None:
        return
    server.terminate()
    try:
        server.wait(timeout=5)
    except subprocess.TimeoutExpired:
        server.kill()
        server.wait()


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    """xdist's file scheduling, but a worker is given its next file only once it has one test
    left of its own (xdist gives it at two): a worker that started a two-test file was at once
    given the next file too, and held it behind its own long tests while another worker idled
    (tests/README.md has what it cost)."""
    if config.getvalue("dist") != "loadfile":
        return None
    from xdist.scheduler import LoadFileScheduling

    class OneFileAhead(LoadFileScheduling):
        def _reschedule(self, node):
            # xdist's own, with the low-water mark at 1: a worker runs a test only once it
            # knows the next (for its teardown), so it must be sent more while on its last one
            if node.shutting_down:
                return
            if not self.workqueue:
                node.shutdown()
                return
            if self._pending_of(self.assigned_work[node]) > 1:
                return
            self._assign_work_unit(node)

    return OneFileAhead(config, log)


def pytest_addoption(parser):
    parser.addoption("--update-golden", action="store_true",
                     help="rewrite tests/golden/*.md from what the analysis renders now")


# The markers (pyproject.toml), set here from what a test uses, so `make test-fast`
# (-m "not e2e and not device and not root") never runs a script or touches a device.
E2E_FIXTURES = {"toolkit", "trees", "work", "client_output", "lab"}  # scripts, fio servers, the report
DEVICE_FIXTURES = {"zram", "zram_raw", "trees"}  # /dev/zram0
# The end-to-end files that judge exit codes, files, plans and records, no rate and no latency,
# and run no fio at real-time priority: they may run beside the NVMe VM (beside_vm), one a slot.
BESIDE_VM = {"test_faults.py", "test_fleet.py", "test_history.py", "test_order.py",
             "test_qd1_e2e.py", "test_report_e2e.py", "test_run_loop.py", "test_safety.py"}


def kinds_of(item) -> set[str]:
    """What a test is besides a unit test (none: a unit test, no script, no device)."""
    return {m for m in ("alone", "e2e", "device") if item.get_closest_marker(m)}


def exclusive(item) -> bool:
    """Whether the test holds the machine lock exclusively (tests/toolkit.py): an `alone` one,
    but for a `paced` one in a session of `paced` tests only (make test's), where two run at once:
    each waits on a block-layer throttle with a few CPU-seconds of its own, and what dipped their
    throttles was the suite's busy workers, none of which is in that session."""
    if "alone" not in kinds_of(item):
        return False
    return not all(i.get_closest_marker("paced") for i in item.session.items)


def scripts_mode(item) -> str | None:
    """How a test holds the scripts lock (tests/toolkit.py, beside_others): not at all (a unit
    test), shared, or shared or in a slot beside the NVMe VM (marked `beside_vm`)."""
    kinds = kinds_of(item)
    if not kinds:
        return None
    return "beside_vm" if item.get_closest_marker("beside_vm") and "alone" not in kinds \
        else "shared"


def fixtures_lock(item) -> bool:
    """Whether a module fixture of the test holds the scripts lock (fixture_locks): such a
    file waits for the VM like an end-to-end one, whatever its tests are marked."""
    defs = getattr(getattr(item, "_fixtureinfo", None), "name2fixturedefs", {})
    return any(getattr(d.func, "tk_locks", (False, None))[1] for ds in defs.values() for d in ds)


def pytest_collection_modifyitems(config, items):
    for item in items:
        uses = set(getattr(item, "fixturenames", ()))
        if uses & E2E_FIXTURES:
            item.add_marker(pytest.mark.e2e)
        if uses & DEVICE_FIXTURES:
            item.add_marker(pytest.mark.device)
        if item.path.name in BESIDE_VM:
            item.add_marker(pytest.mark.beside_vm)
        if item.get_closest_marker("root"):
            item.add_marker(pytest.mark.device)
            if os.geteuid() != 0:
                item.add_marker(pytest.mark.skip(
                    reason="needs root (loop devices, /dev/zram0, mounts or cgroups)"))
    # The order make test's workers take the files in (xdist keeps it: --no-loadscope-reorder):
    # the NVMe VM's file first, whose boot holds off every script and device test for minutes
    # (tests/test_nvme_e2e.py), so that the other workers spend them on the unit-test files; then
    # the files marked `beside_vm`, which may run beside the guest, one a slot, once its §6
    # has run; then the files holding an `alone` test, whose exclusive turns come together instead
    # of each waiting out a long test on another worker (tests/toolkit.py); then the other
    # end-to-end files, and those whose module fixture runs fio. Within each, the slow files and
    # those with the most tests first, so that the last ones are short; within a file, its unit
    # tests first, then its `alone` ones.
    marked, beside, locked = {}, set(), set()
    for item in items:
        marked.setdefault(item.path, set()).update(kinds_of(item))
        if item.get_closest_marker("beside_vm"):
            beside.add(item.path)
        if fixtures_lock(item):
            locked.add(item.path)
    count = collections.Counter(item.path for item in items)
    # files of a few long tests (a minute or two each), which ended the suite alone on one worker
    # when they started last; first in their group, they run beside the others' short ones
    # (test_write_regimes_e2e.py ran alone for the suite's last two minutes, 1,060 to 1,179 s;
    # test_pts_e2e.py, whose resumed test takes 70 s, last from 1,035 to 1,101 s: v68's timeline)
    slow = {"test_wss_burst_e2e.py", "test_wss_burst_model.py", "test_write_regimes_e2e.py",
            "test_write_regimes_after_cliff_e2e.py", "test_pts_e2e.py"}

    def turn(item):
        kinds = marked[item.path]
        group = (0 if item.path.name == "test_nvme_e2e.py"
                 else 1 if not kinds and item.path not in locked
                 else 2 if item.path in beside and "alone" not in kinds
                 else 3 if "alone" in kinds else 4)
        # within a file: its unit tests, then its `alone` ones, then the rest, so that the
        # alone turns of the files that start together after the VM come together (each
        # turn first drains the tests running beside it: spread out, the drains added minutes)
        kind = kinds_of(item)
        return (group, item.path.name not in slow, -count[item.path], str(item.path),
                0 if not kind else 1 if "alone" in kind else 2)

    items.sort(key=turn)


def need(fio_runs, name):
    """The named run, or skip the test when that run could not be made here."""
    run = fio_runs.get(name)
    if run is None:
        pytest.skip(f"fio run {name!r} failed on this machine (engine or filesystem unsupported)")
    return run


CPU_AT_START = pytest.StashKey[float]()
STARTED = pytest.StashKey[float]()


PRELOADED: list[int] = []  # the session's preloaded analysis (its pid), while it runs


@pytest.fixture(scope="session", autouse=True)
def preloaded_analysis_for_the_session():
    """Every `python -m analysis` of the session's tests that only reads and draws files runs in
    a worker forked from one process that has imported the analysis once (analysis/core/
    preload.py): about 2.2 of each call's 3-5 CPU-s were imports, some 350 of the suite's 2,100.
    Each call still starts from the same fresh state, on the same code (a test's copy that
    differs runs in its own process). tests/test_preload.py checks the worker does what the
    caller's own process does. Started before the first test, so that its imports never run
    beside an `alone` test's measurement."""
    with preloaded_analysis() as (sock, server):
        os.environ["TK_ANALYSIS_SERVER"] = str(sock)
        PRELOADED.append(server.pid)
        yield
        PRELOADED.clear()
        os.environ.pop("TK_ANALYSIS_SERVER", None)


preloaded_analysis_for_the_session.tk_locks = (False, None)


def _cpu_seconds() -> float:
    """This process's CPU and its children's, the preloaded analysis's workers included (their
    CPU reaches its own children's time as each call ends)."""
    own, children = (resource.getrusage(w) for w in (resource.RUSAGE_SELF,
                                                      resource.RUSAGE_CHILDREN))
    return (own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime
            + sum(tree_cpu_seconds(pid) for pid in PRELOADED))


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item):
    item.stash[CPU_AT_START] = _cpu_seconds()
    item.stash[STARTED] = time.time()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """Each test's CPU seconds (the worker's and every child it waited for: fio under a script,
    the NVMe VM's QEMU), as the junit property cpu_s. The suite is CPU-bound on this machine (6
    workers on 2 vCPUs), so its time is cut where these sum highest, not where a test waits
    longest (tests/README.md). A module fixture's setup counts to its first test. With it, when
    the test started (epoch s) and on which worker: the suite's timeline, where a worker waited
    on a lock rather than ran (python -m tests.timeline)."""
    if call.when == "teardown" and CPU_AT_START in item.stash:
        item.user_properties += [
            ("cpu_s", round(_cpu_seconds() - item.stash[CPU_AT_START], 2)),
            ("start", round(item.stash[STARTED], 2)),
            ("worker", os.environ.get("PYTEST_XDIST_WORKER", "main"))]
    yield


@pytest.hookimpl(hookwrapper=True)
def pytest_fixture_setup(fixturedef, request):
    """A module or session fixture is set up before its first test takes the locks (function
    scope comes last), so its setup takes them itself: those its first test would take, or
    those it names (tests/toolkit.py, fixture_locks). Without this, a module's fio runs or
    figures ran beside an `alone` test and moved its answer."""
    item = getattr(request, "_pyfuncitem", None)
    if fixturedef.scope == "function" or item is None:
        yield
        return
    locks = getattr(fixturedef.func, "tk_locks", None)
    if locks is None:
        locks = (exclusive(item), scripts_mode(item))
    with beside_others(alone=locks[0], scripts=locks[1]):
        yield


@pytest.fixture(autouse=True)
def machine_lock(request):
    """Every test holds the machine lock (tests/toolkit.py): shared, or exclusive for a test
    marked `alone` (exclusive()), so that nothing runs beside it on another worker; and, but for
    the unit tests, the scripts lock shared, so that none runs beside the NVMe VM (a `beside_vm`
    test: but one in each slot, once the guest's §6 has run)."""
    with beside_others(alone=exclusive(request.node), scripts=scripts_mode(request.node)):
        yield


@pytest.fixture
def toolkit():
    """A private copy of the toolkit (see tests/toolkit.py), removed afterwards."""
    from tests.toolkit import make_copy
    root = make_copy()
    yield root
    shutil.rmtree(root, ignore_errors=True)
