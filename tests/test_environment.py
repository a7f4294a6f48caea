"""lib/collect.bash + analysis.device.environment, live on this machine: a file target on disk and
/dev/zram0, checked against lsblk, findmnt, uname and /proc; then warnings and rendering from
edited copies of those raw directories."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

from analysis.device import environment
from analysis.device.environment import (
    active_scheduler,
    build_env,
    describe_governors,
    parse_cpu,
    parse_engines,
    parse_governors,
    render_env_text,
)

REPO = Path(__file__).resolve().parents[1]
FIXTURES = REPO / "tests" / "fixtures" / "health"
ENGINES = "io_uring=ok,libaio=ok,psync=failed"
ZRAM = Path("/dev/zram0")
ZRAM_SIZE = Path("/sys/block/zram0/disksize")


def bash(script: str, *args: str) -> subprocess.CompletedProcess:
    """Run lib/collect.bash the way a section script does: sourced under set -euo pipefail."""
    cmd = ["bash", "-c", f'set -euo pipefail; source lib/collect.bash; {script}; echo finished', "bash", *args]
    done = subprocess.run(cmd, check=False, cwd=REPO, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and done.stdout.endswith("finished\n"), done.stderr
    return done


def collect(raw: Path, target: str | Path) -> Path:
    bash('collect_env_raw "$1" "$2" "$3"', str(raw), str(target), ENGINES)
    return raw


def lsblk(dev: str) -> dict:
    out = subprocess.run(["lsblk", "-J", "-b", "-O", dev], capture_output=True, text=True, check=True)
    return json.loads(out.stdout)["blockdevices"][0]


def findmnt(*args: str) -> dict | None:
    out = subprocess.run(["findmnt", "-J", *args], check=False, capture_output=True, text=True)
    return json.loads(out.stdout)["filesystems"][0] if out.returncode == 0 and out.stdout else None


@pytest.fixture(scope="module")
def workdir():
    """Under the repo's tmp/: on disk (a tmpfs /tmp would have no block device under it)."""
    (REPO / "tmp").mkdir(exist_ok=True)
    path = Path(tempfile.mkdtemp(prefix="pytest-env-", dir=REPO / "tmp"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture(scope="module")
def file_target(workdir):
    path = workdir / "target.img"
    path.write_bytes(os.urandom(1 << 20))
    return path


@pytest.fixture(scope="module")
def file_raw(workdir, file_target):
    return collect(workdir / "raw-file", file_target)


@pytest.fixture(scope="module")
def zram():
    """/dev/zram0 as found. A zram device without a size is sized to 256 MiB (root only) and left
    so: the other tests of this suite may be using it by then, and a reset would wipe their data."""
    if not ZRAM.is_block_device() or not ZRAM_SIZE.exists():
        pytest.skip("no /dev/zram0 on this machine")
    if int(ZRAM_SIZE.read_text()) == 0:
        if os.geteuid() != 0:
            pytest.skip("/dev/zram0 has no size and sizing it needs root")
        try:
            ZRAM_SIZE.write_text("256M\n")
        except OSError as exc:
            pytest.skip(f"cannot size /dev/zram0: {exc}")
    return ZRAM


@pytest.fixture(scope="module")
def zram_raw(workdir, zram):
    return collect(workdir / "raw-zram", zram)


def edited_copy(raw: Path, tmp_path: Path, files: dict[str, str | None]) -> Path:
    """A copy of a raw directory with some files replaced (None removes one)."""
    copy = tmp_path / "raw"
    shutil.copytree(raw, copy)
    for name, text in files.items():
        if text is None:
            (copy / name).unlink(missing_ok=True)
        else:
            (copy / name).write_text(text)
    return copy


# --- live captures ------------------------------------------------------------------------------
def test_file_target_matches_lsblk_and_findmnt(file_raw, file_target):
    env = build_env(file_raw)
    target = env["target"]
    dev = lsblk(target["device"])
    mount = findmnt("-T", str(file_target))
    assert target["type"] == "file"
    assert target["resolved"] == str(file_target.resolve())
    assert target["device"] == dev["path"]
    assert target["capacity_bytes"] == dev["size"]
    assert target["logical_block_size"] == dev["log-sec"]
    assert target["physical_block_size"] == dev["phy-sec"]
    assert target["rotational"] == dev["rota"]
    assert target["file_size_bytes"] == 1 << 20
    assert target["mounted"]["where"] == mount["target"]
    assert target["mounted"]["fstype"] == mount["fstype"] != "tmpfs"
    assert any(w.startswith(f"the target is a file on {mount['fstype']}") for w in env["warnings"])
    assert env["engines"] == {"io_uring": "ok", "libaio": "ok", "psync": "failed"}


def test_file_target_health_is_the_disks_or_says_why(file_raw):
    """On this VM (virtio disk) there is no SMART; on a machine with one, the summary names it."""
    env = build_env(file_raw)
    health = env["health"]
    assert health["device"] == env["target"]["parent_disk"]
    if health["available"]:
        assert health["source"] in ("smartctl", "nvme smart-log") and health["reason"] == ""
    else:
        assert health["source"] == ""
        assert health["reason"].startswith(f"unavailable on this device: smartctl: {health['device']}")


def test_machine_facts_equal_their_sources(file_raw):
    env = build_env(file_raw)
    uname = subprocess.run(["uname", "-srvmo"], capture_output=True, text=True, check=True).stdout
    fio = subprocess.run(["fio", "--version"], capture_output=True, text=True, check=True).stdout
    meminfo = dict(line.split(":", 1) for line in Path("/proc/meminfo").read_text().splitlines())
    assert env["kernel"] == uname.strip()
    assert env["fio_version"] == fio.strip()
    assert env["memory_bytes"] == int(meminfo["MemTotal"].split()[0]) * 1024
    assert env["cpu"]["logical_cpus"] == os.cpu_count()
    governors = sorted(Path("/sys/devices/system/cpu").glob("cpu[0-9]*/cpufreq/scaling_governor"))
    assert (env["governors"] is None) == (not governors)
    if not governors:
        assert env["governor"] == "unavailable"
        assert any(w.startswith("CPU frequency governor unavailable") for w in env["warnings"])


def test_zram_target_matches_lsblk(zram_raw, zram):
    env = build_env(zram_raw)
    target = env["target"]
    dev = lsblk(str(zram))
    assert target["type"] == "ram"
    assert target["device"] == target["parent_disk"] == "/dev/zram0"
    assert target["capacity_bytes"] == dev["size"] == int(ZRAM_SIZE.read_text())
    assert target["logical_block_size"] == dev["log-sec"]
    assert target["rotational"] is False
    assert target["pcie_link"] is None
    mount = findmnt("--source", str(zram))
    assert (target["mounted"] or {}).get("where") == (mount or {}).get("target")
    assert env["health"]["available"] is False
    assert "unavailable on this device" in env["health"]["reason"]
    assert "zram0" in env["health"]["reason"]
    # An unmounted device is not a collection error; zram has no scheduler, no NUMA node, no PCIe.
    assert "findmnt" not in env["collection_errors"] or mount is not None
    assert "scheduler" in env["collection_errors"]["sysfs"]


def test_health_capture_is_fast_when_nothing_answers(tmp_path, zram):
    start = time.monotonic()
    bash('collect_health_raw "$1" "$2"', str(tmp_path), str(zram))
    assert time.monotonic() - start < 1.0
    assert (tmp_path / "health_device.txt").read_text() == "/dev/zram0\n"
    assert (tmp_path / "smartctl.rc").read_text().strip() != "0"


def test_health_capture_without_a_block_device(tmp_path):
    """A file on tmpfs: findmnt's SOURCE is "tmpfs", not a device."""
    bash('collect_health_raw "$1" tmpfs; collect_health_raw "$2" ""', str(tmp_path / "a"), str(tmp_path / "b"))
    assert (tmp_path / "a" / "smartctl.err").read_text() == "smartctl: no block device to query for tmpfs\n"
    assert not (tmp_path / "b" / "smartctl.json").exists()
    assert "unavailable on this device" in build_env(tmp_path / "b")["health"]["reason"]


def test_nowhere_to_write_is_the_only_failure():
    done = bash('collect_env_raw /proc/no-such-dir /dev/null x=ok || echo "env rc=$?"; '
                'collect_health_raw /proc/no-such-dir /dev/null || echo "health rc=$?"')
    assert done.stdout == "env rc=1\nhealth rc=1\nfinished\n"


def test_health_capture_of_a_file_uses_the_disk_under_it(tmp_path, file_raw, file_target):
    bash('collect_health_raw "$1" "$2"', str(tmp_path), str(file_target))
    assert (tmp_path / "health_device.txt").read_text() == (file_raw / "disk.txt").read_text()


def test_a_target_not_yet_created_is_the_file_the_sections_will_create(workdir, file_raw):
    """§1 runs before the first section creates the default file (tmp/target.img, or any new file
    --target names): it is described as that file, on the filesystem that will hold it, and its
    absence at §1's time is no warning (the report would list it among the limitations long after
    the sections made the file)."""
    env = build_env(collect(workdir / "raw-missing", workdir / "not-yet" / "target.img"))
    target = env["target"]
    assert target["type"] == "file" and target["to_be_created"] is True
    assert build_env(file_raw)["target"]["to_be_created"] is False
    assert target["existing_parent"] == str(workdir)
    assert target["device"] == build_env(file_raw)["target"]["device"]
    assert not any("does not exist" in w or "missing" in w for w in env["warnings"])
    assert any(w.startswith("the target is a file on ") for w in env["warnings"])
    text = render_env_text(env)
    assert "missing" not in text
    assert re.search(r"\n  type: +file to be created by the first section \(full of random data\) "
                     r"on /dev/\S+ \(", text), text


# --- warnings and rendering from edited raw directories -----------------------------------------
def test_governor_warning_follows_the_data(file_raw, tmp_path):
    raw = edited_copy(file_raw, tmp_path, {"governor.txt": "cpu0 performance\ncpu1 performance\n"})
    env = build_env(raw)
    assert env["governor"] == "performance"
    assert not any("governor" in w for w in env["warnings"])
    (raw / "governor.txt").write_text("cpu0 performance\ncpu1 powersave\ncpu2 powersave\n")
    env = build_env(raw)
    assert env["governor"] == "powersave x2, performance x1"
    assert any(w.startswith("CPU frequency governor is powersave x2") for w in env["warnings"])


def test_direct_io_refusal_is_a_warning(file_raw, tmp_path):
    raw = edited_copy(file_raw, tmp_path, {"direct.txt": "refused: O_DIRECT open failed on /mnt\n"})
    warnings = build_env(raw)["warnings"]
    assert any(w.startswith("O_DIRECT was refused on the target (O_DIRECT open failed on /mnt)")
               for w in warnings)
    (raw / "direct.txt").write_text("ok\n")
    assert not any("O_DIRECT" in w for w in build_env(raw)["warnings"])


def test_rotational_and_pcie_link_warnings(file_raw, tmp_path):
    sysfs = (file_raw / "sysfs.txt").read_text()
    sysfs = "\n".join(line for line in sysfs.splitlines() if not line.startswith("rotational="))
    sysfs += ("\nrotational=1\npci_device=0000:01:00.0\ncurrent_link_speed=8.0 GT/s PCIe\n"
              "current_link_width=2\nmax_link_speed=16.0 GT/s PCIe\nmax_link_width=4\n")
    env = build_env(edited_copy(file_raw, tmp_path, {"sysfs.txt": sysfs}))
    assert env["target"]["pcie_link"] == {"pci_device": "0000:01:00.0", "speed": "8.0 GT/s PCIe",
                                          "width": 2, "max_speed": "16.0 GT/s PCIe", "max_width": 4}
    assert any("reports rotational=1" in w for w in env["warnings"])
    assert any(w.startswith("PCIe link of 0000:01:00.0 runs at 8.0 GT/s PCIe x2") for w in env["warnings"])


def test_an_emulated_slot_reports_no_link(file_raw, tmp_path):
    """QEMU's NVMe controller sits on a slot whose link the kernel reads as 'Unknown', width 0 (as
    the NVMe VM's sysfs shows it): §1 says the slot reports no link, and warns of no slow link."""
    sysfs = (file_raw / "sysfs.txt").read_text()
    sysfs += ("\npci_device=0000:00:0c.0\ncurrent_link_speed=Unknown\ncurrent_link_width=0\n"
              "max_link_speed=Unknown\nmax_link_width=255\n")
    env = build_env(edited_copy(file_raw, tmp_path, {"sysfs.txt": sysfs}))
    env["target"]["device"] = env["target"]["device"] or "/dev/nvme0n1"
    text = render_env_text(env)
    assert ("PCIe link:" in text and "not reported (speed Unknown, width 0: an emulated or virtual "
            "slot) at 0000:00:0c.0" in text)
    assert "x255" not in text and not any("PCIe link" in w for w in env["warnings"])


def test_health_identity_and_warnings_from_a_real_nvme_capture(file_raw, tmp_path):
    log = json.loads((FIXTURES / "nvme-smart-log-v1.json").read_text())
    log["critical_warning"] = 4  # the spec's "reliability degraded" bit
    raw = edited_copy(file_raw, tmp_path, {
        "smartctl.json": (FIXTURES / "smartctl-nvme-samsung-970evoplus.json").read_text(),
        "smartctl.err": None,
        "nvme-smart-log.json": json.dumps(log),
    })
    env = build_env(raw)
    assert env["health"]["available"] is True
    assert env["target"]["model"] == "Samsung SSD 970 EVO Plus 250GB"
    assert "the device reports NVMe critical warning 0x04 (reliability degraded)" in env["warnings"]
    text = render_env_text(env)
    assert "  temperature:" in text and "37 °C" in text
    assert "critical warning:     0x04" in text
    # the spare beside its threshold (smart-log spare_thresh), never alone (issue 41)
    assert (log["avail_spare"], log["spare_thresh"]) == (100, 5)
    assert "available spare:      100 % (threshold 5 %)" in text
    assert UNAVAILABLE_TEXT not in text


def test_qemus_namespace_use_and_counters_are_not_read_as_facts_it_did_not_give(tmp_path):
    """The committed sample's §1 capture, QEMU's emulated NVMe: nuse = nsze with nothing written
    and NSFEAT bit 0 clear (no fill level), spare 0 % beside its threshold 0 %, thermal counters
    that HCTMA 0 says it does not keep."""
    raw = tmp_path / "env-raw"
    shutil.copytree(REPO / "docs" / "sample" / "results" / "env-raw", raw)
    text = render_env_text(build_env(raw))
    assert ("namespace use:  nuse 4,194,304 of nsze 4,194,304 blocks (not a fill level: no thin "
            "provisioning, NSFEAT bit 0 clear), ncap 4,194,304") in text
    assert "allocated" not in text
    assert "available spare:      0 % (threshold 0 %)" in text
    assert "(counters the drive does not keep: HCTMA bit 0 clear)" in text


UNAVAILABLE_TEXT = "unavailable on this device ("


def test_text_has_headings_aligned_values_and_the_health_reason(file_raw):
    env = build_env(file_raw)
    text = render_env_text(env)
    for heading in ("Machine", "Software", "Target", "Device health", "Warnings"):
        assert f"\n{heading}\n" in text
    target_lines = text.split("\nTarget\n")[1].split("\n\n")[0].splitlines()
    value_columns = {re.match(r"  [^:]+:\s+", line).end() for line in target_lines}
    assert len(target_lines) > 5 and len(value_columns) == 1  # values aligned in one column
    if not env["health"]["available"]:
        reason = env["health"]["reason"].removeprefix("unavailable on this device: ")
        assert f"  unavailable on this device ({reason})" in text


# --- the command --------------------------------------------------------------------------------
def test_main_writes_json_and_text(file_raw, tmp_path, capsys):
    json_path, text_path = tmp_path / "results" / "env.json", tmp_path / "out" / "env.txt"
    assert environment.main([str(file_raw), "--json", str(json_path), "--text", str(text_path)]) == 0
    assert json.loads(json_path.read_text()) == build_env(file_raw)
    assert text_path.read_text() == render_env_text(build_env(file_raw))
    assert environment.main(["env", str(file_raw)]) == 0  # as __main__ may pass it, and to stdout
    assert capsys.readouterr().out == text_path.read_text()


def test_main_refuses_a_missing_raw_dir(tmp_path, capsys):
    assert environment.main([str(tmp_path / "nope")]) == 2
    assert "raw directory" in capsys.readouterr().err
    assert environment.main([]) == 2


# --- small parsers ------------------------------------------------------------------------------
def test_small_parsers():
    assert active_scheduler("none [mq-deadline] kyber bfq") == "mq-deadline"
    assert active_scheduler("[none] mq-deadline") == "none"
    assert parse_engines("io_uring=ok,libaio=failed\n") == {"io_uring": "ok", "libaio": "failed"}
    govs = parse_governors("cpu10 powersave\ncpu2 powersave\ncpu1 performance\n")
    assert list(govs) == ["cpu1", "cpu2", "cpu10"]
    assert describe_governors(govs) == "powersave x2, performance x1"
    assert parse_governors("unavailable\n") is None and describe_governors(None) == "unavailable"
    nested = {"lscpu": [{"field": "Architecture:", "data": "x86_64", "children": [
        {"field": "CPU(s):", "data": "8"}]}, {"field": "Model name:", "data": "Xeon", "children": [
            {"field": "Thread(s) per core:", "data": "2"}, {"field": "Core(s) per socket:", "data": "4"},
            {"field": "Socket(s):", "data": "1"}]}]}
    assert parse_cpu(nested) == {"model": "Xeon", "architecture": "x86_64", "logical_cpus": 8,
                                 "cores": 4, "sockets": 1, "threads_per_core": 2, "numa_nodes": None}
