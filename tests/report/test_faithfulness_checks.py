"""The pieces under `logicpipe faithfulness`: a check Prover9 cannot settle in time is `unknown` and counted
apart; LogicLLaMA's LE and BLEU give the values their definitions give by hand (truth tables and n-gram
counts worked out below)."""

from __future__ import annotations

import math

import pytest

from logicpipe.report.faithful import Scored, totals
from logicpipe.report.faithful.logic import decide
from logicpipe.report.faithful.strings import bleu, le, tokens
from logicpipe.solvers.fol_parser import parse_formula


def test_a_check_that_runs_out_of_time_is_unknown_never_yes_or_no():
    # A strict order with no greatest element has only infinite models: no small counter-model exists,
    # and Prover9's search never ends, so whether `∃x Less(x, x)` follows is left undecided.
    premises = [parse_formula(f) for f in ("∀x ∃y Less(x, y)", "∀x ¬Less(x, x)",
                                           "∀x ∀y ∀z (Less(x, y) ∧ Less(y, z) → Less(x, z))")]
    found = decide({"goal": (premises, parse_formula("Bigger(a)")),
                    "proved": (premises, parse_formula("¬Less(a, a)"))}, seconds=1.0)
    assert (found["goal"].status, found["goal"].how) == ("unknown", "limit")
    assert (found["proved"].status, found["proved"].how) == ("yes", "proof")


def test_unknown_is_counted_apart_from_the_rates():
    result = {"error": None, "recall": ["yes", "unknown", "no"], "precision": ["yes"], "conclusion": "unknown",
              "formulas": [{"equivalent": "unknown", "le": 1.0, "bleu": 0.5}], "equivalent": "unknown"}
    figures = totals([Scored("p", 0, True, True, result)])
    assert figures["premise_recall"] == {"yes": 1, "no": 1, "unknown": 1, "rate": 50.0}
    assert figures["conclusion_equivalent"] == {"yes": 0, "no": 0, "unknown": 1, "rate": None}  # undefined, not 0
    assert figures["right_for_wrong_reason"] == 0 and figures["right_translation_unknown"] == 1


@pytest.mark.parametrize("model, gold, expected", [
    ("P(x) ∧ Q(x)", "P(x) ∧ Q(x)", 1.0),
    # and = FFFT, or = FTTT over the rows FF, FT, TF, TT: they agree on two of four, whatever the binding.
    ("P(a) ∧ Q(a)", "P(a) ∨ Q(a)", 0.5),
    # The converse: the literal binding may swap P and Q, and then the truth tables agree on every row.
    ("∀x (P(x) → Q(x))", "∀x (Q(x) → P(x))", 1.0),
    # One literal against two: padded with a dummy input, P(a) agrees with P(a) ∧ Q(a) on three rows of four.
    ("P(a)", "P(a) ∧ Q(a)", 0.75),
])
def test_le_is_logicllamas_truth_table_score(model, gold, expected):
    assert le(parse_formula(model), parse_formula(gold)) == expected


def test_bleu_is_the_authors_tokens_and_ngram_counts():
    assert tokens("∀x (Dc universe(x))") == ["∀", "x", "(", "DcUniverse", "(", "x", ")", ")"]
    assert bleu("∀x (P(x) → Q(x))", "∀x (P(x) → Q(x))") == 1.0
    # P ( a ) ∧ Q ( a ) against P ( a ) ∨ Q ( a ): 8/9 unigrams, 6/8 bigrams, 4/7 trigrams, 2/6 4-grams,
    # same length (no brevity penalty).
    expected = math.exp(sum(math.log(p) for p in (8 / 9, 6 / 8, 4 / 7, 2 / 6)) / 4)
    assert bleu("P(a) ∧ Q(a)", "P(a) ∨ Q(a)") == pytest.approx(expected)
    # Shorter than the reference: the brevity penalty exp(1 - 9/4), max order 4 (the shorter has 4 tokens).
    assert bleu("P(a)", "P(a) ∧ Q(a)") == pytest.approx(math.exp(1 - 9 / 4))
    assert bleu("Q(b)", "P(a)") == 0.0
