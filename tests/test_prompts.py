import pytest

from logicpipe.datasets import all_datasets
from logicpipe.prompts import extract_choice, extract_program, prompts_dir, render
from logicpipe.solvers import execute_task

EXPECTED = {"prontoqa": "False", "proofwriter": "False", "folio": "Unknown", "logicaldeduction": "A", "ar-lsat": "B"}


@pytest.mark.parametrize("spec", all_datasets(), ids=lambda s: s.key)
def test_every_demonstration_is_a_program_our_solver_runs(spec):
    text = (prompts_dir() / f"{spec.key}.txt").read_text()
    demo = text.split("Program:\n", 1)[1].split("\n\nNow the problem.", 1)[0]
    out = execute_task({"solver": spec.solver, "program": demo})
    assert out.get("verdict") == EXPECTED[spec.key], out


def test_render_fills_fields_and_splits_system_from_user():
    messages = render("folio", context="C1", question="Q1", options="A) x")
    assert messages[0]["role"] == "system" and "first-order logic" in messages[0]["content"]
    assert messages[1]["content"].rstrip().endswith("Context: C1\nQuestion: Q1\nProgram:")


def test_extract_program_and_choice():
    assert extract_program("Sure!\n```prolog\nFacts:\nA(b, True)\n```\nDone") == "Facts:\nA(b, True)\n"
    assert extract_program("Program:\nFacts:\nA(b, True)") == "Facts:\nA(b, True)\n"
    assert extract_choice("maybe B... The correct option is: (C)", ["A", "B", "C"]) == "C"
    assert extract_choice("The correct option is: Z", ["A", "B"]) is None
