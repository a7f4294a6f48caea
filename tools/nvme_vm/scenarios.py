"""Several named commands in one boot: a VM's boot costs 10-15 s under TCG, so tests, make and
bench run what they need in as few boots as they can and judge the results on the host.

Each scenario runs in turn in the guest with its own folder, `$SCENARIO_DIR` (under the VM's
shared folder): its stdout, stderr, exit code and seconds are written there, and anything else the
command leaves there comes back too. One scenario failing, or running past its time limit, does
not stop the next.

    scenarios = [Scenario("identity", "nvme id-ctrl /dev/nvme0 -o json > $SCENARIO_DIR/id.json"),
                 Scenario("format", "nvme format /dev/nvme0n1 --ses=1 --force", timeout=60)]
    with nvme_vm(spec) as vm:
        results = run_scenarios(vm, scenarios)
    results["format"].returncode, results["identity"].files["id.json"]
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path

from tools.nvme_vm.vm import Vm

_NAME = re.compile(r"[a-z0-9][a-z0-9_-]*")


@dataclass(frozen=True)
class Scenario:
    """A bash command for the guest, run in `cwd` (default: its own folder) with `env` set and
    at most `timeout` seconds (then TERM, and KILL 10 s later; exit code 124 or 137)."""

    name: str
    command: str
    timeout: int = 300
    cwd: Path | None = None
    env: dict[str, str] = field(default_factory=dict)

    def __post_init__(self):
        if not _NAME.fullmatch(self.name):
            raise ValueError(f"scenario name {self.name!r}: lower-case letters, digits, - and _")


@dataclass
class ScenarioResult:
    name: str
    returncode: int | None  # None: the guest never got to it (an earlier one hung the VM)
    stdout: str
    stderr: str
    seconds: float | None
    folder: Path

    @property
    def files(self) -> dict[str, Path]:
        """What the command left in its folder (the runner's own files aside), by relative path."""
        own = {"stdout", "stderr", "rc", "seconds", "command.sh"}
        return {str(p.relative_to(self.folder)): p for p in sorted(self.folder.rglob("*"))
                if p.is_file() and str(p.relative_to(self.folder)) not in own}


def _runner(scenarios: list[Scenario], base: Path) -> str:
    lines = ["# Written by tools/nvme_vm/scenarios.py: each scenario in turn, whatever the last did."]
    for sc in scenarios:
        folder = base / sc.name
        folder.mkdir(parents=True)
        (folder / "command.sh").write_text(sc.command + "\n")
        d = shlex.quote(str(folder))
        exports = "".join(f"export {k}={shlex.quote(v)}; " for k, v in sc.env.items())
        cwd = shlex.quote(str(sc.cwd or folder))
        lines.append(
            f"( export SCENARIO_DIR={d}; {exports}cd {cwd} && start=$EPOCHREALTIME && "
            f"{{ timeout -k 10 {sc.timeout} bash {d}/command.sh >{d}/stdout 2>{d}/stderr; "
            f"echo $? >{d}/rc; awk -v a=\"$start\" -v b=\"$EPOCHREALTIME\" "
            f"'BEGIN {{ print b - a }}' >{d}/seconds; }} )")
    lines.append("sync")
    return "\n".join(lines)


def _read(path: Path) -> str:
    return path.read_text(errors="replace") if path.exists() else ""


def run_scenarios(vm: Vm, scenarios: list[Scenario], *, rwdirs=(), timeout: float | None = None,
                  tag: str = "scenarios") -> dict[str, ScenarioResult]:
    """Run every scenario in one boot of `vm`; results by name, in the order given. `rwdirs`: host
    folders the scenarios write (a toolkit copy). `timeout` bounds the whole boot (default: the
    scenarios' limits added up, plus two minutes for the boot and the driver)."""
    names = [sc.name for sc in scenarios]
    if len(set(names)) != len(names):
        raise ValueError(f"scenario names repeat: {names}")
    base = vm.shared / tag
    if base.exists():
        raise ValueError(f"{base} exists: give each run_scenarios call of a VM its own tag")
    script = _runner(scenarios, base)
    total = timeout if timeout is not None else sum(sc.timeout + 15 for sc in scenarios) + 120
    vm.run(script, rwdirs=rwdirs, timeout=total)
    out = {}
    for sc in scenarios:
        folder = base / sc.name
        rc, seconds = _read(folder / "rc").strip(), _read(folder / "seconds").strip()
        out[sc.name] = ScenarioResult(sc.name, int(rc) if rc else None, _read(folder / "stdout"),
                                      _read(folder / "stderr"),
                                      float(seconds) if seconds else None, folder)
    return out
