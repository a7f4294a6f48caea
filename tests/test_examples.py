"""The example CI pipelines under examples/ stay honest, without running fio or make's recipes.

The files are read with PyYAML, every scalar kept as the text it is written as, and must mean
the same to a YAML 1.1 parser (GitLab's) and a YAML 1.2 one (GitHub's). Then: every shell block
passes `bash -n` and shellcheck; every `make` call names a target of the Makefile (checked with
`make -n`) and variables the toolkit reads; the artefacts include out/, tables/, figs/ and
results/; and the paths the pipelines read are the ones the toolkit writes.
"""

from __future__ import annotations

import ast
import re
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from analysis.core.registry import read_options, read_sections
from tests.toolkit import script_env

REPO = Path(__file__).resolve().parents[1]
EXAMPLES = REPO / "examples"
GHA = EXAMPLES / "github-actions" / "ssd-report.yml"
GITLAB = EXAMPLES / "gitlab-ci" / ".gitlab-ci.yml"
ARTEFACTS = {"out", "tables", "figs", "results"}
# The variables the examples may give make: options of the scripts (lib/options.tsv), which
# make passes on in the environment, or the Makefile's own.
MAKE_VARIABLES = {"RESULTS", "TARGET", "DESTROY", "PROFILE", "A", "B", "FAIL_IF_WORSE", "HISTORY",
                  "TARGETS"}
OPTIONS = read_options()


# ---------------------------------------------------------------- YAML


def load_yaml(path: Path):
    """The file's structure, every scalar the text it is written as (BaseLoader resolves no
    YAML 1.1 booleans or numbers: GitHub's `on:` stays a key, `false` the text GitHub reads)."""
    return yaml.load(path.read_text(), Loader=yaml.BaseLoader)


# Plain values YAML 1.1 parsers (GitLab's) read as booleans and YAML 1.2 ones (GitHub's) as text.
YAML11_BOOLS = {"yes", "no", "on", "off", "y", "n"}


def value_nodes(node: yaml.Node):
    """Every node of the tree below ``node`` that is not a mapping's key."""
    yield node
    if isinstance(node, yaml.MappingNode):
        for _, value in node.value:
            yield from value_nodes(value)
    elif isinstance(node, yaml.SequenceNode):
        for item in node.value:
            yield from value_nodes(item)


def ambiguities(text: str) -> list[str]:
    """What would make YAML parsers read the text differently: a key twice in a mapping (most
    keep the last silently), a plain value that YAML 1.1 reads as a boolean (quoted, it is the
    same text to GitHub and to GitLab)."""
    found = []
    for node in value_nodes(yaml.compose(text, Loader=yaml.BaseLoader)):
        line = node.start_mark.line + 1
        if isinstance(node, yaml.MappingNode):
            keys = [key.value for key, _ in node.value]
            found += [f"line {line}: key {k!r} twice" for k in sorted(set(keys))
                      if keys.count(k) > 1]
        elif isinstance(node, yaml.ScalarNode) and node.style is None \
                and node.value.lower() in YAML11_BOOLS:
            found.append(f"line {line}: {node.value!r} is a boolean to YAML 1.1; quote it")
    return found


def test_ambiguities_are_found():
    assert ambiguities("on:\n  push: 'no'\nlist: [a, b]\n") == []
    assert ambiguities("a: 1\nb:\n  c: 2\n  c: 3\n") == ["line 3: key 'c' twice"]
    assert ambiguities("a:\n  - off\n") == ["line 2: 'off' is a boolean to YAML 1.1; quote it"]


@pytest.mark.parametrize("path", [GHA, GITLAB], ids=lambda p: p.name)
def test_examples_mean_the_same_to_every_yaml_parser(path):
    assert ambiguities(path.read_text()) == []


# ---------------------------------------------------------------- what the examples hold


@pytest.fixture(scope="module")
def gha() -> dict:
    return load_yaml(GHA)


@pytest.fixture(scope="module")
def gitlab() -> dict:
    return load_yaml(GITLAB)


def gha_steps(doc: dict) -> list[dict]:
    return [step for job in doc["jobs"].values() for step in job["steps"]]


def gitlab_jobs(doc: dict) -> dict[str, dict]:
    return {name: job for name, job in doc.items() if isinstance(job, dict) and "script" in job}


def _lines(value) -> str:
    return "\n".join(value) if isinstance(value, list) else value


def shell_blocks() -> list[tuple[str, str]]:
    """(label, script) of every shell block. A GitHub step runs in its own shell; a GitLab job's
    before_script and script run in one shell, its after_script in another."""
    blocks = [(f"{GHA.name}: {step.get('name', step['run'][:30])}", step["run"])
              for step in gha_steps(load_yaml(GHA)) if "run" in step]
    for name, job in gitlab_jobs(load_yaml(GITLAB)).items():
        blocks.append((f"{GITLAB.name}: {name} script",
                       _lines(job.get("before_script", [])) + "\n" + _lines(job["script"])))
        if "after_script" in job:
            blocks.append((f"{GITLAB.name}: {name} after_script", _lines(job["after_script"])))
    return blocks


try:
    BLOCKS = shell_blocks()
except yaml.YAMLError:  # reported by test_examples_parse, not as a collection error
    BLOCKS = []


@pytest.mark.parametrize("path", [GHA, GITLAB], ids=lambda p: p.name)
def test_examples_parse(path):
    assert isinstance(load_yaml(path), dict)


def as_shell(script: str) -> str:
    """GitHub's ${{ ... }} expressions become a plain word for bash."""
    return re.sub(r"\$\{\{.*?\}\}", "GHA_EXPR", script)


def make_calls(script: str) -> list[list[str]]:
    """The words after each `make` in a shell block, up to the end of its command."""
    calls = []
    for line in script.replace("\\\n", " ").splitlines():
        if not re.search(r"\bmake\b", line):
            continue
        lex = shlex.shlex(line, posix=True, punctuation_chars=True)
        lex.whitespace_split = True
        words = list(lex)
        for i, word in enumerate(words):
            if word == "make":
                args = []
                for arg in words[i + 1:]:
                    if set(arg) <= set("();<>|&"):
                        break
                    args.append(arg)
                calls.append(args)
    return calls


def split_call(args: list[str]) -> tuple[str, dict[str, str]]:
    targets = [a for a in args if "=" not in a and not a.startswith("-")]
    assert len(targets) == 1, f"one make target per call: {args}"
    return targets[0], dict(a.split("=", 1) for a in args if "=" in a)


def calls_of(path: Path) -> list[tuple[str, dict[str, str]]]:
    return [split_call(args) for label, script in BLOCKS if label.startswith(path.name)
            for args in make_calls(script)]


# ---------------------------------------------------------------- the shell blocks


def test_blocks_found():
    assert any(label.startswith(GHA.name) for label, _ in BLOCKS)
    assert any(label.startswith(GITLAB.name) for label, _ in BLOCKS)


@pytest.mark.parametrize("label,script", BLOCKS, ids=[label for label, _ in BLOCKS])
def test_shell_block_parses(label, script):
    r = subprocess.run(["bash", "-n"], input=as_shell(script), capture_output=True, text=True,
                       check=False)
    assert r.returncode == 0, f"{label}:\n{r.stderr}"


@pytest.mark.parametrize("label,script", BLOCKS, ids=[label for label, _ in BLOCKS])
def test_shell_block_passes_shellcheck(label, script):
    assert shutil.which("shellcheck"), "shellcheck is not installed (bash env.bash --install-only)"
    r = subprocess.run(["shellcheck", "-s", "bash", "-"], input=as_shell(script),
                       capture_output=True, text=True, check=False)
    assert r.returncode == 0, f"{label}:\n{r.stdout}{r.stderr}"


def test_github_run_blocks_take_expressions_through_env_only(gha):
    # ${{ inputs.x }} inside run: is pasted into the script before bash reads it (injection).
    for step in gha_steps(gha):
        assert "${{" not in step.get("run", ""), f"{step.get('name')}: pass it through env:"


# ---------------------------------------------------------------- make targets and variables


@pytest.mark.parametrize("path", [GHA, GITLAB], ids=lambda p: p.name)
def test_make_calls_name_targets_of_the_makefile(path):
    calls = calls_of(path)
    assert {target for target, _ in calls} == {"report", "compare", "history"}
    for target, variables in calls:
        dummy = [f"{name}=x" for name in variables]
        r = subprocess.run(["make", "-n", "-C", str(REPO), target, *dummy],
                           capture_output=True, text=True, check=False, env=script_env())
        assert r.returncode == 0 and r.stdout.strip(), f"make -n {target}: {r.stderr}"


@pytest.mark.parametrize("path", [GHA, GITLAB], ids=lambda p: p.name)
def test_make_variables_are_read_by_the_toolkit(path):
    makefile = (REPO / "Makefile").read_text()
    # make report passes its environment to report.bash, which takes the common options and
    # its own (lib/options.tsv)
    common = {o.variable for o in OPTIONS if {"common", "report"} & set(o.scopes)}
    for target, variables in calls_of(path):
        assert set(variables) <= MAKE_VARIABLES, f"make {target}: {set(variables)}"
        for name in variables:
            assert name in common or f"$({name})" in makefile, (
                f"{name} is neither an option of make report (lib/options.tsv) nor read by the Makefile")


@pytest.mark.parametrize("path", [GHA, GITLAB], ids=lambda p: p.name)
def test_report_and_compare_are_given_what_they_need(path):
    calls = dict(calls_of(path))
    report, compare = calls["report"], calls["compare"]
    assert set(report) == {"RESULTS", "TARGET", "DESTROY", "PROFILE", "HISTORY", "TARGETS"}
    assert report["TARGETS"] == "$TARGETS_FILE"  # empty: no targets judged (lib/common.bash)
    # the run is recorded into the history the trends are then drawn from
    assert calls["history"] == {"HISTORY": report["HISTORY"]}
    # DESTROY must name the target itself, or the toolkit refuses (exit 3).
    assert report["DESTROY"] == report["TARGET"]
    assert report["RESULTS"] == "results/$RUN"
    # compare takes the spread between runs of the drive from the same history
    assert set(compare) == {"A", "B", "FAIL_IF_WORSE", "HISTORY"}
    assert compare["HISTORY"] == report["HISTORY"]
    assert compare["B"] == report["RESULTS"]


def flags_of(script: str) -> set[str]:
    """The flags a script takes, from lib/options.tsv."""
    scopes = {"common", script.removesuffix(".bash")}
    scopes |= {s.id for s in read_sections().values() if s.script == script}
    if script == "serve.bash":
        scopes -= {"common"}
    return {"--help"} | {o.flag for o in OPTIONS if scopes & set(o.scopes)}


def test_scripts_run_with_options_they_take():
    for label, script in BLOCKS:
        for name, flags in re.findall(r"\bbash\s+(\w+\.bash)((?:\s+--[\w-]+)*)", script):
            for flag in flags.split():
                assert flag in flags_of(name), f"{label}: {name} has no {flag}"


def test_profiles_offered_are_the_toolkits(gha, gitlab):
    check = next(o.check for o in OPTIONS if o.variable == "PROFILE")
    # tiny is the test suite's smallest run, not a measurement a lab's pipeline would offer
    profiles = set(check.removeprefix("choice:").split(",")) - {"tiny", "pts"}
    assert set(gha["on"]["workflow_dispatch"]["inputs"]["profile"]["options"]) == profiles
    assert set(gitlab["variables"]["BENCH_PROFILE"]["options"]) == profiles


# ---------------------------------------------------------------- runner, artefacts, gating


def test_github_workflow_shape(gha):
    assert set(gha["on"]) == {"workflow_dispatch", "schedule"}
    inputs = gha["on"]["workflow_dispatch"]["inputs"]
    assert inputs["promote-to-baseline"]["type"] == "boolean"
    assert gha["concurrency"]["group"] and gha["concurrency"]["cancel-in-progress"] == "false"
    for job in gha["jobs"].values():
        assert "self-hosted" in job["runs-on"] and job["timeout-minutes"]


def test_gitlab_job_shape(gitlab):
    jobs = gitlab_jobs(gitlab)
    assert jobs
    for job in jobs.values():
        assert job["tags"] and job["resource_group"]


def test_edit_me_settings_agree_and_name_the_partition_stably(gha, gitlab):
    for name in ("SSD_PARTITION", "BASELINE_ROOT", "FAIL_IF_WORSE_PCT"):
        assert gha["env"][name] == gitlab["variables"][name], name
    assert gha["env"]["SSD_PARTITION"].startswith("/dev/disk/by-")
    float(gha["env"]["FAIL_IF_WORSE_PCT"])


def test_github_keeps_artefacts_and_fails_only_at_the_end(gha):
    steps = gha_steps(gha)
    report = next(i for i, s in enumerate(steps) if "make report" in s.get("run", ""))
    upload = [i for i, s in enumerate(steps)
              if s.get("uses", "").startswith("actions/upload-artifact@")]
    assert len(upload) == 1 and upload[0] > report
    step = steps[upload[0]]
    assert "always()" in step["if"]
    assert {p.strip().rstrip("/") for p in step["with"]["path"].split()} >= ARTEFACTS
    # the report step itself never fails (its exit code is kept) ...
    assert steps[report].get("continue-on-error") == "true" or re.search(
        r"make report[^\n]*(\\\n[^\n]*)*\|\|", steps[report]["run"])
    # ... and a step after the upload fails the job on it.
    gate = steps[-1]
    assert "steps.report.outputs.rc" in str(gate.get("env")) and "exit" in gate["run"]
    # giving the files back to the runner user runs after a failure too
    chown = [s for s in steps[report + 1:] if "chown" in s.get("run", "")]
    assert chown and all("always()" in s["if"] for s in chown)


def test_gitlab_keeps_artefacts(gitlab):
    for name, job in gitlab_jobs(gitlab).items():
        artifacts = job["artifacts"]
        assert artifacts["when"] == "always", name
        assert {p.rstrip("/") for p in artifacts["paths"]} >= ARTEFACTS, name


# ---------------------------------------------------------------- paths the toolkit writes


def constant(module: str, name: str) -> str:
    """A module's string constant, read from its source: importing analysis.report.build or
    analysis.report.compare pulls in the whole package, which these checks do not need."""
    tree = ast.parse((REPO / module).read_text())
    for node in tree.body:
        if (isinstance(node, ast.Assign) and len(node.targets) == 1
                and getattr(node.targets[0], "id", None) == name):
            return ast.literal_eval(node.value)
    raise AssertionError(f"{module} has no {name}")


def test_paths_read_are_the_toolkits():
    from analysis.core.workspace import Workspace

    text = GHA.read_text() + GITLAB.read_text()
    ws = Workspace.of(REPO, REPO / "results" / "run-1")
    assert ws.show(constant("analysis/report/build.py", "REPORT_MD")) == "out/run-1/report.md"
    assert "out/$RUN/report.md" in GHA.read_text()
    assert f"results/$RUN/{constant('analysis/run/record.py', 'NAME')}" in text
    assert 'python -m analysis record "results/$RUN" outcomes' in text
    assert constant("analysis/report/compare.py", "SNIPPET") == "out/compare.md"
    assert "out/compare.md" in text
    # headings the GitHub summary cuts the report and the comparison at
    assert "## Anomalies and limitations" in (REPO / "analysis/report/build.py").read_text()
    compare_source = (REPO / "analysis/report/compare.py").read_text()
    assert "### All comparisons" in compare_source and "### Findings" in compare_source


def test_readme_documents_both_pipelines():
    text = (EXAMPLES / "README.md").read_text()
    assert "github-actions/ssd-report.yml" in text and "gitlab-ci/.gitlab-ci.yml" in text
    assert "destroy" in text.lower() and "sudoers" in text.lower()


def test_both_pipelines_judge_the_labs_targets_and_publish_junit(gha, gitlab):
    """TARGETS reaches make report when the lab names a file, exit 4 is told apart, and GitLab
    shows out/<run>/junit.xml (analysis/report/targets.py writes it there) on its Tests tab."""
    assert gha["env"]["TARGETS_FILE"] == gitlab["variables"]["TARGETS_FILE"] == ""
    report = next(s["run"] for s in gha_steps(gha) if "make report" in s.get("run", ""))
    assert 'TARGETS="$TARGETS_FILE"' in report and '-eq 4' in report
    job = gitlab_jobs(gitlab)["ssd-report"]
    assert 'TARGETS="$TARGETS_FILE"' in "\n".join(job["script"])
    assert job["artifacts"]["reports"]["junit"] == "out/*/junit.xml"
    assert constant("analysis/report/targets.py", "JUNIT_XML") == "out/junit.xml"
