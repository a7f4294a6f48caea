"""A long-lived helper for the bash run loop, spoken to over a pipe (bash `coproc`).

Every repetition needs questions answered that bash cannot answer well: "is this fio JSON a good
repetition of its case?" (analysis.run.repetition), before a write "is writing to this device still
safe?", and after a failure "what went wrong?" (analysis.run.faults).
Starting Python for each costs tens of milliseconds, which alone would exceed the toolkit's
per-repetition overhead budget (bench/overhead). One process started per section answers each
question in a few milliseconds.

Protocol: one request per line, fields separated by tabs; one reply line per request:
    check-result<TAB>PATH[<TAB>SECTION_DIR<TAB>CASE]   -> ok | bad<TAB>reason
    safety<TAB>DEVICE<TAB>DESTROY                      -> ok | refused<TAB>reason
    diagnose<TAB>TARGET<TAB>RESULTS_DIR<TAB>FIO_RC<TAB>WRITES(0|1)
                                                       -> stop|go|<TAB>message
    probe-cost<TAB>PATH              -> ok<TAB>IOPS<TAB>mean latency ns | bad<TAB>reason
    manifest-value<TAB>SECTION_DIR<TAB>KEY  (its manifest: its entry in the tree's record)
                                     -> ok<TAB>value | none
    steady<TAB>DIR<TAB>TRACK<TAB>MIN_BYTES<TAB>ROUND_S<TAB>WINDOW<TAB>RANGE%<TAB>SLOPE%
                                     (DIR/round<k>.json, the sustained state's rounds:
                                     analysis.run.steady_rounds)
                                     -> steady<TAB>verdict | more<TAB>ROUNDS PAST THE GATE<TAB>why
                                        | bad<TAB>reason
    pts-steady<TAB>DIR<TAB>TEST<TAB>ROUND_S<TAB>MAX_ROUNDS<TAB>ACTIVE_BYTES
                                     (DIR/round<k>.json, a SNIA PTS test's rounds:
                                     analysis.run.pts_rounds)
                                     -> steady|stop|more<TAB>why | bad<TAB>reason
    order<TAB>SEED<TAB>RULE<TAB>STAGE<TAB>NAME:REPS ...[<TAB>SECTION_DIR...]
                                     -> ok<TAB>INDEX:REP ... (analysis.run.order) | bad<TAB>reason
    unstable<TAB>RESULTS_DIR<TAB>PCT<TAB>CASE ...
                                     -> ok<TAB>CASE ... (interval wider than +-PCT %: rerun them)
    uring-gain<TAB>PATH ...          (an io_uring option probe's rounds so far, analysis.run.uring_probe)
                                     -> kept|dropped|more<TAB>BASE<TAB>MORE IOPS<TAB>GAIN%<TAB>PAIRS
                                        | bad<TAB>reason
    manifest-check<TAB>FOLDER<TAB>KEY=VALUE ...
                                     (write the section's manifest, or the state's, into the
                                     tree's record, or compare: analysis.run.record)
                                     -> ok | refused<TAB>how it differs | bad<TAB>reason
    section-aside<TAB>SECTION_DIR<TAB>ASIDE  (--fresh moved the folder: its manifest goes with it)
                                     -> ok | bad<TAB>reason
    section-removed<TAB>SECTION_DIR  (about to make the folder: an entry left for a folder removed
                                     by hand goes) -> ok | bad<TAB>reason
    order-seed<TAB>GIVEN<TAB>FRESH<TAB>SECTION_DIR ...
                                     -> ok<TAB>SEED<TAB>how chosen (analysis.run.order) | bad<TAB>reason
    record-get<TAB>TREE<TAB>NAME<TAB>TARGET<TAB>DIRECT
                                     (a decision of the tree's record, analysis.run.record)
                                     -> ok<TAB>FIELD... (record.CHOICES order) | none
    record-set<TAB>TREE<TAB>NAME<TAB>TARGET<TAB>DIRECT<TAB>FIELD...  -> ok | bad<TAB>reason
    step-get<TAB>TREE<TAB>KEY        (a step done once: state/purge, qd1/prefill ...)
                                     -> ok<TAB>what was done | none | bad<TAB>reason
    step-set<TAB>TREE<TAB>KEY<TAB>WHAT  -> ok | bad<TAB>reason
    step-forget<TAB>TREE<TAB>FOLDER  (its steps, the folder moved aside) -> ok | bad<TAB>reason
    purge-plan<TAB>DEVICE<TAB>METHOD<TAB>REGION<TAB>CAPACITY  (--purge: analysis.device.purge)
                                     -> ok<TAB>METHOD<TAB>what it does<TAB>COMMAND WORD...
                                        | refused<TAB>EXIT CODE<TAB>reason
    state-check<TAB>TREE<TAB>STATE<TAB>TARGET<TAB>REGION<TAB>PURGE ASKED<TAB>PURGE METHOD<TAB>FRESH
                                     (the run's --state and --purge against how the tree's
                                     state was prepared: analysis.run.tree_state)
                                     -> ok | redo<TAB>FOLDER ... (--fresh-state: moved aside)
                                        | refused<TAB>what happened and the ways out
                                        | bad<TAB>reason
    purge-fill<TAB>DEVICE            -> ok<TAB>NUSE NSZE NSFEAT (a whole NVMe namespace; else empty)
                                        | bad<TAB>reason
    purge-check<TAB>DEVICE<TAB>METHOD<TAB>REGION<TAB>RECORD<TAB>NUSE BEFORE (or empty)
                                     (the purge just done: RECORD written)
                                     -> ok<TAB>what the check found | unverified<TAB>the same
                                        | bad<TAB>reason
The process exits at end of input. It ignores SIGINT: Ctrl-C in the terminal reaches the whole
process group, and the script, not this helper, decides what happens then.
"""

from __future__ import annotations

import signal
import sys
from pathlib import Path

from analysis.device import purge
from analysis.device.safety import Refusal, check_write
from analysis.fio.output import FioOutputError, read_groups
from analysis.run import (
    faults,
    order,
    pts_rounds,
    record,
    repetition,
    steady_rounds,
    tree_state,
    uring_probe,
)


def check_result(path: str, section_dir: str = "", case: str = "") -> str:
    """A repetition is kept only when it is a good repetition of its case (analysis.run.repetition);
    with the section's folder (its manifest) and the case's name its job options are checked too."""
    expected = None
    try:
        if section_dir:
            expected = repetition.expected_options(record.section(Path(section_dir)), case)
        repetition.check(path, expected)
    except (record.RecordError, repetition.BadRepetition) as e:
        return f"bad\t{e}"
    return "ok"


def diagnose(target: str, results_dir: str, fio_rc: str, writes: str) -> str:
    action, message = faults.diagnose(target, results_dir, int(fio_rc or 0), writes == "1")
    return f"{action}\t{message}"


def probe_cost(path: str) -> str:
    """An engine probe's result as whole numbers bash can compare."""
    try:
        (group, *_) = read_groups(path)
    except (FioOutputError, OSError) as e:
        return f"bad\t{e}"
    d = next(iter(group.directions.values()))
    return f"ok\t{round(d.iops)}\t{round(d.lat_mean_ns)}"


def manifest_value(section_dir: str, key: str) -> str:
    try:
        value = record.section(Path(section_dir)).get(key)
    except record.RecordError:
        value = None
    return "none" if value in (None, "") else f"ok\t{value}"


def manifest_check(folder: str, *pairs: str) -> str:
    code, message = record.check_section(Path(folder), list(pairs))
    return "ok" if code == 0 else f"{'refused' if code == 2 else 'bad'}\t{message}"


def changed(tree: Path, change) -> str:
    """The reply to a change of the tree's record: ok once `change()` has made it, else why not."""
    try:
        change()
    except ValueError as e:  # a RecordError, or fields that do not fit
        return f"bad\t{e}"
    except OSError as e:
        return f"bad\tcannot write {record.path_of(tree)}: {e.strerror}"
    return "ok"


def order_seed(given: str, fresh: str, *section_dirs: str) -> str:
    try:
        seed, how = order.choose_seed(given, bool(fresh), [Path(d) for d in section_dirs])
    except order.OrderError as e:
        return f"bad\t{e}"
    return f"ok\t{seed}\t{how}"


def run_order(*fields: str) -> str:
    try:
        return order.order_reply(*fields)
    except (order.OrderError, OSError, ValueError) as e:
        return f"bad\t{e}"


def unstable(results_dir: str, pct: str, cases: str) -> str:
    # imported here, not above: it brings numpy, which only --until-stable needs, and every
    # section starts this helper (numpy's import is 4 of the helper's 6.5 s on an emulated CPU)
    from analysis.run import stability

    return "ok\t" + " ".join(stability.unstable(Path(results_dir), float(pct), cases.split()))


def safety(device: str, destroy: str) -> str:
    try:
        check_write(device, destroy)
    except Refusal as e:
        return f"refused\t{e}"
    return "ok"


def record_get(tree: str, name: str, target: str, direct: str) -> str:
    try:
        part = record.choice(record.load(Path(tree)), name, target, direct)
    except record.RecordError as e:
        return f"bad\t{e}"
    if part is None:
        return "none"
    return "\t".join(["ok", *(str(part.get(f, "")) for f in record.CHOICES[name])])


def record_set(tree: str, name: str, target: str, direct: str, *values: str) -> str:
    if name not in record.CHOICES:
        return f"bad\tthe record keeps no decision {name!r}"
    return changed(Path(tree), lambda: record.set_choice(
        Path(tree), name, target, direct, dict(zip(record.CHOICES[name], values, strict=True))))


def step_get(tree: str, key: str) -> str:
    try:
        done = record.load(Path(tree))["steps"].get(key)
    except record.RecordError as e:
        return f"bad\t{e}"
    return "none" if done is None else f"ok\t{done}"


def purge_plan(device: str, method: str, region: str, capacity: str) -> str:
    try:
        chosen, what, cmd = purge.plan(device, method, int(region), int(capacity))
    except purge.PurgeError as e:
        return f"refused\t{e.code}\t{e}"
    except (OSError, ValueError) as e:  # a device that answers nonsense: said, not a dead helper
        return f"bad\t{e}"
    return "\t".join(["ok", chosen, what, *cmd])


def state_check(tree: str, state: str, target: str, region: str, asked: str, method: str,
                fresh: str) -> str:
    try:
        verdict, text = tree_state.check(Path(tree), state, target, region, asked, method,
                                         bool(fresh))
    except record.RecordError as e:
        return f"bad\t{e}"
    return verdict if verdict == "ok" else f"{verdict}\t{text}"


def purge_fill(device: str) -> str:
    try:
        return f"ok\t{purge.fill(device)}"
    except (purge.PurgeError, OSError, ValueError) as e:
        return f"bad\t{e}"


def purge_check(device: str, method: str, region: str, record_path: str, before: str) -> str:
    try:
        verified, summary = purge.check(device, method, int(region), Path(record_path),
                                        int(before) if before else None)
    except (purge.PurgeError, OSError, ValueError) as e:
        return f"bad\t{e}"
    return f"{'ok' if verified else 'unverified'}\t{summary}"


def reply_to(line: str) -> str:
    fields = line.rstrip("\n").split("\t")
    if fields[0] == "check-result" and len(fields) in (2, 4):
        return check_result(*fields[1:])
    if fields[0] == "diagnose" and len(fields) == 5:
        return diagnose(*fields[1:])
    if fields[0] == "safety" and len(fields) == 3:
        return safety(fields[1], fields[2])
    if fields[0] == "probe-cost" and len(fields) == 2:
        return probe_cost(fields[1])
    if fields[0] == "manifest-value" and len(fields) == 3:
        return manifest_value(fields[1], fields[2])
    if fields[0] == "steady" and len(fields) == 8:
        return steady_rounds.steady_reply(*fields[1:])
    if fields[0] == "pts-steady" and len(fields) == 6:
        return pts_rounds.pts_reply(*fields[1:])
    if fields[0] == "order" and len(fields) >= 5:
        return run_order(*fields[1:])
    if fields[0] == "unstable" and len(fields) == 4:
        return unstable(*fields[1:])
    if fields[0] == "uring-gain" and len(fields) >= 2:
        return uring_probe.gain_reply(*fields[1:])
    if fields[0] == "manifest-check" and len(fields) >= 2:
        return manifest_check(*fields[1:])
    if fields[0] == "section-aside" and len(fields) == 3:
        return changed(Path(fields[1]).parent,
                       lambda: record.set_aside(Path(fields[1]), Path(fields[2])))
    if fields[0] == "section-removed" and len(fields) == 2:
        return changed(Path(fields[1]).parent, lambda: record.forget_removed(Path(fields[1])))
    if fields[0] == "order-seed" and len(fields) >= 3:
        return order_seed(*fields[1:])
    if fields[0] == "step-get" and len(fields) == 3:
        return step_get(fields[1], fields[2])
    if fields[0] == "step-set" and len(fields) == 4:
        return changed(Path(fields[1]), lambda: record.set_step(Path(fields[1]), *fields[2:]))
    if fields[0] == "step-forget" and len(fields) == 3:
        return changed(Path(fields[1]), lambda: record.forget_steps(Path(fields[1]), fields[2]))
    if fields[0] == "record-get" and len(fields) == 5:
        return record_get(*fields[1:])
    if fields[0] == "record-set" and len(fields) >= 5:
        return record_set(*fields[1:])
    if fields[0] == "purge-plan" and len(fields) == 5:
        return purge_plan(*fields[1:])
    if fields[0] == "state-check" and len(fields) == 8:
        return state_check(*fields[1:])
    if fields[0] == "purge-fill" and len(fields) == 2:
        return purge_fill(fields[1])
    if fields[0] == "purge-check" and len(fields) == 6:
        return purge_check(*fields[1:])
    return f"bad\tunknown request {fields[0]!r}"


def main(argv: list[str]) -> int:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    for line in sys.stdin:
        reply = " ".join(reply_to(line).splitlines())  # one line per reply, whatever the reason
        print(reply, flush=True)
    return 0
