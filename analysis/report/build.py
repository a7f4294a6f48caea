"""out/report.md and out/report.html: the whole report of one results tree.

In order: the title (device, date); the Targets table, where the run was judged against a lab's
targets (out/targets.md: analysis.report.targets); the conclusion with the headline numbers;
§1 environment; the methodology, from each section's manifest, which states the tables' legend
once (each snippet's own copy is left out here); every section's snippet (a section that did not
run says why); "Anomalies and limitations", from the data (each section's
tables/<section>_facts.json, the manifests, §1's warnings and the report run's outcomes). The
shapes several sections measured (analysis.report.shapes) go to tables/shapes.csv, and the
conclusion quotes their widest spread. Then a one-screen summary on the terminal.

Each section's outcome (exit code or skipped, start time, last error line) is in the tree's record
(<results>/run.json, analysis.run.record), set by report.bash as it runs the sections; without one
a section with no results is "not run".
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from analysis.core import workspace
from analysis.core.stats import MIN_TAIL_IOS
from analysis.core.workspace import Workspace
from analysis.device.env_text import render_env_summary
from analysis.history.command import report_section as history_section
from analysis.render import claims, html
from analysis.render import markdown as md
from analysis.report.hosts import host_trees
from analysis.report.shapes import (
    SHAPES_CSV,
    Shape,
    largest_spread,
    load_frames,
    shapes_frame,
    shared_shapes,
)
from analysis.report.targets import report_section as targets_section
from analysis.rules.cases import UNSTABLE_HALF_WIDTH, read_manifest
from analysis.rules.sweeps import KNEE_GAIN_PCT, KNEE_LATENCY_PCT
from analysis.run import record
from analysis.run.manifest import matrix_entries
from analysis.sections import SECTIONS, snippet_path
from analysis.sections import facts as facts_file
from analysis.sections.common import without_legends
from analysis.sections.facts import HEADLINE_KINDS, Facts

REPORT_MD = "out/report.md"
REPORT_HTML = "out/report.html"
METHOD = (
    "Every number is from fio's JSON (json+, with its latency histogram). Each case runs "
    "after an unmeasured ramp, and is repeated. Tables give the mean ± the "
    "half-width of its 95% confidence interval over the repetitions (t), p99 [its 95% interval] "
    "and max; each section's CSVs (tables/) add p50, p95, p99.9 (`*_nines.csv`: with their "
    "intervals), the spreads and the CPU load. "
    "Percentiles pool the repetitions' histograms; max is the slowest I/O of them all; latency is "
    "total (submission + completion); MB/s = 10^6 bytes/s. [low–high] is an interval (≥ low: too "
    "few I/Os above to bound it); (n) counts I/Os above a percentile. Reads run on a region "
    "prefilled with random data, so the drive returns data, not unmapped zeros. Write regimes "
    "name the state each write case's ramp declared; a case whose repetitions wrote at "
    "separate levels has no mean in its table (one over two states describes neither), but "
    "one per level there.")
# The marks of every table, explained once (analysis.render.claims holds the rules behind them)
MARKS = [
    f"⚠ a mean whose 95% interval is wider than ±{UNSTABLE_HALF_WIDTH * 100:.0f}%: quote it with its ±.",
    f"{claims.THIN} fewer than {MIN_TAIL_IOS} I/Os above a percentile: never quoted.",
    (f"{claims.UNRESOLVED} a difference not shown (Welch's t over the repetitions, "
     "Benjamini–Hochberg adjusted within a finding): \"not resolved\"; repetitions within ±1% "
     "are \"no difference\"."),
    f"{claims.HOST} the host's point, not the drive's, by the rule named: {claims.host_legend()}.",
    "● the smallest block size (§3) or depth (§5) at 90% of the peak.",
    "▲ the peak; still rising: it and ● lie beyond the sweep.",
    (f"◆ the knee: the first step gaining < {KNEE_GAIN_PCT:g}% IOPS while mean latency grows > "
     f"{KNEE_LATENCY_PCT:g}% (or a run's own, stated in §5)."),
    "(search) a point of the peak search, on the sweep's engine and jobs.",
]
EXIT_MEANING = {1: "failed", 2: "refused its input", 3: "refused for safety",
                130: "interrupted"}


@dataclass(frozen=True)
class Status:
    exit: int | None  # None: skipped (not chosen with --sections)
    started: float  # epoch seconds when the report run reached the section
    message: str  # the script's last error line, or why it was skipped
    outside: bool = False  # skipped as the profile has no test here (pts's §5): not a gap


@dataclass
class SectionState:
    section: str
    manifest: dict  # {} when the section never ran into this tree
    snippet: str | None  # the snippet's text, if the analysis wrote one
    snippet_time: float  # its mtime (epoch seconds), 0 without one
    facts: Facts
    status: Status | None  # from the last report run, if any

    @property
    def info(self):
        return SECTIONS[self.section]

    def problem(self) -> str | None:
        """Why the section is missing or incomplete, or None when it ran cleanly or the chosen
        profile has nothing to run in it (absent says why it is not shown)."""
        status = self.status
        if status is not None and status.outside:
            return None
        if status is not None and status.exit != 0:
            text = (f"skipped ({status.message})" if status.exit is None else
                    f"{EXIT_MEANING.get(status.exit, 'failed')} (exit {status.exit})"
                    + (f": {status.message}" if status.message else ""))
            # A snippet older than this run's attempt is an earlier run's: say so.
            if self.snippet is not None and self.snippet_time < status.started:
                text += "; the section shown is from an earlier run into this results tree"
            return text
        if self.snippet is None:
            return ("not run" if not self.manifest else
                    "has results but no snippet; run 'make analysis'")
        return None

    def left_out(self) -> bool:
        """Not run because the run did not choose it (--sections): no failure, and no gap the
        conclusion should call its numbers incomplete for."""
        return self.status is not None and self.status.exit is None and not self.status.outside

    def absent(self) -> str:
        """Why a section without a snippet is not shown: its problem, or its profile's choice."""
        if self.status is not None and self.status.outside:
            return self.status.message
        return self.problem() or "not run"


def read_status(results: Path) -> dict[str, Status]:
    """Each section's outcome in the last report run (the tree's record), if any."""
    return {section: Status(st["exit"], float(st.get("started") or 0), st.get("error") or "",
                            bool(st.get("outside")))
            for section, st in record.load(results)["status"].items()}


def section_manifest(results: Path, section: str) -> dict:
    """The section's manifest; for a fleet run, its first host's, with the hosts as target."""
    if manifest := read_manifest(results / section):
        return manifest
    trees = host_trees(results, section)
    if not trees:
        return {}
    return {**read_manifest(trees[0] / section), "target_kind": "fleet",
            "target": f"{len(trees)} hosts: " + ", ".join(t.name for t in trees)}


def gather(ws: Workspace) -> tuple[list[SectionState], dict[str, Status]]:
    status = read_status(ws.results)
    states = []
    for section in SECTIONS:
        manifest = section_manifest(ws.results, section)
        snippet = ws.path(snippet_path(section))
        facts = ws.path(f"tables/{section}_facts.json")
        found = snippet.is_file()
        states.append(SectionState(
            section, manifest, snippet.read_text().rstrip() if found else None,
            snippet.stat().st_mtime if found else 0.0,
            facts_file.read(facts) if facts.is_file() and snippet.is_file() else Facts(),
            status.get(section)))
    return states, status


# --- the parts ----------------------------------------------------------------------------------
def title(env: dict) -> str:
    target = env.get("target") or {}
    device = target.get("model") or target.get("device") or ""
    if target.get("type") == "file" and target.get("path"):
        # a file: the filesystem's device is not what was measured on its own
        fs = target.get("mounted") or {}
        device = (f"file {target['path']}"
                  + (f" on {fs.get('source') or target.get('device')} ({fs['fstype']})"
                     if fs.get("fstype") else ""))
    # the day the run started (§1's collection), so a report redrawn later keeps its date
    date = (env.get("collected_at") or "")[:10] or datetime.now(UTC).strftime("%Y-%m-%d")
    return f"# SSD performance report{': ' + device if device else ''} ({date})"


# What a reader calls a case that sets its own runtime (no case ids in reader text: issue 42)
OWN_RUNTIME_NAMES = {"burst": "the burst", "recovery": "the recovery probes"}


def own_runtimes(manifest: dict) -> str:
    """The cases that set their own runtime (§6's burst runs --duration), grouped by it:
    'the burst 900 s; the recovery probes 10 s'; empty when none does."""
    own: dict[str, list[str]] = {}
    for case, opts in matrix_entries(manifest).items():
        if "runtime" in opts and opts["runtime"] != str(manifest.get("runtime")):
            name = OWN_RUNTIME_NAMES.get(case.split("-")[0], case)
            own.setdefault(opts["runtime"], [])
            if name not in own[opts["runtime"]]:
                own[opts["runtime"]].append(name)
    return "; ".join(f"{', '.join(cases)} {runtime} s" for runtime, cases in own.items())


def shared_setup(states: list[SectionState]) -> dict[str, str]:
    """The report's setup: each field's value as most sections ran it (the earlier section's on
    a tie); a section whose value differs states its own in its line."""
    # a fleet's sections leave no setup of their own: theirs is read from the first host's
    # manifest, the hosts as its target (section_manifest)
    ran = [s.facts.setup or md.setup_fields(s.manifest, "each host's own drive")
           for s in states if s.facts.setup or s.manifest.get("target_kind") == "fleet"]
    out = {}
    for key in md.SETUP_FIELDS:
        values = [f.get(key, "") for f in ran]
        if values:
            out[key] = max(dict.fromkeys(values), key=values.count)
    return out


def section_setup(s: SectionState, shared: dict[str, str]) -> str:
    """The line that stands for a section's own setup line in the report: what differs from
    the report's setup, or that nothing does."""
    differs = {k: v for k, v in s.facts.setup.items() if v != shared.get(k, "")}
    if not differs:
        return ""  # the methodology's setup: "a section's own line says where it differs"
    # a field the section has not (no pinning) while the report's has, said in words
    gone = {k: "none" for k, v in differs.items() if not v}
    return md.setup_text({**differs, **gone},
                         "**Setup:** as in the methodology above, except ")


def probe_lines(ran: list[SectionState]) -> list[str]:
    """How the engine and io_uring's options were chosen, with the probes' numbers: once for
    the tree (the sections share the choice), per section where they differ."""
    out = []
    for what in ("engine", "io_uring options"):
        notes: dict[str, list[str]] = {}
        for s in ran:
            note = md.probe_notes(s.manifest).get(what)
            if note:
                notes.setdefault(note, []).append(f"§{s.info.number}")
        for note, where in notes.items():
            scope = "" if len(notes) == 1 else f" ({', '.join(where)})"
            if what == "engine" and " (auto: " in note:
                # 'psync at QD=1, libaio deeper (auto: …)': the line above names the engines
                out.append(f"  - chosen{scope} by probes: {note.split(' (auto: ', 1)[1].removesuffix(')')}")
            else:
                out.append(f"  - {'chosen' if what == 'engine' else what}{scope}: {note}")
    return out


def setup_block(states: list[SectionState]) -> list[str]:
    """The setup every section shares, stated once: each field of the setup lines but the span
    and state (drive_state states them above), the cases with their own runtime, and how the
    engine and io_uring's options were chosen (the probes' numbers, once for the tree)."""
    shared = shared_setup(states)
    ran = [s for s in states if s.manifest]
    if not shared or not ran:
        return []
    lines = ["**Setup** (every section's, unless its own line says otherwise):", ""]
    for key, name in md.SETUP_FIELDS.items():
        # the span and the drive's state are stated above the methodology (drive_state)
        if key != "span_state" and shared.get(key):
            lines.append(f"- {name}: {shared[key]}")
        if key == "profile":
            own = [f"§{s.info.number} {text}" for s in ran if (text := own_runtimes(s.manifest))]
            if own:
                lines.append(f"  - cases with their own runtime: {'; '.join(own)}")
        if key == "engine":
            lines += probe_lines(ran)
    return lines + [""]


PTS_METHOD = (
    "Under --profile pts each section runs SNIA PTS 2.0's tests (the section's page names its "
    "tests, their conditions and whether they conform): each test is purged and "
    "preconditioned, then runs in rounds until its tracking variables hold steady over 5 "
    "rounds together (at most --max-rounds). A round, not a repetition, is the unit: each "
    "value is the average over the steady window's rounds ± the half-width of its 95% "
    "confidence interval over those rounds (t); where no window was steady, over the last 5 "
    "rounds, and the page says so. Percentiles pool the window's I/Os from fio's histogram "
    "bins; latency is total (submission + completion); MB/s = 10^6 bytes/s.")


def methodology(states: list[SectionState]) -> list[str]:
    ran = [s for s in states if s.manifest]
    if not ran:
        return []
    pts = [s for s in ran if s.manifest.get("profile") == "pts"]
    method = ([PTS_METHOD] if len(pts) == len(ran) else
              [METHOD] if not pts else
              [METHOD, f"{', '.join(s.info.heading for s in pts)}: {PTS_METHOD}"])
    return ["## Methodology", "", *[p for m in method for p in (m, "")],
            "**Marks** in the tables:", "", *[f"- {m}" for m in MARKS], "", *setup_block(states)]


def drive_state(states: list[SectionState]) -> list[str]:
    """What the report describes: which span of the target, and what the drive went through
    before each section (its setup line's state, analysis.sections.state_part); first, a
    warning where a section measured before its steady state was reached."""
    ran = [s for s in states if s.manifest]
    if not ran:
        return []
    lines = []
    unsteady = [s.info.heading for s in ran
                if any(a.kind == "steady_state" for a in s.facts.anomalies)]
    if unsteady:
        lines += [(f"**Steady state NOT reached** before {', '.join(unsteady)}: those numbers "
                  "describe a drive still changing (see Anomalies and limitations)."), ""]
    spans = sorted({md.span_text(s.manifest) for s in ran})
    words = {s.facts.state or "state not recorded" for s in ran}
    if len(words) == 1:
        lines.append(f"**Span and state.** The numbers describe {'; '.join(spans)}, "
                     f"{words.pop()}.")
    else:
        lines.append(f"**Span and state.** The numbers describe {'; '.join(spans)}. Before "
                     "each section the drive went through:")
        lines += [f"- {s.info.heading}: {s.facts.state or 'state not recorded'}" for s in ran]
    if len(spans) > 1:
        lines.append("- The sections differ in span: compare them with care.")
    return lines + [""]


def anomalies(states: list[SectionState], env: dict, env_status: Status | None) -> list[str]:
    """One short table: per section what its data flagged (the section's own findings say
    which points), then what limits the whole report. (where, what) rows."""
    out: list[tuple[str, str]] = []
    if env_status is not None and env_status.exit:
        out.append(("§1", f"env.bash failed (exit {env_status.exit})"
                          + (f": {env_status.message}" if env_status.message else "")
                          + "; the environment above may be from an earlier run or missing"))
    for s in states:
        where = f"§{s.info.number}"
        problem = s.problem()
        if problem:
            out.append((where, problem))
        out += [(where, a.text.rstrip(".")) for a in s.facts.anomalies]
    ran = [s for s in states if s.manifest]
    files = sorted({s.manifest.get("target") for s in ran if s.manifest.get("target_kind") == "file"})
    if files:
        out.append(("file target", (f"{', '.join(f'`{f}`' for f in files)}: the numbers include "
                    "the filesystem (allocation, metadata, journal) and whatever the storage "
                    "under it does; they describe that stack, not a drive. Give a block device "
                    "(--target /dev/...) to measure a drive")))
    for key, what in (("target", "targets"), ("profile", "profiles")):
        groups: dict[str, list[str]] = {}
        for s in ran:
            groups.setdefault(str(s.manifest.get(key)), []).append(f"§{s.info.number}")
        if len(groups) > 1:
            out.append((f"mixed {what}", f"the sections ran with different {what} ("
                        + "; ".join(f"{v}: {', '.join(n)}" for v, n in groups.items())
                        + "): numbers from different sections do not describe the same setup"))
    buffered = [s.info.heading for s in ran if str(s.manifest.get("direct", "1")) != "1"]
    if buffered:
        out.append(("buffered I/O", (f"in {', '.join(buffered)}: O_DIRECT was refused, so reads "
                    "may come from the page cache and writes land there first; these numbers "
                    "overstate the drive")))
    out += [("§1", w) for w in env.get("warnings", [])]
    if not out:
        return ["## Anomalies and limitations", "", "None found in the data.", ""]
    # one row per place: a section's anomalies side by side, as its findings detail them
    rows: dict[str, list[str]] = {}
    for where, what in out:
        rows.setdefault(where, []).append(what)
    return ["## Anomalies and limitations", "",
            md.table(["where", "what limits the numbers"],
                     [[where, "; ".join(whats)] for where, whats in rows.items()], ["l", "l"]),
            ""]


def headlines(states: list[SectionState]) -> dict[str, list[tuple[str, str]]]:
    """kind -> [(what it was measured on, with the section), the number as text]."""
    out: dict[str, list[tuple[str, str]]] = {kind: [] for kind in HEADLINE_KINDS}
    for s in states:
        for h in s.facts.headlines:
            out[h.kind].append((f"{h.label} (§{s.info.number})", h.text))
    return out


def conclusion(states: list[SectionState], between: str = "") -> list[str]:
    """The headlines' table: each kind the run's profiles measure, "not measured" where it did
    not (a PTS run's own kind only where a section ran --profile pts; a PTS-only run's kinds
    only where its tests gave them)."""
    ran = [s for s in states if s.manifest]
    pts = [s for s in ran if s.manifest.get("profile") == "pts"]
    rows = []
    for kind, found in headlines(states).items():
        if not found and (kind == "pts" or (pts and len(pts) == len(ran))):
            continue
        if not found:
            rows.append([HEADLINE_KINDS[kind], "–", "not measured"])
        rows += [[HEADLINE_KINDS[kind], label, text] for label, text in found]
    # a section the run left out is not one that failed: README's first command runs §2 alone
    problems = [s.info.heading for s in states if s.problem() and not s.left_out()]
    left_out = [s for s in states if s.problem() and s.left_out()]
    close = ([] if not problems else
             [(f"Incomplete: {', '.join(problems)} did not run cleanly (see Anomalies and "
              "limitations); the numbers above are from the sections that did."), ""])
    if left_out:
        why = "; ".join(dict.fromkeys(s.status.message for s in left_out))
        close += [f"Not in this run: {', '.join(s.info.heading for s in left_out)} ({why}).", ""]
    # a headline named on its first row only
    return ["## Conclusion", "", md.table(["headline", "measured on", "result"], rows,
                                          ["l", "l", "l"], grouped=1), "",
            *close, *([between, ""] if between else [])]


def environment_text(ws: Workspace, env: dict) -> str:
    """§1 in a few lines, drawn again from the tree's env.json when there is one (the raw results
    are the source: a report redrawn elsewhere keeps its §1), else out/env.txt whole. Its
    warnings are the Anomalies' (stated once)."""
    if env:
        return render_env_summary(env)
    env_txt = ws.path("out/env.txt")
    return env_txt.read_text().rstrip() if env_txt.is_file() else ""


def assemble(ws: Workspace) -> tuple[str, list[SectionState], list[Shape]]:
    states, status = gather(ws)
    env_path = ws.results / "env.json"
    env = json.loads(env_path.read_text()) if env_path.is_file() else {}
    # A lab's targets first: what its CI server asks of this run (analysis.report.targets).
    shapes = shared_shapes(load_frames(ws.results))
    # what most readers want first: the targets' verdicts, then the headline numbers
    parts = [title(env), ""] + targets_section(ws) + conclusion(states, largest_spread(shapes))
    env_text = environment_text(ws, env)
    if env_text:
        parts += ["## §1 Environment", "", "```", env_text, "```", ""]
    parts += drive_state(states)
    parts += methodology(states)
    shared = shared_setup(states)
    for s in states:
        if s.snippet is not None:
            own = s.facts.setup_line
            text = s.snippet.replace(own, section_setup(s, shared), 1) if own else s.snippet
            # what the Anomalies table says again is left out here (facts.repeated)
            text = "\n".join(line for line in text.split("\n") if line not in s.facts.repeated)
            parts += [without_legends(text), ""]  # the methodology states them once
        else:
            parts += [f"## {s.info.heading}", "", f"Not in this report: {s.absent()}.", ""]
    parts += history_section(ws)
    parts += anomalies(states, env, status.get("env"))
    return "\n".join(parts), states, shapes


# --- the terminal summary -----------------------------------------------------------------------
def summary(ws: Workspace, states: list[SectionState], missing_figures: list[str]) -> str:
    lines = [f"report: {ws.show(REPORT_MD)} and {ws.show(REPORT_HTML)}"]
    if missing_figures:
        lines.append(f"  {len(missing_figures)} figure(s) missing from the HTML: "
                     + ", ".join(missing_figures))
    lines.append("sections: " + " · ".join(
        f"§{s.info.number} " + (s.problem().split(":")[0] if s.problem() else
                                "not in the profile" if s.status and s.status.outside else "ok")
        for s in states))
    for kind, found in headlines(states).items():
        for label, text in found[:2]:
            lines.append(f"  {HEADLINE_KINDS[kind]:<36.36} {label}: {text}")
    count = sum(len(s.facts.anomalies) + bool(s.problem()) for s in states)
    lines.append(f"anomalies and limitations: {count} from the sections, listed in the report "
                 "with the target's and the environment's")
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m analysis report", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    workspace.add_arguments(parser)
    ws = Workspace.from_args(parser.parse_args(argv))
    text, states, shapes = assemble(ws)
    env_txt = ws.path("out/env.txt")
    if not env_txt.is_file() and not (ws.results / "env.json").is_file() \
            and all(s.snippet is None for s in states):
        print(f"report: nothing to assemble for {ws.results}: no env.txt and no section "
              "snippet; run 'make report' (or env.bash and a section script) first",
              file=sys.stderr)
        return 2
    out = ws.path(REPORT_MD)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text)
    if shapes:  # the evidence behind the conclusion's between-runs line
        ws.path(SHAPES_CSV).parent.mkdir(parents=True, exist_ok=True)
        shapes_frame(shapes).to_csv(ws.path(SHAPES_CSV), index=False)
    missing = html.write_html(out, ws.path(REPORT_HTML))
    print(summary(ws, states, missing))
    return 0
