"""lib/sampler.bash (health samples during a long run) and analysis/device/health_log.py (their CSV).

The parsing tests build samples.jsonl with the sampler's own bash (`_sampler_append`) from the
recorded real tool outputs in tests/fixtures/health (see SOURCES.md there). The sampler runs for
real against a loop device and a file under the repo's tmp/: this VM's disks have no SMART, so
there it must write samples.unavailable, start no loop, and leave no process behind.

The one thing this machine cannot produce for real is a device that answers, which the periodic
sampling path needs. Only for that path, a fake `smartctl` first on PATH prints a recorded real
`smartctl -j -a` JSON (the Seagate FireCuda 530 fixture); the device resolution around it is real.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

from analysis.device.health import THROTTLE_KEYS, UNAVAILABLE, health_summary
from analysis.device.health_log import (
    counter_moves,
    events,
    main,
    read_samples,
    samples_table,
    temperature_peak,
)
from tests.toolkit import REPO, loop_device

FIXTURES = REPO / "tests" / "fixtures" / "health"
SAMPLER = REPO / "lib" / "sampler.bash"
FAKE_SOURCE = FIXTURES / "smartctl-nvme-seagate-firecuda530.json"


@pytest.fixture
def work():
    """A directory under the repo's tmp/ (on the disk, like a real target), removed afterwards
    with any process a failed test left behind (their command lines name the directory)."""
    (REPO / "tmp").mkdir(exist_ok=True)
    path = Path(tempfile.mkdtemp(prefix="pytest-sampler-", dir=REPO / "tmp"))
    yield path
    leftovers = pgrep(str(path)).split()
    for pid in leftovers + [child for parent in leftovers for child in children(parent)]:
        with contextlib.suppress(OSError):
            os.kill(int(pid), signal.SIGKILL)
    shutil.rmtree(path, ignore_errors=True)


def bash(script: str, *args: str, path_first: Path | None = None,
         timeout: float = 30) -> subprocess.CompletedProcess:
    """SCRIPT run by bash with lib/sampler.bash sourced, under `set -euo pipefail` like a
    section; ARGS are $1, $2...; PATH_FIRST goes first on PATH (the fake tool)."""
    env = dict(os.environ)
    if path_first is not None:
        env["PATH"] = f"{path_first}:{env['PATH']}"
    text = f"set -euo pipefail\nsource {SAMPLER}\n{script}"
    return subprocess.run(["bash", "-c", text, "sampler-test", *args], capture_output=True,
                          text=True, env=env, timeout=timeout, check=False)


def append_samples(raw: Path, samples: list[tuple[float, str, Path]]) -> None:
    """samples.jsonl written by the sampler's own _sampler_append: (t, source, file) each."""
    lines = "\n".join(f'_sampler_append "$1" {t} {source} 0 {file}' for t, source, file in samples)
    result = bash(lines, str(raw))
    assert result.returncode == 0, result.stderr


def pgrep(pattern: str) -> str:
    """Processes whose command line holds PATTERN (pgrep -f), one pid a line."""
    return subprocess.run(["pgrep", "-f", pattern], capture_output=True, text=True,
                          check=False).stdout


def children(pid: str) -> list[str]:
    return subprocess.run(["pgrep", "-P", pid], capture_output=True, text=True,
                          check=False).stdout.split()


def alive(pid: int) -> bool:
    """A live process (not a zombie awaiting its parent's wait)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(") ", 1)[1][0] != "Z"


def fake_smartctl(work: Path) -> Path:
    """A bin directory whose smartctl prints the recorded FireCuda 530 `smartctl -j -a` JSON."""
    bindir = work / "bin"
    bindir.mkdir()
    tool = bindir / "smartctl"
    tool.write_text(f"#!/bin/sh\nexec cat {FAKE_SOURCE}\n")
    tool.chmod(0o755)
    return bindir


# --- samples.jsonl -> table, CSV and events ---------------------------------------------------

def nvme_series(work: Path) -> list[tuple[float, str, Path]]:
    """Four nvme smart-log samples 5 s apart. The first is the recorded nvme-cli 2.11 output as
    it is (51 °C, thermal-management T1 entered 3 times for 1474 s). There is no recorded series
    of one drive, so the next three are that same output with only temperature and the T1
    counters altered: 56 °C, then 61 °C with T1 entered once more for 3 s, then 58 °C with 5 s
    more spent in T1."""
    base = json.loads((FIXTURES / "nvme-smart-log-v2.11.json").read_text())
    assert (base["temperature"], base["thm_temp1_trans_count"], base["thm_temp1_total_time"]) \
        == (324, 3, 1474)
    series = [(1000.0, FIXTURES / "nvme-smart-log-v2.11.json")]
    for i, (kelvin, count, seconds) in enumerate([(329, 3, 1474), (334, 4, 1477),
                                                   (331, 4, 1482)], start=1):
        doc = dict(base, temperature=kelvin, thm_temp1_trans_count=count,
                   thm_temp1_total_time=seconds)
        path = work / f"altered{i}.json"
        path.write_text(json.dumps(doc, indent=2))
        series.append((1000.0 + 5 * i, path))
    return [(t, "nvme", path) for t, path in series]


EXPECTED_CSV = [
    ",".join(["t_s", "temperature_c", *THROTTLE_KEYS]),
    "0,51,0,0,3,0,1474,0",
    "5,56,0,0,3,0,1474,0",
    "10,61,0,0,4,0,1477,0",
    "15,58,0,0,4,0,1482,0",
]


def test_nvme_series_csv_and_events(work):
    raw = work / "health"
    raw.mkdir()
    append_samples(raw, nvme_series(work))
    with open(raw / "samples.jsonl", "a") as f:
        # What else the file can hold: a failed call (no doc), and a line cut short by a kill.
        f.write('{"t": 1012.5, "source": "nvme", "rc": 1}\n{"t": 1020.0, "source": "nvme", "rc"')
    assert len(read_samples(raw)) == 4
    out = work / "health.csv"
    assert main([str(raw), "--csv", str(out)]) == 0
    assert out.read_text().splitlines() == EXPECTED_CSV

    table = samples_table(raw)
    assert table.attrs["reason"] is None
    assert events(table) == [
        (10.0, "thermal_management_t1_trans_count 3 -> 4 (between 5 s and 10 s)"),
        (10.0, "thermal_management_t1_total_time_s 1474 -> 1477 (between 5 s and 10 s)"),
        (10.0, "temperature peak 61 °C (first sample 51 °C, lowest 51 °C)"),
        (15.0, "thermal_management_t1_total_time_s 1477 -> 1482 (between 10 s and 15 s)"),
    ]
    # Time zero given as an epoch (the run's start): the same rows, shifted.
    shifted = samples_table(raw, start=995.0)
    assert shifted["t_s"].tolist() == [5.0, 10.0, 15.0, 20.0]
    assert shifted["temperature_c"].tolist() == [51, 56, 61, 58]


def test_one_real_sample_each_source(work):
    """Each recorded real output, sampled twice unchanged: its own temperature, no counter
    moved; the peak at the first sample."""
    cases = {
        "nvme-smart-log-v1.json": ("nvme", 310 - 273),
        "smartctl-nvme-seagate-firecuda530.json": ("smartctl", 36),
        "smartctl-nvme-samsung-970evoplus.json": ("smartctl", 35),
        "smartctl-sata-samsung-mz7wd240.json": ("smartctl", 27),
        "smartctl-sata-intel-s3520.json": ("smartctl", 47),
    }
    for name, (source, celsius) in cases.items():
        raw = work / name
        raw.mkdir()
        append_samples(raw, [(2000.0, source, FIXTURES / name), (2005.0, source, FIXTURES / name)])
        table = samples_table(raw)
        assert len(table) == 2, name
        assert table["t_s"].tolist() == [0.0, 5.0]
        assert counter_moves(table) == []
        assert table["temperature_c"].tolist() == [celsius, celsius], name
        assert temperature_peak(table)[0] == 0.0
    # smartctl 7.3 has no thermal-management counters: empty cells, not zeros.
    table = samples_table(work / "smartctl-nvme-seagate-firecuda530.json")
    assert table["thermal_management_t1_trans_count"].isna().all()
    assert table["warning_temp_time_min"].tolist() == [0, 0]
    # ATA reports none of the throttle counters.
    table = samples_table(work / "smartctl-sata-samsung-mz7wd240.json")
    assert all(table[key].isna().all() for key in THROTTLE_KEYS)


def test_unavailable_dir_gives_empty_table_and_reason(work):
    raw = work / "health"
    raw.mkdir()
    (raw / "samples.unavailable").write_text("/dev/vda: smartctl -j -a could not open it\n")
    table = samples_table(raw)
    assert table.empty and list(table.columns)[:2] == ["t_s", "temperature_c"]
    assert table.attrs["reason"] == f"{UNAVAILABLE}: /dev/vda: smartctl -j -a could not open it"
    assert events(table) == []
    out = work / "h.csv"
    assert main([str(raw), "--csv", str(out)]) == 0
    assert out.read_text().splitlines() == [EXPECTED_CSV[0]]
    assert main([str(work / "nothing")]) == 2


# --- the real sampler -------------------------------------------------------------------------

START_AND_STOP = """
health_sampler_start "$1" "$2" 1
printf 'pid=%s\\n' "$HEALTH_SAMPLER_PID"
health_sampler_stop
printf 'stopped\\n'
"""


def check_unavailable(raw: Path, device: str, result: subprocess.CompletedProcess) -> None:
    """No health here: samples.unavailable names the device, no samples, no loop started."""
    assert result.returncode == 0, result.stderr
    assert result.stdout == "pid=\nstopped\n"
    reason = (raw / "samples.unavailable").read_text().strip()
    assert reason.startswith(f"{device}: smartctl -j -a could not open or identify it (exit ")
    assert "unavailable on this device" in result.stderr and "the run goes on" in result.stderr
    assert not (raw / "samples.jsonl").exists()
    # The first attempt agrees, read by analysis.device.health from the tool's own JSON.
    first = health_summary(raw / "first")
    assert first["device"] == device and first["available"] is False
    table = samples_table(raw)
    assert table.empty
    assert table.attrs["reason"].startswith(f"{UNAVAILABLE}: {reason}")
    assert set(os.listdir(raw)) == {"first", "samples.unavailable"}
    # Had that answer come as a sample (smartctl answering without data), the table would be
    # as empty, with smartctl's own words.
    other = raw.parent / "as-a-sample"
    other.mkdir()
    append_samples(other, [(3000.0, "smartctl", raw / "first" / "smartctl.json")])
    table = samples_table(other)
    assert table.empty and len(read_samples(other)) == 1
    assert table.attrs["reason"].startswith(f"{UNAVAILABLE}: smartctl: {device}")


@pytest.mark.root
def test_loop_device_is_unavailable(work):
    with loop_device(work / "loop.img", size_mb=8, fill=False) as dev:
        raw = work / "health"
        result = bash(START_AND_STOP, str(raw), dev)
        check_unavailable(raw, dev, result)


def test_file_target(work):
    """A file under the repo's tmp/: its disk's health, whatever this machine's disk is."""
    target = work / "target.img"
    target.write_bytes(os.urandom(1 << 20))
    raw = work / "health"
    first_probe = work / "probe"
    subprocess.run(["bash", "-c", f'source {REPO}/lib/collect.bash; collect_health_raw "$1" "$2"',
                    "probe", str(first_probe), str(target)], check=True)
    device = (first_probe / "health_device.txt").read_text().strip()
    if health_summary(first_probe)["available"]:
        pytest.skip(f"{device} under the repo answers SMART: the unavailable path is not seen here")
    check_unavailable(raw, device, bash(START_AND_STOP, str(raw), str(target)))


def test_file_on_tmpfs_has_no_block_device(work):
    if not Path("/dev/shm").is_dir():
        pytest.skip("no /dev/shm")
    with tempfile.NamedTemporaryFile(dir="/dev/shm") as f:
        raw = work / "health"
        result = bash(START_AND_STOP, str(raw), f.name)
        assert result.returncode == 0 and result.stdout == "pid=\nstopped\n"
        reason = (raw / "samples.unavailable").read_text().strip()
        assert reason == f"smartctl: no block device to query for {f.name}"
        assert samples_table(raw).attrs["reason"] == f"{UNAVAILABLE}: {reason}"


PERIODIC = """
health_sampler_start "$1" "$2" 1
pid=$HEALTH_SAMPLER_PID
printf 'pid=%s\\n' "$pid"
sleep 2.3
health_sampler_stop
printf 'after=%s\\n' "${HEALTH_SAMPLER_PID:-}"
"""


def test_periodic_sampling_then_stop(work):
    """Fake smartctl (see the module docstring): interval 1 s, stopped after about 2.3 s."""
    target = work / "target.img"
    target.write_bytes(bytes(1 << 20))
    raw = work / "health"
    t0 = time.time()
    result = bash(PERIODIC, str(raw), str(target), path_first=fake_smartctl(work))
    elapsed = time.time() - t0
    assert result.returncode == 0, result.stderr
    assert "sampling /dev/" in result.stderr and "every 1 s (smartctl)" in result.stderr
    pid = int(result.stdout.split("pid=")[1].split()[0])
    assert "after=\n" in result.stdout
    assert elapsed < 4.5  # the stop itself is immediate
    assert not alive(pid)
    assert pgrep(str(work / "bin")) == ""
    # The first attempt, then one sample a second.
    lines = (raw / "samples.jsonl").read_text().splitlines()
    assert 3 <= len(lines) <= 4
    samples = [json.loads(line) for line in lines]
    recorded = json.loads(FAKE_SOURCE.read_text())
    assert all(s["source"] == "smartctl" and s["rc"] == 0 and s["doc"] == recorded
               for s in samples)
    gaps = [b["t"] - a["t"] for a, b in itertools.pairwise(samples[1:])]
    assert all(0.9 < gap < 1.3 for gap in gaps), gaps
    table = samples_table(raw)
    assert table["temperature_c"].tolist() == [36] * len(lines)
    assert not (raw / ".sample.json").exists() and not (raw / "sampler.log").exists()


HANG = "29.713"  # seconds the hanging fake tool sleeps; an odd number pgrep can find


def test_interrupted_section_leaves_no_process(work):
    """A section's handlers: Ctrl-C (SIGINT to the whole process group, as a terminal sends it)
    runs the INT trap (exit 130), whose EXIT trap stops the sampler, also while its tool call is
    under way (the fake smartctl then hangs for 30 s). The loop must not die of the SIGINT
    itself: its tool call, in timeout's own process group, would be left running."""
    bindir = fake_smartctl(work)
    slow = bindir / "smartctl"
    flag = work / "hang"
    slow.write_text(f"#!/bin/sh\n[ -e {flag} ] && sleep {HANG}\nexec cat {FAKE_SOURCE}\n")
    target = work / "target.img"
    target.write_bytes(bytes(1 << 20))
    script = f"""
trap health_sampler_stop EXIT
trap 'kill "$idle"; exit 130' INT
health_sampler_start "$1" "$2" 1
printf '%s\\n' "$HEALTH_SAMPLER_PID" >"$1.pid"
touch {flag}
sleep 60 &
idle=$!
wait "$idle"
"""
    env = dict(os.environ, PATH=f"{bindir}:{os.environ['PATH']}")
    # A session of its own, SIGINT at its default action whatever pytest inherited.
    proc = subprocess.Popen(["env", "--default-signal=INT", "bash", "-c",
                             f"set -euo pipefail\nsource {SAMPLER}\n{script}",
                             "sampler-test", str(work / "health"), str(target)],
                            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            start_new_session=True)
    try:
        pid_file = work / "health.pid"
        deadline = time.monotonic() + 10
        while not (pid_file.exists() and pid_file.read_text().strip()):
            assert time.monotonic() < deadline and proc.poll() is None
            time.sleep(0.05)
        pid = int(pid_file.read_text())
        time.sleep(1.5)  # the loop is now inside a call to the hanging tool
        assert pgrep(str(slow)) != ""
        os.killpg(proc.pid, signal.SIGINT)
        assert proc.wait(timeout=5) == 130
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert not alive(pid)
    for pattern in (str(slow), f"sleep {HANG}"):
        assert pgrep(pattern) == ""
    # Only the first attempt was recorded: the cut-short call wrote nothing.
    assert len((work / "health" / "samples.jsonl").read_text().splitlines()) == 1


def test_sampler_does_not_outlive_a_killed_script(work):
    """The script dies without calling health_sampler_stop (kill -9): the loop exits by itself
    within about one interval (fake smartctl, see the module docstring)."""
    target = work / "target.img"
    target.write_bytes(bytes(1 << 20))
    result = bash('health_sampler_start "$1" "$2" 1\nprintf "%s\\n" "$HEALTH_SAMPLER_PID"\n'
                  'kill -KILL $$', str(work / "health"), str(target),
                  path_first=fake_smartctl(work))
    assert result.returncode == -signal.SIGKILL
    pid = int(result.stdout)
    assert alive(pid)
    deadline = time.monotonic() + 3
    while alive(pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not alive(pid)


def test_bad_arguments_never_fail_the_section(work):
    result = bash('health_sampler_start\nhealth_sampler_start "$1/x" "$2" soon\n'
                  'health_sampler_stop\nhealth_sampler_stop\necho ok', str(work),
                  "/nonexistent/target")
    assert result.returncode == 0 and result.stdout == "ok\n", result.stderr
    assert "usage: health_sampler_start" in result.stderr
    assert "interval 'soon' is not a whole number of seconds; using 5" in result.stderr
    assert (work / "x" / "samples.unavailable").read_text() == (
        "smartctl: no block device to query for /nonexistent/target\n")
    assert samples_table(work / "x").attrs["reason"] == (
        f"{UNAVAILABLE}: smartctl: no block device to query for /nonexistent/target")


def test_a_sample_whose_tool_never_returns_is_killed_and_recorded(work):
    # A FAKE smartctl (a hung drive cannot be made on demand) that ignores TERM and never
    # returns: timeout's TERM is not enough, its KILL COLLECT_KILL_AFTER s later is.
    bindir = work / "bin"
    bindir.mkdir()
    (bindir / "smartctl").write_text("#!/bin/sh\ntrap '' TERM\nwhile :; do sleep 1; done\n")
    (bindir / "smartctl").chmod(0o755)
    began = time.monotonic()
    result = bash('COLLECT_TIMEOUT=1 COLLECT_KILL_AFTER=1 _sampler_sample "$1" smartctl sda',
                  str(work), path_first=bindir)
    assert result.returncode == 0, result.stderr
    assert time.monotonic() - began < 10
    (line,) = (work / "samples.jsonl").read_text().splitlines()
    sample = json.loads(line)
    assert sample["source"] == "smartctl" and sample["rc"] == 137 and "doc" not in sample
    # timeout's KILL goes to its whole group, timeout included, so the sample can return while
    # the killed tool is still being torn down (seen once on a loaded machine): allow it 5 s.
    deadline = time.monotonic() + 5
    while pgrep(str(bindir)) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not pgrep(str(bindir))
