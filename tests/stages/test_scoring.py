"""Answer mapping (closed world included), self-consistency voting and the metrics."""

import pytest

from logicpipe.core.records import ErrorCategory, EvaluateRecord, SolveRecord, StageError
from logicpipe.solvers import map_answer
from logicpipe.stages import RunConfig
from logicpipe.stages.metrics import Tally
from logicpipe.stages.solve import vote

TRUTH = ["A) True", "B) False", "C) Unknown"]


@pytest.mark.parametrize("verdict, options, closed, expected", [
    ("True", TRUTH, False, "A"), ("false", TRUTH, False, "B"), ("Uncertain", TRUTH, False, "C"),
    ("Unknown", ["A) True", "B) False"], True, "B"),  # ProntoQA: not proved means False
    ("Unknown", ["A) True", "B) False"], False, None), ("C", ["A) x", "B) y", "C) z"], False, "C"),
    ("D", ["A) x"], False, None), (None, TRUTH, False, None), ("True", ["A) true.", "B) false."], False, "A"),
])
def test_map_answer(verdict, options, closed, expected):
    assert map_answer(verdict, options, closed) == expected


def sample(verdict=None, category=None, seconds=1.0):
    error = StageError(category=ErrorCategory(category), message="x") if category else None
    return SolveRecord(id="p", dataset="d", solver="s", verdict=verdict, error=error, seconds=seconds,
                       explanation={"n": verdict})


def test_vote_takes_the_majority_of_executed_samples_and_records_the_votes():
    chosen = vote([sample("B"), sample(category="parse"), sample("A"), sample("A")])
    assert chosen.verdict == "A" and chosen.explanation == {"n": "A", "votes": ["B", "parse", "A", "A"]}
    assert chosen.seconds == 4.0


def test_vote_breaks_ties_by_the_earliest_and_keeps_a_failure_when_nothing_ran():
    assert vote([sample("B"), sample("A")]).verdict == "B"
    failed = vote([sample(category="parse"), sample(category="timeout")])
    assert failed.error.category == ErrorCategory.parse and failed.explanation["votes"] == ["parse", "timeout"]


def scored(final, gold, executed=True, category=None):
    error = StageError(category=ErrorCategory(category), message="x") if category else None
    predicted = final if executed and category is None else None
    return EvaluateRecord(id="p", gold=gold, predicted=predicted, final=final, executed=executed, error=error,
                          correct_executed=predicted is not None and predicted == gold, correct=final == gold)


def test_metrics_on_both_definitions_of_executed():
    records = [scored("A", "A"), scored("B", "A"), scored("C", "C", executed=True, category="no_answer"),
               scored("A", "A", executed=False, category="parse")]
    config = RunConfig(dataset="ar-lsat")
    smt = Tally("smt").scores(records).score_metrics(config)
    assert (smt["total"], smt["executed"], smt["exe_rate"], smt["exe_acc"]) == (4, 3, 75.0, 33.33)
    assert (smt["exe_rate_logiclm"], smt["exe_acc_logiclm"]) == (50.0, 50.0)  # Z3 with no option: not executed
    assert (smt["accuracy"], smt["failures"]) == (75.0, {"no_answer": 1, "parse": 1})
    csp = Tally("csp").scores(records).score_metrics(config.model_copy(update={"dataset": "logicaldeduction"}))
    assert (csp["exe_rate_logiclm"], csp["exe_acc_logiclm"]) == (75.0, 33.33)
