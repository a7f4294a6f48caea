"""The two tables every part of the toolkit reads: lib/sections.tsv and lib/options.tsv.

Every script, make target, analysis command and --help must agree with them, and each option
must parse the same way: its flag over its environment variable over its default. These run
scripts only with --help, --dry-run or a bad option (nothing is written).
"""

from __future__ import annotations

import importlib
import re
import shlex
import subprocess

import pytest

from analysis.__main__ import COMMANDS
from analysis.core import registry
from tests.toolkit import REPO, SETTINGS, script_env

SECTIONS = registry.read_sections()
OPTIONS = registry.read_options()
SCRIPT_OF_SCOPE = {"env": "env.bash", "serve": "serve.bash", "report": "report.bash",
                   **{s.id: s.script for s in SECTIONS.values()}}
# The local-only hooks of lib/run.bash: a section that defines one cannot run on a fleet.
LOCAL_HOOKS = ("section_plan", "section_prepare", "section_before_repetition")


def bash(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", *args], cwd=REPO, capture_output=True, text=True,
                          env=script_env(env), timeout=60, check=False)


def make(*args: str) -> str:
    """The Makefile as a user's own `make` reads it (script_env: not the suite's make's)."""
    return subprocess.run(["make", "--no-print-directory", *args], cwd=REPO, capture_output=True,
                          text=True, check=True, timeout=60, env=script_env()).stdout


# --- sections -----------------------------------------------------------------------------------
def test_every_section_script_is_registered_and_names_its_id():
    scripts = sorted(p.name for p in REPO.glob("*_test.bash"))
    assert scripts == sorted(s.script for s in SECTIONS.values())
    numbers = [s.number for s in SECTIONS.values()]
    assert numbers == sorted(numbers) and len(set(numbers)) == len(numbers)
    for s in SECTIONS.values():
        text = (REPO / s.script).read_text()
        assert re.search(rf"^SECTION={s.id}\b", text, re.MULTILINE), s.script
        assert "SECTION_NUMBER=" not in text and "SECTION_TITLE=" not in text, s.script


@pytest.mark.parametrize("section", SECTIONS.values(), ids=lambda s: s.id)
def test_fleet_column_matches_the_scripts_hooks(section):
    text = (REPO / section.script).read_text()
    local = [h for h in LOCAL_HOOKS if re.search(rf"^{h}\(\)", text, re.MULTILINE)]
    assert section.fleet == (not local), f"{section.script} defines {local}"


@pytest.mark.parametrize("section", SECTIONS.values(), ids=lambda s: s.id)
def test_the_plan_is_headed_by_the_registrys_number_and_title(section):
    result = bash(section.script, "--dry-run", "--profile", "quick")
    assert result.returncode == 0, result.stderr
    assert f"\n{section.heading}: plan\n" in f"\n{result.stderr}"


def test_every_section_is_an_analysis_command_with_its_own_module():
    modules = {p.stem for p in (REPO / "analysis" / "sections").glob("*.py")
               if re.search(r"^SECTION = ", p.read_text(), re.MULTILINE)}
    assert modules == set(SECTIONS)
    for sid in SECTIONS:
        assert COMMANDS[sid][0] == f"analysis.sections.{sid}"
        module = importlib.import_module(COMMANDS[sid][0])
        assert module.SECTION == sid and callable(module.main)


def test_make_targets_run_the_registrys_scripts():
    for s in SECTIONS.values():
        assert make("-n", s.id).strip() == f"bash {s.script}"
        assert make("-n", s.alias).strip() == f"bash {s.script}"
    help_text = make("help")
    for s in SECTIONS.values():
        assert f"make {s.alias:<9} {s.heading}" in help_text
    # every target that runs Python installs first (a no-op once done: lib/packages.tsv, .venv)
    assert make("-n", "analysis").strip().splitlines() == [
        "bash env.bash --install-only", ".venv/bin/python -m analysis all"]
    # with a lab's targets, judged again first; the redraw runs whatever the verdict
    judged = make("-n", "analysis", "TARGETS=t.yaml")
    assert '-m analysis targets "${RESULTS:-results}" "t.yaml"' in judged
    assert judged.index("-m analysis targets") < judged.index("-m analysis all")


def test_report_runs_the_registrys_sections_in_order():
    usage = bash("report.bash", "--help").stdout
    assert " ".join(s.script for s in SECTIONS.values()) in usage
    local = [s.id for s in SECTIONS.values() if not s.fleet]
    assert f"except {' '.join(local)}, which is skipped" in usage
    result = bash("report.bash", "--sections", "nosuch")
    assert result.returncode == 2
    assert f"choose from {' '.join(SECTIONS)}" in result.stderr


def test_a_malformed_table_names_its_line(tmp_path):
    bad = tmp_path / "sections.tsv"
    bad.write_text("# comment\n2\tqd1\tqd1_test.bash\tqd1\tyes\tQD=1 baselines\n")
    with pytest.raises(ValueError, match=r"sections.tsv:2: expected 7 tab-separated fields"):
        registry.read_sections(bad)


# --- options ------------------------------------------------------------------------------------
def test_options_table_is_consistent():
    known = set(registry.SCRIPT_SCOPES) | set(SECTIONS)
    seen = set()
    for o in OPTIONS:
        assert set(o.scopes) <= known, o.flag
        assert re.fullmatch(r"--[a-z0-9-]+", o.flag) and re.fullmatch(r"[A-Z][A-Z0-9_]*", o.variable)
        assert bool(o.arg) != (o.check in ("switch", "bool")), o.flag
        assert re.fullmatch(r"int:\d+|size|region|block|cpulist|choice:[\w,-]+|list|switch|bool|", o.check), o.check
        for scope in o.scopes:
            assert (scope, o.flag) not in seen, f"{o.flag} twice in scope {scope}"
            seen.add((scope, o.flag))
    assert set(SETTINGS) >= {o.variable for o in OPTIONS}


def test_docs_options_page_is_current():
    assert (REPO / "docs" / "options.md").read_text() == registry.options_markdown(), (
        "docs/options.md is stale: run 'make docs'")


def scopes_of(script: str) -> list[str]:
    if script in ("env.bash", *(s.script for s in SECTIONS.values())):
        return ["common", next(k for k, v in SCRIPT_OF_SCOPE.items() if v == script)]
    return [next(k for k, v in SCRIPT_OF_SCOPE.items() if v == script)]


@pytest.mark.parametrize("script", SCRIPT_OF_SCOPE.values())
def test_help_lists_every_option_with_its_variable(script):
    result = bash(script, "--help")
    assert result.returncode == 0, result.stderr
    words = " ".join(result.stdout.split())  # wrapping aside
    shown = [o for o in OPTIONS if set(o.scopes) & set(scopes_of(script))]
    if script in ("report.bash", "env.bash"):  # they take the sections' options; list their own
        shown = [o for o in shown if scopes_of(script)[-1] in o.scopes]
    for o in shown:
        assert f"  {o.flags} " in result.stdout, o.flag
        assert o.variable in words and " ".join(o.help.split()) in words, o.flag


# Two valid values of each kind of option (the flag's, then the environment's).
SAMPLES = {"size": ("2M", "3M"), "region": ("2M", "all"), "block": ("8k", "16k"), "list": ("a,b", "c"),
           "cpulist": ("0-1,3", "0"), "": ("x", "y")}


def samples(o: registry.Option) -> tuple[str, str]:
    if o.check.startswith("int:"):
        low = int(o.check[4:])
        return str(low + 7), str(low + 3)
    if o.check.startswith("choice:"):
        choices = o.check[7:].split(",")
        return choices[-1], choices[0]
    return SAMPLES[o.check]


def parse(scopes: str, variable: str, *cases: tuple[list[str], dict]) -> list[str]:
    """The value parse_options (lib/registry.bash) gives VARIABLE for each case (its arguments,
    its environment), each in a subshell of one bare shell."""
    lines = ['source lib/common.bash; usage() { :; }']
    for args, env in cases:
        exports = " ".join(f"export {k}={shlex.quote(v)};" for k, v in env.items())
        lines.append(f'({exports} parse_options {shlex.quote(scopes)} '
                     f'{" ".join(map(shlex.quote, args))}; printf "%s\\n" "${variable}")')
    result = bash("-c", "\n".join(lines), env={variable: ""})
    assert result.returncode == 0, result.stderr
    return result.stdout.split("\n")[:-1]


@pytest.mark.parametrize("option", OPTIONS, ids=lambda o: f"{o.scopes[0]}{o.flag}")
def test_flag_over_environment_over_default(option):
    scopes = " ".join(option.scopes[:1] + (("common",) if option.scopes[0] in SECTIONS else ()))
    var = option.variable
    if option.check == "switch":
        cases = {"1": ([option.flag], {var: "0"}), "1 ": ([], {var: "1"}),
                 "": ([], {var: "0"}), " ": ([], {})}
    elif option.check == "bool":
        cases = {"0": ([f"--no-{option.flag[2:]}"], {var: "1"}), "1": ([option.flag], {var: "0"}),
                 "0 ": ([], {var: "0"}), option.default + " ": ([], {})}
    else:
        flag_value, env_value = samples(option)
        cases = {flag_value: ([option.flag, flag_value], {var: env_value}),
                 flag_value + " ": ([f"{option.flag}={flag_value}"], {}),
                 env_value: ([], {var: env_value}),
                 option.profile_defaults.get("standard", option.default) + " ": ([], {})}
        if option.profile_defaults:
            cases[option.profile_defaults["quick"] + "  "] = (["--profile", "quick"], {})
    # The keys are the values expected (a trailing space only keeps them apart).
    assert parse(scopes, var, *cases.values()) == [k.rstrip() for k in cases]


def test_a_choice_with_off_also_takes_no_flag():
    """--peak MODE is a choice with off, so --no-peak (what it was as a bool) still turns it off."""
    (peak,) = [o for o in OPTIONS if o.flag == "--peak"]
    assert peak.flags == "--peak MODE, --no-peak"
    assert parse("qd_sweep common", "PEAK", (["--no-peak"], {"PEAK": "grid"}),
                 (["--peak", "grid"], {}), ([], {})) == ["off", "grid", "search"]


@pytest.mark.parametrize("option", [o for o in OPTIONS if o.check and o.check not in
                                    ("list", "switch")], ids=lambda o: f"{o.scopes[0]}{o.flag}")
def test_a_bad_value_exits_2_naming_the_variable(option):
    scopes = " ".join(option.scopes[:1] + (("common",) if option.scopes[0] in SECTIONS else ()))
    code = f'source lib/common.bash; usage() {{ :; }}; parse_options "{scopes}" "$@"'
    bad = "--no-such" if option.check == "bool" else "1000" if option.check == "block" else "x1"
    args = [] if option.check == "bool" else [option.flag, bad]
    result = bash("-c", code, "parse", *args, env={option.variable: bad})
    assert result.returncode == 2
    assert f": {option.variable}" in result.stderr


def test_sizes_in_messages_are_rounded_to_the_nearest_tenth():
    """human_bytes (lib/common.bash), which the plans and messages print sizes with: a 1,535 MiB
    partition is 1.5 GiB (it printed 1.4, and twice it 2.9 GiB, cutting the tenths off)."""
    sizes = [1535 << 20, 3070 << 20, 1 << 30, 8 << 30, 2_000_398_934_016, 96 << 20, 512 << 10]
    result = bash("-c", 'source lib/common.bash; for b in "$@"; do human_bytes "$b"; echo; done',
                  "_", *map(str, sizes))
    assert result.returncode == 0, result.stderr
    assert result.stdout.split("\n")[:-1] == ["1.5 GiB", "3.0 GiB", "1.0 GiB", "8.0 GiB",
                                              "1.8 TiB", "96 MiB", "512 KiB"]
