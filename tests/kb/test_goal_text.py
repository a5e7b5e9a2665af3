"""Goal text the way a model may write it, through `kb prove`, held against plain swipl on the same KB:
what SWI-Prolog reads is what runs, a goal the engine has no faithful term for is `unknown` (never read
as another term), and a goal the engine cannot take in costs that goal alone (the red-team findings of
2026-12-05's fourth pass)."""

import json

import pytest

from logicpipe.core.errors import ProgramParseError
from logicpipe.kb.knowledge import KnowledgeBase
from tests.kb.oracle import swipl_says

KB = "p(a).\np(b).\n:- dynamic p_mood/1.\nhappy :- p_mood('\N{GRINNING FACE}').\n"


def prove(kbcli, kb, *goals, extra=()):
    done = kbcli("kb", "prove", str(kb), *goals, "--format", "json", *extra)
    replies = [json.loads(line) for line in done.stdout.splitlines()]
    assert len(replies) == len(goals), done.stderr
    return replies


def test_a_character_beyond_the_basic_plane_is_read_as_itself(kbcli, tmp_path):
    # Sent as a JSON surrogate pair, SWI-Prolog 9.0 read two lone codes: the engine died on the reply
    # (no goal of the batch answered) and a percept with the character failed.
    kb = tmp_path / "kb.pl"
    kb.write_text(KB)
    grin = "\N{GRINNING FACE}"
    assert swipl_says(kb, "happy", f"assertz(p_mood('{grin}'))") == "true"
    replies = prove(kbcli, kb, "p(a)", f'X = "{grin}", atom_length(X, 1)', "p(b)")
    assert [r["status"] for r in replies] == ["proved"] * 3
    assert replies[1]["solutions"][0]["bindings"]["X"] == f'"{grin}"'
    assert prove(kbcli, kb, "happy", extra=("--percept", f"p_mood='{grin}'"))[0]["status"] == "proved"


def test_a_term_the_goal_side_cannot_hold_is_unknown_not_another_term(kbcli, tmp_path):
    kb = tmp_path / "kb.pl"
    kb.write_text(KB)
    goals = ["'[]' == []", "foo() == foo", "X = _{a: 1}"]
    assert [swipl_says(kb, goal) for goal in goals] == ["false", "false", "true"]
    replies = prove(kbcli, kb, "p(a)", *goals, "p(b)")
    assert [r["status"] for r in replies] == ["proved", "unknown", "unknown", "unknown", "proved"], replies
    assert "is not the empty list" in replies[1]["reason"] and "no arguments" in replies[2]["reason"]


def test_an_anonymous_variable_never_takes_the_name_of_one_the_goal_wrote(kbcli, tmp_path):
    kb = tmp_path / "kb.pl"
    kb.write_text(KB)
    goals = ["X = f(_G1, _), X = f(a, b)", "_G1 = a, _ = b, _G1 == a"]
    assert [swipl_says(kb, goal) for goal in goals] == ["true", "true"]
    assert [r["status"] for r in prove(kbcli, kb, *goals)] == ["proved", "proved"]


def test_a_goal_the_engine_cannot_take_in_costs_that_goal_alone(kbcli, tmp_path):
    kb = tmp_path / "kb.pl"
    kb.write_text(KB)
    chain = "X = " + "+".join(["a"] * 20000)  # SWI reads it; writing it back overflows the C stack
    replies = prove(kbcli, kb, "p(a)", chain, "p(b)")
    assert [r["status"] for r in replies] == ["proved", "unknown", "proved"]
    assert replies[1]["reason"].startswith("the engine could not take the goal in")


def test_end_of_file_before_the_end_of_a_reply_drops_nothing_silently(tmp_path):
    kb = tmp_path / "kb.pl"
    kb.write_text(KB)
    with KnowledgeBase(kb) as base:
        assert len(base.read("p(a).\nend_of_file.\n\n")) == 1
        with pytest.raises(ProgramParseError, match="end_of_file"):
            base.read("p(a).\nend_of_file.\nshell(x).")
