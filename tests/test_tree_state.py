"""How a results tree's drive state was prepared, against what a run asks for
(analysis/run/tree_state.py): a --purge or --state the tree was not prepared with is refused with
the ways out, or with --fresh-state named for redoing. The trees are written by the toolkit's own
writers: the record through record.check_section (what manifest-check does), the purge's record
through purge.check on a real file. The purge recorded is `discard`, as on a loop device; a run
asking `format` stands for an NVMe namespace whose purge plan resolves to it (the loop device in
tests/test_drive_state.py cannot format, and is refused by the plan before this check)."""

from __future__ import annotations

from pathlib import Path

from analysis.device import purge
from analysis.run import record, tree_state
from analysis.run.runner_service import reply_to

REGION = 1 << 20
DEV = "/dev/loop7"


def prepared_tree(tmp: Path, state: str = "purged", sections: dict | None = None) -> Path:
    tree = tmp / "results"
    code, why = record.check_section(tree / "state", [f"state={state}", f"target={DEV}",
                                                       f"region_bytes={REGION}"])
    assert code == 0, why
    data = tmp / "target.img"
    data.write_bytes(bytes(REGION))
    verified, _ = purge.check(str(data), "discard", REGION, tree / "state" / "purge.json", None)
    assert verified
    for name, its_state in (sections or {"qd1": state}).items():
        code, why = record.check_section(tree / name, [f"section={name}", f"state={its_state}"])
        assert code == 0, why
    return tree


def test_the_same_state_and_purge_go_on(tmp_path):
    tree = prepared_tree(tmp_path)
    assert tree_state.check(tree, "purged", DEV, str(REGION), "discard", "discard", False) == \
        ("ok", "")
    # --purge auto asks for no method: it goes on in the one the tree was purged with
    assert tree_state.check(tree, "purged", DEV, str(REGION), "auto", "format", False)[0] == "ok"
    # as-is claims no state: measured in whatever the drive is in
    assert tree_state.check(tree, "as-is", DEV, str(REGION), "format", "format", False)[0] == "ok"


def test_another_purge_is_refused_with_the_ways_out(tmp_path):
    tree = prepared_tree(tmp_path)
    verdict, text = tree_state.check(tree, "purged", DEV, str(REGION), "format", "format", False)
    assert verdict == "refused"
    assert "--purge discard (now format)" in text
    assert "its drive state is --state purged --purge discard; qd1 holds results measured in it" \
        in text
    assert "--results DIR" in text and "--fresh-state" in text
    assert text.endswith("or give --state purged --purge discard to go on in the state it has.")


def test_another_state_is_refused_and_fresh_state_names_what_moves_aside(tmp_path):
    tree = prepared_tree(tmp_path, sections={"qd1": "purged", "bs_sweep": "as-is",
                                             "mix_rw": "purged"})
    verdict, text = tree_state.check(tree, "sustained", DEV, str(REGION), "auto", "discard",
                                     False)
    assert verdict == "refused" and "--state purged (now sustained)" in text
    assert "qd1, mix_rw hold results measured in it" in text
    # the sections measured as-is claim no state: they stay
    assert tree_state.check(tree, "sustained", DEV, str(REGION), "auto", "discard", True) == \
        ("redo", "state qd1 mix_rw")
    # over the run loop's helper, as bash asks it
    assert reply_to(f"state-check\t{tree}\tsustained\t{DEV}\t{REGION}\tauto\tdiscard\t1") == \
        "redo\tstate qd1 mix_rw"
    assert reply_to(f"state-check\t{tree}\tsustained\t{DEV}\t{REGION}\tauto\tdiscard\t") \
        .startswith("refused\t")


def test_another_target_says_what_to_give_to_go_on(tmp_path):
    tree = prepared_tree(tmp_path)
    verdict, text = tree_state.check(tree, "purged", "/dev/loop8", str(REGION), "auto",
                                     "discard", False)
    assert verdict == "refused" and f"target {DEV} (now /dev/loop8)" in text
    assert f"its target ({DEV}), its region ({REGION} bytes) and --state purged" in text


def test_a_state_whose_purge_never_ran_holds_no_method(tmp_path):
    tree = prepared_tree(tmp_path)
    (tree / "state" / "purge.json").unlink()  # the purge interrupted before its record
    assert tree_state.prepared(tree).purge == ""
    assert tree_state.check(tree, "purged", DEV, str(REGION), "format", "format", False)[0] == \
        "ok"
    # a tree with no state prepared holds a run to nothing
    assert tree_state.check(tmp_path / "empty", "purged", DEV, "1", "format", "format",
                            False) == ("ok", "")
