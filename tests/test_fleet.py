"""Fleet runs: sections on several fio servers at once through fio's client/server mode.

The servers run on this machine, each on a loopback port of its own with a target of its own
(files on disk and a loop device), started with serve.bash exactly as on a lab machine; the
orchestrator is an ordinary section script given --hosts. Every server, loop device and mount a
test makes is removed afterwards, also when the test fails.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
import pytest

from analysis.fio.output import FioOutputError
from analysis.report import hosts
from analysis.run import fleet, record
from tests.toolkit import (
    REPO,
    TINY,
    assert_row_is_fios,
    fio_reps,
    free_port,
    listening,
    load_json,
    loop_device,
    mkfs_ext4,
    mounted,
    run,
    script_env,
    sha256_of,
    wait_listening,
)

needs_fio = pytest.mark.skipif(shutil.which("fio") is None, reason="fio is not installed")
pytestmark = needs_fio

REGION = "64M"
QD1_CASES = ["randread-4k", "randwrite-4k", "read-128k", "write-128k"]


# --- servers --------------------------------------------------------------------------------
@dataclass
class Server:
    port: int
    target: str
    proc: subprocess.Popen
    log: Path

    @property
    def spec(self) -> str:  # how the orchestrator names it
        return f"127.0.0.1:{self.port}"

    @property
    def label(self) -> str:  # its folder under results/hosts/
        return f"127.0.0.1-{self.port}"

    def check_log(self, root: Path, job: str) -> str:
        """What the server's check said before the job (fio saves exec_prerun's output)."""
        return (root / "tmp" / f"serve-{self.port}" / f"{job}.prerun.txt").read_text()


def start_server(root: Path, state: Path, target: str, *args: str, port: int | None = None,
                 timeout: float = 30) -> Server:
    """serve.bash on a loopback port, returned once fio's server listens."""
    port = port or free_port()
    log = root / "tmp" / f"serve-{port}.log"
    with open(log, "w") as out:
        proc = subprocess.Popen(
            ["bash", str(root / "serve.bash"), "--listen", f"127.0.0.1:{port}", "--target",
             target, "--size", REGION, *args], stdout=out, stderr=subprocess.STDOUT, cwd=root,
            env=script_env({"TK_SERVE_DIR": str(state)}), start_new_session=True)
    server = Server(port, target, proc, log)
    deadline = time.monotonic() + timeout
    while not listening(port):
        if proc.poll() is not None or time.monotonic() > deadline:
            stop_server(server)
            raise AssertionError(f"serve.bash did not start:\n{log.read_text()}")
        time.sleep(0.05)
    return server


def stop_server(server: Server) -> None:
    """SIGTERM as a user's Ctrl-C would; then anything left of its process group is killed."""
    if server.proc.poll() is None:
        server.proc.terminate()
        with contextlib.suppress(subprocess.TimeoutExpired):
            server.proc.wait(timeout=15)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(server.proc.pid, signal.SIGKILL)
    server.proc.wait()


@contextlib.contextmanager
def serving(root: Path, state: Path, targets: list[str], *args: str):
    """A server per target; a block device is served for writes only with --destroy naming it,
    which the test gives here unless it serves read-only."""
    servers = []
    try:
        for target in targets:
            destroy = [] if "--read-only" in args or not target.startswith("/dev/") else \
                ["--destroy", target]
            servers.append(start_server(root, state, target, *args, *destroy))
        yield servers
    finally:
        for server in servers:
            stop_server(server)
        for server in servers:
            assert not listening(server.port), f"a fio server still listens on {server.port}"


def serve_refused(root: Path, state: Path, target: str, *args: str) -> subprocess.CompletedProcess:
    """serve.bash expected to refuse: it must exit by itself, without serving."""
    port = free_port()
    proc = subprocess.Popen(
        ["bash", str(root / "serve.bash"), "--listen", f"127.0.0.1:{port}", "--target", target,
         *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=root,
        env=script_env({"TK_SERVE_DIR": str(state)}), start_new_session=True)
    try:
        out, err = proc.communicate(timeout=60)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
    assert not listening(port)
    assert not list(state.glob(f"serve-{port}.*")), "a refused server left a vouch"
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


def hosts_file(root: Path, servers: list[Server], targets: list[str] | None = None) -> Path:
    path = root / "tmp" / "hosts.txt"
    lines = ["# lab machines: host[:port] target"]
    lines += [f"{s.spec} {t}" for s, t in zip(servers, targets or [s.target for s in servers])]
    path.write_text("\n".join(lines) + "\n")
    return path


def random_file(path: Path, mib: int = 80) -> str:
    with open(path, "wb") as f:
        f.writelines(os.urandom(1 << 20) for _ in range(mib))
    return str(path)


@pytest.fixture
def state(tmp_path):
    """The servers' state folder (TK_SERVE_DIR, the same for servers and orchestrator)."""
    path = tmp_path / "state"
    path.mkdir()
    return path


# --- checks ---------------------------------------------------------------------------------
def host_reps(root: Path, server: Server, section: str, case: str) -> list[Path]:
    return sorted((root / "results" / "hosts" / server.label / section / case).glob("rep*.json"))


def check_host_tree(root: Path, server: Server, section: str, cases: list[str], reps: int = 2):
    tree = root / "results" / "hosts" / server.label / section
    manifest = record.section(tree)
    assert manifest["target"] == f"{server.spec} {server.target}"
    steps = record.load(root / "results")["steps"]
    assert steps[f"hosts/{server.label}/{section}/prefill"].startswith("region ")
    for case in cases:
        files = host_reps(root, server, section, case)
        assert [p.name for p in files] == [f"rep{k}.json" for k in range(1, reps + 1)], case
        for path in files:
            doc = load_json(path)
            # One ordinary fio document per host: its own job, no other host, no sum.
            assert "client_stats" not in doc and len(doc["jobs"]) == 1
            job = doc["jobs"][0]
            assert job["jobname"] == case and int(job["port"]) == server.port
            assert job["job options"]["filename"] == server.target
            assert job["error"] == 0


def check_fleet_outputs(root: Path, section: str, snippet_name: str, heading: str,
                        servers: list[Server], cases: list[str]) -> pd.DataFrame:
    table = pd.read_csv(root / "tables" / f"{section}_hosts.csv")
    assert sorted(set(table.host)) == sorted(s.label for s in servers)
    assert len(table) == len(servers) * len(cases)
    by_label = {s.label: s for s in servers}
    for row in table.itertuples():
        tree = root / "results" / "hosts" / by_label[row.host].label / section
        assert_row_is_fios(row, fio_reps(tree, row.case, row.direction))
        assert row.iops_mean > 50, f"{row.host} {row.case}: {row.iops_mean} IOPS"
    fig = (root / "figs" / f"{section}_hosts.png").read_bytes()
    assert fig[:8] == b"\x89PNG\r\n\x1a\n" and len(fig) > 10_000
    snippet = (root / "out" / snippet_name).read_text()
    assert snippet.startswith(f"## {heading} across hosts")
    assert f"Hosts: {len(servers)} " in snippet
    assert f"](../figs/{section}_hosts.png)" in snippet
    for case, rows in table.groupby("case"):
        fastest, slowest = rows.iops_mean.max(), rows.iops_mean.min()
        fast_host = rows.loc[rows.iops_mean.idxmax(), "host"]
        line = next(ln for ln in snippet.splitlines() if ln.startswith(f"| {case} "))
        assert fast_host in line and f"{(1 - slowest / fastest) * 100:.1f}%" in line, line
    for server in servers:
        # Each host also has the section's own tables and snippet, linked from the comparison.
        assert (root / "out" / "hosts" / server.label / snippet_name).exists()
        assert f"[{server.label}](hosts/{server.label}/{snippet_name})" in snippet
    return table


# --- across three hosts ---------------------------------------------------------------------
@pytest.mark.root
def test_qd1_and_qd_sweep_across_three_hosts(toolkit, tmp_path, state):
    targets = [random_file(toolkit / "tmp" / "a.img"), random_file(toolkit / "tmp" / "b.img")]
    with loop_device(tmp_path / "c.img", size_mb=96) as dev, \
            serving(toolkit, state, [*targets, dev]) as servers:
        hosts = hosts_file(toolkit, servers)
        env = {"TK_SERVE_DIR": str(state)}
        result = run(toolkit, "qd1_test.bash", "--hosts", str(hosts), *TINY, env=env)
        assert result.returncode == 0, result.stderr
        assert "hosts    3, each case on all at once" in result.stderr
        for server in servers:
            check_host_tree(toolkit, server, "qd1", QD1_CASES)
            # The server checked every job before fio ran it (a batch's job is named CASE@REP).
            for rep in (1, 2):
                assert server.check_log(toolkit, f"randwrite-4k@{rep}").startswith(
                    f"ok: write of {64 << 20} bytes of {server.target}")
                assert server.check_log(toolkit, f"randread-4k@{rep}").startswith("ok: read")
        check_fleet_outputs(toolkit, "qd1", "section_2_qd1.md", "§2 QD=1 baselines", servers,
                            QD1_CASES)

        result = run(toolkit, "qd_sweep_test.bash", "--hosts", str(hosts), *TINY,
                     "--qd", "1,4", "--no-seq", "--no-peak", env=env)
        assert result.returncode == 0, result.stderr
        # Each section prefills each host's region once, as a local run does.
        assert "prefill: writing 64 MiB of the target of 3 host(s)" in result.stderr
        cases = ["randread-4k-qd1", "randread-4k-qd4"]
        for server in servers:
            check_host_tree(toolkit, server, "qd_sweep", cases)
            assert (toolkit / "tables" / "hosts" / server.label / "qd_sweep.csv").exists()
        table = check_fleet_outputs(toolkit, "qd_sweep", "section_5_qd_sweep.md",
                                    "§5 Queue-depth sweep", servers, cases)
        assert set(table.iodepth) == {1, 4}

        # The whole report across the hosts: the finished sections are only analysed again,
        # §1 records the orchestrator and the hosts, the burst section is skipped with why.
        result = run(toolkit, "report.bash", "--hosts", str(hosts), *TINY,
                     "--sections", "qd1,qd_sweep,wss_burst", env={**env, "QD_LIST": "1,4",
                                                                 "SEQ": "0", "PEAK": "off"})
        assert result.returncode == 0, result.stderr
        assert "[1/" not in result.stderr  # nothing measured again
        env_text = (toolkit / "out" / "env.txt").read_text()
        assert "Fleet hosts (each measures its own target)" in env_text
        for server in servers:
            assert f"{server.spec} {server.target}" in env_text
        report = (toolkit / "out" / "report.md").read_text()
        assert "## §2 QD=1 baselines across hosts" in report
        assert "## §5 Queue-depth sweep across hosts" in report
        assert "| §6 | skipped (runs on one machine only" in report
        assert "- profile: tiny (" in report  # the report's setup block
        assert "3 hosts: " in report, report
        for server in servers:  # each host's headline numbers, named with the host
            assert f"on {server.label} (§2)" in report


# --- a host that drops out ------------------------------------------------------------------
def test_a_host_stopped_mid_run_drops_out_and_the_rest_go_on(toolkit, state):
    targets = [random_file(toolkit / "tmp" / "a.img"), random_file(toolkit / "tmp" / "b.img")]
    env = {"TK_SERVE_DIR": str(state)}
    with serving(toolkit, state, targets) as (stays, leaves):
        hosts = hosts_file(toolkit, [stays, leaves])
        # a round (4 repetitions) per fio call, so the server stops after the first call
        args = ["bash", str(toolkit / "qd1_test.bash"), "--hosts", str(hosts), "--fleet-batch", "4",
                *TINY]
        orchestrator = subprocess.Popen(args, cwd=toolkit, env=script_env(env), text=True,
                                        stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        try:
            deadline = time.monotonic() + 120
            while not host_reps(toolkit, leaves, "qd1", "randread-4k"):
                assert orchestrator.poll() is None and time.monotonic() < deadline
                time.sleep(0.05)
            stop_server(leaves)
            _, err = orchestrator.communicate(timeout=300)
        finally:
            if orchestrator.poll() is None:
                orchestrator.kill()
                orchestrator.wait()
        assert orchestrator.returncode == 1, err
        assert f"{leaves.spec} drops out" in err and "1 host(s) dropped out" in err
        check_host_tree(toolkit, stays, "qd1", QD1_CASES)
        kept = [p for case in QD1_CASES for p in host_reps(toolkit, leaves, "qd1", case)]
        assert len(kept) == 4  # the first call (round 1) finished; the one under way is lost
        for path in kept:
            assert load_json(path)["jobs"][0]["error"] == 0
        tree = toolkit / "results" / "hosts" / leaves.label / "qd1"
        assert (tree / "dropped.txt").read_text().strip()
        snippet = (toolkit / "out" / "section_2_qd1.md").read_text()
        assert f"**{leaves.label} dropped out:**" in snippet
        facts = load_json(toolkit / "tables" / "qd1_facts.json")
        assert any(a["kind"] == "host_dropped" and leaves.label in a["text"]
                   for a in facts["anomalies"])
        table = pd.read_csv(toolkit / "tables" / "qd1_hosts.csv")
        assert set(table[table.host == leaves.label].case) <= set(QD1_CASES)

        # Back again: the rerun does only what is missing, on the host that missed it.
        stayed = {p: sha256_of(p) for case in QD1_CASES
                  for p in host_reps(toolkit, stays, "qd1", case)}
        kept_digests = {p: sha256_of(p) for p in kept}
        back = start_server(toolkit, state, leaves.target, port=leaves.port)
        try:
            result = run(toolkit, "qd1_test.bash", "--hosts", str(hosts), *TINY, env=env)
        finally:
            stop_server(back)
        assert result.returncode == 0, result.stderr
        assert {p: sha256_of(p) for p in stayed} == stayed
        assert {p: sha256_of(p) for p in kept} == kept_digests
        check_host_tree(toolkit, leaves, "qd1", QD1_CASES)
        assert not (tree / "dropped.txt").exists()
        # Both hosts ran every repetition in the one order the first run drew (rounds, shuffled
        # by its seed), the rerun included: each batch's file was written after the one before,
        # and within a batch (one fio call) fio numbered the jobs' groups in the order they ran.
        docs = [record.section(toolkit / "results" / "hosts" / s.label / "qd1")
                for s in (stays, leaves)]
        assert docs[0]["order_seed"] == docs[1]["order_seed"]
        assert docs[0]["order"] == docs[1]["order"] and len(docs[0]["order"][0]) == 8

        def ran(p: Path) -> tuple[int, int]:
            return p.stat().st_mtime_ns // 500_000_000, load_json(p)["jobs"][0]["groupid"]

        for server in (stays, leaves):
            reps = sorted((p for case in QD1_CASES for p in host_reps(toolkit, server, "qd1", case)
                           if p.stem[3:].isdigit()), key=ran)
            assert [f"{p.parent.name}/{p.stem}" for p in reps] == docs[0]["order"][0]
        assert "dropped out" not in (toolkit / "out" / "section_2_qd1.md").read_text()


# --- refusals -------------------------------------------------------------------------------
@pytest.mark.root
def test_a_server_whose_target_fails_the_safety_checks_refuses_to_serve(toolkit, tmp_path, state):
    with loop_device(tmp_path / "fs.img", size_mb=64) as dev:
        mkfs_ext4(dev)
        with mounted(dev, tmp_path / "mnt"):
            result = serve_refused(toolkit, state, dev)
            assert result.returncode == 3, result.stderr
            assert "mounted" in result.stderr
        before = sha256_of(dev)  # after the unmount: mounting writes the superblock
        result = serve_refused(toolkit, state, dev)
        assert result.returncode == 3, result.stderr
        assert "ext4" in result.stderr and "--destroy" in result.stderr

        # Read-only, it serves; a run that would write is refused before anything is written.
        with serving(toolkit, state, [dev], "--read-only") as [server]:
            vouch = (state / f"serve-{server.port}.vouch").read_text()
            assert f"target={dev}\n" in vouch and "mode=read-only\n" in vouch
            result = run(toolkit, "qd1_test.bash", "--hosts", server.spec, "--target", dev,
                         *TINY, env={"TK_SERVE_DIR": str(state)})
            assert result.returncode == 3, result.stderr
            assert f"{server.spec} refused to write" in result.stderr
            assert "refused: this server serves" in server.check_log(toolkit, "probe")
        assert sha256_of(dev) == before
    assert not list(state.iterdir()), "the vouch outlived its server"


def test_the_orchestrator_cannot_point_a_server_elsewhere(toolkit, state):
    served = random_file(toolkit / "tmp" / "served.img")
    other = random_file(toolkit / "tmp" / "other.img")
    digests = {p: sha256_of(p) for p in (served, other)}
    env = {"TK_SERVE_DIR": str(state)}
    with serving(toolkit, state, [served]) as [server]:
        hosts = hosts_file(toolkit, [server], [other])
        result = run(toolkit, "qd1_test.bash", "--hosts", str(hosts), *TINY, env=env)
        assert result.returncode == 3, result.stderr
        assert f"{server.spec} refused to write" in result.stderr
        assert server.check_log(toolkit, "probe").startswith(
            f"refused: this server vouches for {served}, not {other}")
        # More of the target than the server vouched for.
        result = run(toolkit, "qd1_test.bash", "--hosts", server.spec, "--target", served,
                     *TINY, "--size", "128M", env=env)
        assert result.returncode == 3, result.stderr
        assert f"this server vouches for {64 << 20}" in server.check_log(toolkit, "probe")
    assert {p: sha256_of(p) for p in digests} == digests
    assert not list((toolkit / "results").rglob("rep*.json"))


def test_fio_versions_must_match(toolkit, state, tmp_path):
    # A second fio version cannot be installed beside the real one here: a wrapper on the
    # orchestrator's PATH that reports another version (and otherwise runs the real fio) makes
    # the mismatch, which the server's real version then exposes.
    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "fio").write_text(f'#!/bin/sh\n[ "$1" = --version ] && {{ echo fio-9.99; exit 0; }}\n'
                              f'exec {shutil.which("fio")} "$@"\n')
    (fake / "fio").chmod(0o755)
    served = random_file(toolkit / "tmp" / "served.img", mib=64)
    real = subprocess.run(["fio", "--version"], capture_output=True, text=True,
                          check=False).stdout.strip()
    with serving(toolkit, state, [served]) as [server]:
        result = run(toolkit, "qd1_test.bash", "--hosts", server.spec, "--target", served, *TINY,
                     env={"TK_SERVE_DIR": str(state), "PATH": f"{fake}:{os.environ['PATH']}"})
    assert result.returncode == 2, result.stderr
    assert f"{server.spec} runs {real}, this machine fio-9.99" in result.stderr

    # A host nobody serves on is named too.
    port = free_port()
    result = run(toolkit, "qd1_test.bash", "--hosts", f"127.0.0.1:{port}", "--target", served,
                 *TINY, env={"TK_SERVE_DIR": str(state)})
    assert result.returncode == 1, result.stderr
    assert f"cannot reach 127.0.0.1:{port}" in result.stderr
    assert not list((toolkit / "results").rglob("rep*.json"))


def test_fleet_usage(toolkit, state):
    env = {"TK_SERVE_DIR": str(state)}
    result = run(toolkit, "qd1_test.bash", "--hosts", "lab1,lab2:8766", "--target", "/dev/sdb",
                 "--dry-run", env=env)
    assert result.returncode == 0, result.stderr
    assert "lab1:8765  /dev/sdb  -> hosts/lab1" in result.stderr
    assert "lab2:8766  /dev/sdb  -> hosts/lab2-8766" in result.stderr
    assert f"exec_prerun={state}/serve-8765.check /dev/sdb" in result.stdout
    assert "[global]" not in result.stdout  # fio < 3.39 merges the hosts' [global] sections
    for args, code, message in (
            (["--hosts", "lab1", "--target", "sdb"], 2, "must be an absolute path"),
            (["--hosts", "lab1"], 2, "no target for lab1"),
            (["--hosts", "lab1:99999", "--target", "/dev/sdb"], 2, "is not host[:port]"),
            (["--hosts", "lab1,lab1:8765", "--target", "/dev/sdb"], 2, "named twice"),
            (["--hosts", "lab1", "--target", "/dev/sdb", "--destroy", "/dev/sdb"], 2,
             "give it to serve.bash on that host")):
        result = run(toolkit, "qd1_test.bash", *args, "--dry-run", env=env)
        assert result.returncode == code and message in result.stderr, (args, result.stderr)
    result = run(toolkit, "wss_burst_test.bash", "--hosts", "lab1", "--target", "/dev/sdb",
                 "--dry-run", env=env)
    assert result.returncode == 2 and "runs on one machine only" in result.stderr
    result = run(toolkit, "serve.bash", "--target", "/dev/sdb", env=env)
    assert result.returncode == 2 and "give --listen" in result.stderr
    assert not list((toolkit / "results").iterdir()) and not list(state.iterdir())


# --- fio's client output --------------------------------------------------------------------
CLIENT_JOB = """\
[{name}]
filename={target}
rw=randread
bs=4k
iodepth={depth}
ioengine=psync
direct=1
runtime=1
time_based=1
"""


@pytest.fixture(scope="module")
def client_output():
    """A real run of two plain fio servers with a job each, from one fio client."""
    repo_tmp = Path(__file__).resolve().parents[1] / "tmp"
    repo_tmp.mkdir(exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="pytest-client-", dir=repo_tmp))  # O_DIRECT: on disk
    ports = [free_port(), free_port()]
    servers = [subprocess.Popen(["fio", f"--server=ip:127.0.0.1,{p}"], cwd=work,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
               for p in ports]
    try:
        assert all(wait_listening(p) for p in ports)
        args = ["fio", "--output-format=json+"]
        for k, port in enumerate(ports):
            target = random_file(work / f"t{k}.img", mib=16)
            job = work / f"job{k}.fio"
            job.write_text(CLIENT_JOB.format(name=f"host{k}", target=target, depth=1 + k))
            args += [f"--client=127.0.0.1,{port}", str(job)]
        result = subprocess.run(args, capture_output=True, text=True, timeout=60, check=False)
        assert result.returncode == 0, result.stderr
        (work / "combined.json").write_text(result.stdout)
        probe = subprocess.run(["fio", f"--client=127.0.0.1,{ports[0]}",
                                "--output-format=json,normal", str(work / "job0.fio")],
                               capture_output=True, text=True, timeout=60, check=False)
        refused = work / "refused.fio"
        refused.write_text((work / "job0.fio").read_text() + "exec_prerun=false\n")
        skipped = subprocess.run(["fio", f"--client=127.0.0.1,{ports[0]}",
                                  "--output-format=json,normal", str(refused)],
                                 capture_output=True, text=True, timeout=60, check=False)
        # A batch, as the run loop sends it: on each host three repetitions in one jobfile, each
        # job stonewalled and named CASE@REP; qd4 runs first and twice (two rounds).
        args = ["fio", "--output-format=json+"]
        for k, port in enumerate(ports):
            batch = work / f"batch{k}.fio"
            batch.write_text("".join(
                CLIENT_JOB.format(name=name, target=work / f"t{k}.img", depth=depth) + "stonewall\n\n"
                for name, depth in (("qd4@1", 4), ("qd1@1", 1), ("qd4@2", 4))))
            args += [f"--client=127.0.0.1,{port}", str(batch)]
        batched = subprocess.run(args, capture_output=True, text=True, timeout=60, check=False)
        assert batched.returncode == 0, batched.stderr
        (work / "batch.json").write_text(batched.stdout)
        yield {"dir": work, "ports": ports, "text": result.stdout, "probe": probe.stdout,
               "refused": skipped.stdout}
    finally:
        for server in servers:
            server.terminate()
            server.wait(timeout=10)
        shutil.rmtree(work, ignore_errors=True)


def hosts_for(out, ports):
    return [fleet.Host(f"h{k}", "127.0.0.1", port, out["dir"] / f"h{k}.json")
            for k, port in enumerate(ports)]


def test_split_gives_each_host_its_own_document(client_output):
    doc = json.loads(client_output["text"][client_output["text"].find("{"):])
    names = [e["jobname"] for e in doc["client_stats"]]
    assert sorted(names) == ["All clients", "host0", "host1"]
    hosts = hosts_for(client_output, client_output["ports"])
    parts = fleet.split(client_output["text"], hosts)
    for k, (host, hdoc, reason) in enumerate(parts):
        assert reason == ""
        [job] = hdoc["jobs"]
        mine = next(e for e in doc["client_stats"] if e["jobname"] == f"host{k}")
        assert job == mine and job["job options"]["iodepth"] == str(1 + k)
        assert hdoc["fio version"] == doc["fio version"]
        assert "client_stats" not in hdoc and "global options" not in hdoc
        assert all(int(d["port"]) == host.port for d in hdoc.get("disk_util", []))

    # fio 3.39 lists each host's [global] options; up to 3.38 they are merged into one object,
    # which belongs to no host and is dropped.
    listed = dict(doc, **{"global options": [
        {"hostname": "127.0.0.1", "port": port, "bs": f"{4 << k}k"}
        for k, port in enumerate(client_output["ports"])]})
    parts = fleet.split(json.dumps(listed), hosts)
    assert [hdoc["global options"] for _, hdoc, _ in parts] == [{"bs": "4k"}, {"bs": "8k"}]
    merged = dict(doc, **{"global options": {"bs": "8k"}})
    assert all("global options" not in hdoc for _, hdoc, _ in fleet.split(json.dumps(merged), hosts))

    # A host with no entry (its server gone) gets no document and a reason.
    gone = hosts_for(client_output, [client_output["ports"][0], free_port()])
    text = "client: host=127.0.0.1 disconnected\n" + client_output["text"]
    (_, first, _), (_, missing, reason) = fleet.split(text, gone)
    assert first is not None and missing is None
    assert reason == "fio said: client: host=127.0.0.1 disconnected"
    local = {k: v for k, v in doc.items() if k != "client_stats"}
    local["jobs"] = [e for e in doc["client_stats"] if e["jobname"] != "All clients"]
    with pytest.raises(FioOutputError, match="not fio client/server output"):
        fleet.split(json.dumps(local), hosts)


def test_split_command_writes_files_and_reports_missing_hosts(client_output, tmp_path):
    combined = client_output["dir"] / "combined.json"
    port0 = client_output["ports"][0]
    absent = free_port()
    assert fleet.main(["split", str(combined), f"a=127.0.0.1,{port0}={tmp_path / 'a.json'}",
                       f"b=127.0.0.1,{absent}={tmp_path / 'b.json'}"]) == 0
    assert load_json(tmp_path / "a.json")["jobs"][0]["port"] == port0
    assert not (tmp_path / "b.json").exists()
    assert fleet.main(["split", str(combined), f"b=127.0.0.1,{absent}={tmp_path / 'b.json'}"]) == 1
    assert fleet.main(["split", str(combined), "b=nonsense"]) == 2


def test_split_of_a_batch_gives_each_job_its_own_document(client_output, tmp_path, capsys):
    """A batch (several repetitions in one call per host) splits per host and per job, each
    document what a local run of that repetition alone would have written, in the order run."""
    args = []
    for k, port in enumerate(client_output["ports"]):
        for case in ("qd1", "qd4"):
            (tmp_path / f"h{k}" / case).mkdir(parents=True)
        args.append(f"h{k}=127.0.0.1,{port}={tmp_path / f'h{k}'}/{{case}}/rep{{rep}}.json")
    assert fleet.main(["split", str(client_output["dir"] / "batch.json"), *args]) == 0
    assert capsys.readouterr().out.splitlines() == ["h0\tok\tqd4@1 qd1@1 qd4@2",
                                                    "h1\tok\tqd4@1 qd1@1 qd4@2"]
    for k, port in enumerate(client_output["ports"]):
        for case, rep, depth in (("qd4", 1, "4"), ("qd1", 1, "1"), ("qd4", 2, "4")):
            doc = load_json(tmp_path / f"h{k}" / case / f"rep{rep}.json")
            [job] = doc["jobs"]
            assert job["jobname"] == case and job["port"] == port
            assert job["job options"]["iodepth"] == depth and job["read"]["total_ios"] > 0
            assert "client_stats" not in doc and doc["fio version"].startswith("fio-")
        # the two repetitions of qd4 are two runs, not one document twice
        reps = [load_json(tmp_path / f"h{k}" / "qd4" / f"rep{r}.json")["jobs"][0] for r in (1, 2)]
        assert reps[0]["groupid"] < reps[1]["groupid"] and reps[0] != reps[1]
    # Without {case} a host's jobs stay together in one document (the plain split).
    out = tmp_path / "whole.json"
    assert fleet.main(["split", str(client_output["dir"] / "batch.json"),
                       f"h0=127.0.0.1,{client_output['ports'][0]}={out}"]) == 0
    assert [j["jobname"] for j in load_json(out)["jobs"]] == ["qd4@1", "qd1@1", "qd4@2"]


def test_probe_reads_the_server_version_and_a_refusal(client_output):
    real = subprocess.run(["fio", "--version"], capture_output=True, text=True,
                          check=False).stdout.strip()
    assert fleet.probe(client_output["probe"]) == f"{real}\tok"
    assert fleet.probe(client_output["refused"]) == (
        f"{real}\trefused\tthe server's check before the job failed")
    assert fleet.probe("hostname=lab3, be=0, 64-bit, os=Linux, arch=x86-64, fio=fio-3.41, "
                       "flags=1\n").startswith("fio-3.41\tfailed\t")
    # fio writes a failed connection into its --output file, not only to stderr.
    port = free_port()
    out = client_output["dir"] / "unreachable.txt"
    result = subprocess.run(["fio", f"--client=127.0.0.1,{port}", "--output-format=json,normal",
                             f"--output={out}", str(client_output["dir"] / "job0.fio")],
                            capture_output=True, text=True, timeout=60, check=False)
    assert result.returncode != 0
    assert fleet.probe(out.read_text()) == (
        f"\tunreachable\tfailed to connect to 127.0.0.1:{port}")


def test_the_hosts_analyses_run_in_one_process_and_name_what_failed(tmp_path, capsys):
    """A fleet run's analysis (lib/fleet.bash): `python -m analysis hosts SECTION --analyse HOST`
    draws each host's own tables, figures and snippet in this process, then the hosts side by
    side. A host whose analysis fails is named and fails the command, unless it is excused (it
    dropped out); the comparison is drawn either way. The arguments after -- reach each host's
    analysis. No fio runs: the committed fixture tree (real fio output) is one host's."""
    results = tmp_path / "results"
    shutil.copytree(REPO / "tests" / "fixtures" / "results", results / "hosts" / "lab1")
    (results / "hosts" / "lab2").mkdir()  # no qd1 of its own: its analysis exits 2
    tree = ["--root", str(tmp_path), "--results", str(results)]

    assert hosts.main(["qd1", *tree, "--analyse", "lab1", "--analyse", "lab2"]) == 1
    err = capsys.readouterr().err
    assert "analysis of host lab1:" in err and "analysis of host lab2:" in err
    assert err.splitlines()[-1] == "hosts: the analysis failed for host lab2 (see above)"
    own = {p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*lab1/*") if p.is_file()}
    assert {"tables/hosts/lab1/qd1_baseline.csv", "figs/hosts/lab1/qd1_iops.png",
            "out/hosts/lab1/section_2_qd1.md"} <= own, own
    compared = pd.read_csv(tmp_path / "tables" / "qd1_hosts.csv")
    baseline = pd.read_csv(tmp_path / "tables" / "hosts" / "lab1" / "qd1_baseline.csv")
    assert set(compared.host) == {"lab1"}
    assert sorted(compared.iops_mean) == sorted(baseline.iops_mean)

    assert hosts.main(["qd1", *tree, "--analyse", "lab2", "--excused", "lab2"]) == 0
    capsys.readouterr()
    assert hosts.main(["qd1", *tree, "--analyse", "lab1", "--", "--no-such-threshold", "5"]) == 1
    err = capsys.readouterr().err
    assert "unrecognized arguments: --no-such-threshold 5" in err
    assert err.splitlines()[-1] == "hosts: the analysis failed for host lab1 (see above)"
