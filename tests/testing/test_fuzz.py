"""Fuzzing every parser and the worker path with mutated programs (fixed seeds): no uncaught
exception, no record that fails to read back, no call over its bound."""

import pytest

from logicpipe.testing.fuzz import LANGUAGES, check, mutate, programs, seeds


def test_mutations_are_reproducible_and_the_seeds_run():
    assert list(programs("lp", 5, seed=3)) == list(programs("lp", 5, seed=3))
    assert list(programs("lp", 5, seed=3)) != list(programs("lp", 5, seed=4))
    assert set(seeds()) == set(LANGUAGES)
    report = check("csp", 0)
    assert report.problems == [] and not report.outcomes


@pytest.mark.parametrize("language", sorted(LANGUAGES))
def test_a_few_hundred_mutated_programs_end_as_typed_records(language):
    report = check(language, 200, seed=1, timeout=3.0)
    assert report.problems == []
    assert sum(report.outcomes.values()) == 200
    assert report.outcomes["parse"] > 0  # the mutations do break programs


@pytest.mark.slow
@pytest.mark.parametrize("language", sorted(LANGUAGES))
def test_ten_thousand_mutated_programs_per_language(language):
    report = check(language, 10_000, seed=2, timeout=3.0)
    assert report.problems == [], report.problems[:10]
    assert sum(report.outcomes.values()) == 10_000


def test_mutate_edits_the_text():
    import random

    rng = random.Random(0)
    base = seeds()["fol"]
    assert sum(mutate(base, rng) != base for _ in range(50)) >= 45


@pytest.mark.parametrize("language", sorted(LANGUAGES))
def test_a_lone_surrogate_in_program_text_is_a_parse_error_with_its_place(language):
    from logicpipe.solvers import execute_task

    text = seeds()[language].replace("\n", "\n\ud800", 1)
    out = execute_task({"solver": language, "program": text})
    assert out.error.category == "parse"
    assert out.error.message == "line 2, column 1: the text is not valid Unicode (a lone surrogate)"
