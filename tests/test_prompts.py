import pytest

from logicpipe.data import all_datasets
from logicpipe.errors import UsageError
from logicpipe.prompts import PromptSet, extract_choice, extract_program
from logicpipe.solvers import execute_task

EXPECTED = {"prontoqa": "False", "proofwriter": "False", "folio": "Unknown", "logicaldeduction": "A", "ar-lsat": "B"}


@pytest.mark.parametrize("spec", all_datasets(), ids=lambda s: s.key)
def test_every_demonstration_is_a_program_our_solver_runs(spec):
    prompt = PromptSet().get(spec.key)
    text = prompt.system + "\n" + prompt.user
    demo = text.split("Program:\n", 1)[1].split("\n\nNow the problem.", 1)[0]
    out = execute_task({"solver": spec.solver, "program": demo})
    assert out.verdict == EXPECTED[spec.key], out


def test_render_fills_fields_and_splits_system_from_user():
    messages = PromptSet().get("folio").render(context="C1", question="Q1", options="A) x")
    assert messages[0]["role"] == "system" and "first-order logic" in messages[0]["content"]
    assert messages[1]["content"].rstrip().endswith("Context: C1\nQuestion: Q1\nProgram:")
    with pytest.raises(UsageError, match="needs question"):
        PromptSet().get("folio").render(context="C1")


def test_prompts_have_ids_and_content_hashes_and_a_folder_overrides_by_name(tmp_path):
    shipped = PromptSet().get("refine")
    assert shipped.id == "refine" and len(shipped.hash) == 12
    fields = "{{context}} {{question}} {{options}} {{guide}} {{error}}"
    (tmp_path / "refine.txt").write_text(f"Fix it.\n=== user ===\n{{{{program}}}} {fields}\n")
    mine = PromptSet(tmp_path)
    assert mine.get("refine").hash != shipped.hash and mine.get("refine").fields == shipped.fields
    assert mine.get("folio") == PromptSet().get("folio")
    assert PromptSet().guide("lp").startswith("- Every atom ends with its truth value")


def test_extract_program_and_choice():
    assert extract_program("Sure!\n```prolog\nFacts:\nA(b, True)\n```\nDone") == "Facts:\nA(b, True)\n"
    assert extract_program("Program:\nFacts:\nA(b, True)") == "Facts:\nA(b, True)\n"
    assert extract_choice("maybe B... The correct option is: (C)", ["A", "B", "C"]) == "C"
    assert extract_choice("The correct option is: Z", ["A", "B"]) is None
