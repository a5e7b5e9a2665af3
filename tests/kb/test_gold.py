from collections import Counter

from logicpipe.kb.gold import Scores, statements, verbalize
from logicpipe.kb.knowledge import KnowledgeBase, read_percepts
from logicpipe.kb.terms import parse_term
from logicpipe.kb.validate import NOT_DERIVABLE_VERDICT, TRUE, UNTRANSLATABLE, judge
from tests.conftest import ROOT

EXAMPLE = ROOT / "examples" / "kb"


def test_right_goals_give_every_verdict_right_on_the_example_kb():
    with KnowledgeBase(EXAMPLE / "campus.pl", percepts=read_percepts(EXAMPLE / "now.txt")) as kb:
        items = statements(kb)
        kinds = Counter((s.kind, s.label) for s in items)
        # Perturbations are checked against the KB, so every kind has the label its construction implies.
        assert set(kinds) == {("derivable", True), ("negated", False), ("wrong constant", False),
                              ("negated wrong constant", True)}
        assert kinds[("wrong constant", False)] >= 50
        scores = Scores()
        for item in items:
            verdict = judge(kb, item.text, item.goal)
            assert verdict.verdict in (TRUE, NOT_DERIVABLE_VERDICT)
            scores.add(item.label, verdict.verdict == TRUE)
        assert scores.precision == scores.recall == 1.0 and scores.tp + scores.tn == len(items)
        assert judge(kb, "Alice owns a car", None).verdict == UNTRANSLATABLE
        assert judge(kb, "Alice owns a car", "owns(alice, car)").verdict == UNTRANSLATABLE


def test_verbalize():
    assert verbalize(parse_term("teaches(hopper, cs101)")) == "Hopper teaches cs101."
    assert verbalize(parse_term("student(bob)"), negated=True) == "It is not the case that bob is student."
