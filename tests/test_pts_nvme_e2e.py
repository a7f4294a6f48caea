"""--profile pts end to end on the emulated NVMe drive (tools/nvme_vm, issue 44): every PTS test
of every section with Format NVM as its purge, and every page drawn.

One boot; the guest runs §2, §3, §4 and §6 with --profile pts on a 64 MiB namespace of 512 B
blocks (so PTS's 0.5 KiB patterns run), --round 2, the reduced IOPS matrix and --max-rounds 5
(the rule's floor): a smoke run of the whole profile under TCG, which every page says is not
conformant. The host then draws each section's page and the report (TK_ANALYSIS_ELSEWHERE:
pandas and matplotlib under TCG take minutes). The slow test of issue 44: its boot and its
scenario's time are printed (docs/nvme-vm.md): 610 s boot to power-off, the scenario 587 s,
the whole file 628 s on the 2-CPU build machine under TCG.
"""

from __future__ import annotations

import json
import shutil
import subprocess

import pytest

from tests.toolkit import REPO, fixture_locks, make_copy, script_env, unless_installable
from tools.nvme_vm import Controller, Namespace, VmSpec, available, nvme_vm
from tools.nvme_vm.scenarios import Scenario, run_scenarios

pytestmark = [pytest.mark.root, pytest.mark.e2e, pytest.mark.long]  # 628 s: make test-long

SPEC = VmSpec(controllers=(Controller(namespaces=(Namespace("64M", 512),), serial="TKPTS01"),),
              cpus=2, memory_mib=2048)
SECTIONS = {"qd1": ("qd1_test.bash", 2), "bs_sweep": ("bs_sweep_test.bash", 3),
            "mix_rw": ("mix_rw_test.bash", 4), "wss_burst": ("wss_burst_test.bash", 6)}
ARGS = ("--profile pts --target /dev/nvme0n1 --destroy /dev/nvme0n1 --purge format --round 2 "
        "--pts-matrix reduced --max-rounds 5 --engine libaio")


@pytest.fixture(scope="module")
@fixture_locks(scripts="exclusive")  # no script or device test beside the VM
def guest():
    unless_installable(available())
    tk = make_copy()
    try:
        command = "\n".join(f"bash {tk / script} {ARGS}; echo $? >\"$SCENARIO_DIR/rc-{sid}\""
                            for sid, (script, _) in SECTIONS.items())
        # the write cache each run disabled (PTS-E) is set back when it ends
        command += (f"\n{tk}/.venv/bin/python -m analysis write-cache /dev/nvme0n1 "
                    '>"$SCENARIO_DIR/cache-after.json"')
        with nvme_vm(SPEC) as vm:
            results = run_scenarios(vm, [Scenario("pts", command, timeout=1500, cwd=tk,
                                                  env={"TK_ANALYSIS_ELSEWHERE": "1"})],
                                    rwdirs=[tk])
            print(f"NVMe VM: {vm.accelerator}, {vm.boots[0]:.0f} s boot to power-off; "
                  f"pts {results['pts'].seconds or 0:.0f} s")
            rcs = {sid: (results["pts"].folder / f"rc-{sid}").read_text().strip()
                   for sid in SECTIONS if (results["pts"].folder / f"rc-{sid}").exists()}
            stderr = results["pts"].stderr
            cache_after = (results["pts"].folder / "cache-after.json").read_text()
        drawn = {sid: subprocess.run([str(REPO / ".venv/bin/python"), "-m", "analysis", sid],
                                     cwd=tk, env=script_env(), capture_output=True, text=True,
                                     timeout=300, check=False)
                 for sid in SECTIONS}
        yield tk, rcs, stderr, drawn, cache_after
    finally:
        shutil.rmtree(tk, ignore_errors=True)


def test_every_pts_test_runs_with_format_nvm_as_its_purge(guest):
    tk, rcs, stderr, _, cache_after = guest
    assert rcs == dict.fromkeys(SECTIONS, "0"), stderr[-4000:]
    # each test's folder beside the section's write_cache.json (the state the run found)
    folders = [p for p in (tk / "results").glob("*/pts/*") if p.is_dir()]
    assert sorted(p.name for p in folders if (p / "verdict").exists()) == [
        "iops", "latency", "throughput-1024k", "throughput-128k", "wsat"]
    for folder in folders:
        conditions = (folder / "conditions.tsv").read_text()
        assert "purge_method\tformat\n" in conditions, folder
        assert json.loads((folder / "purge.json").read_text())["method"] == "format", folder
        # PTS-E: the drive's write cache disabled for the run, and set back after it
        assert ("write_cache\tdisabled for the run (NVMe Feature 06h, not saved; the drive had it "
                "enabled, set back when the run ends)\n") in conditions, conditions
    assert json.loads(cache_after) == {"present": True, "enabled": True}
    for sid in SECTIONS:
        # the record: the cache set for the run (PTS-E: off) and as the run found it
        record = json.loads((tk / "results" / sid / "pts" / "write_cache.json").read_text())
        assert record == {"present": True, "enabled": False, "was": True}, (sid, record)


def test_every_page_is_drawn_and_says_it_is_not_conformant(guest):
    tk, _, _, drawn, _ = guest
    for sid, (_, number) in SECTIONS.items():
        assert drawn[sid].returncode == 0, drawn[sid].stderr[-2000:]
        page = (tk / "out" / f"section_{number}_{sid}.md").read_text()
        assert "PTS-like, NOT conformant" in page and "rounds of 2 s" in page, page[:600]
        # a purge by Format NVM is PTS's own: only the rounds' length makes it not conformant
        assert "| Purge |" in page and "not PTS's Format NVM" not in page
    assert (tk / "figs" / "mix_rw_pts_iops_matrix.png").stat().st_size > 10_000
    assert (tk / "figs" / "wss_burst_pts_wsat.png").stat().st_size > 10_000
    for test in ("qd1_pts_latency", "bs_sweep_pts_throughput-128k", "mix_rw_pts_iops"):
        for fig in ("convergence", "window"):
            assert (tk / "figs" / f"{test}_{fig}.png").stat().st_size > 10_000
    latency = (tk / "out" / "section_2_qd1.md").read_text()
    assert "p99.999" in latency and "MAX" in latency and "0.5 KiB 100/0" in latency
