"""Prompt parameters: exact splits of the shipped templates, rewrites of one component, and candidate
checks that run demonstrations through the real parsers and solvers."""

from __future__ import annotations

from importlib import resources
from pathlib import Path

import pytest

from logicpipe.core.errors import UsageError
from logicpipe.optimize.params import (
    PromptParams,
    Structure,
    check_candidate,
    check_demonstrations,
    demo_program,
    prompt_ids,
    split_template,
)
from logicpipe.prompts import PromptSet
from logicpipe.stages.config import RunConfig

TEMPLATES = resources.files("logicpipe.prompts").joinpath("templates")
SHIPPED = sorted(p.name[:-4] for p in TEMPLATES.iterdir() if p.name.endswith(".txt"))
DATASETS = {"prontoqa": "lp", "proofwriter": "lp", "folio": "fol", "logicaldeduction": "csp", "ar-lsat": "smt"}


def shipped(prompt_id: str) -> str:
    return TEMPLATES.joinpath(f"{prompt_id}.txt").read_text(encoding="utf-8")


@pytest.mark.parametrize("prompt_id", SHIPPED)
def test_split_of_every_shipped_template_renders_back_exactly(prompt_id: str) -> None:
    text = shipped(prompt_id)
    components = split_template(text, guide=prompt_id.startswith("guide-"))
    assert components.render() == text
    assert components.layout != "whole"  # every shipped template fits the layout


@pytest.mark.parametrize("dataset", list(DATASETS))
def test_formulate_templates_split_into_description_format_demonstrations_and_tail(dataset: str) -> None:
    components = split_template(shipped(dataset))
    assert components.description.startswith("You translate ")
    assert components.format.startswith("Grammar")
    assert components.principles == ""
    assert len(components.demonstrations) == 1 and components.demonstrations[0].startswith("Example.")
    assert "{{" not in components.text("demonstrations")
    assert components.tail.startswith("Now the problem.") and "{{context}}" in components.tail


def test_guides_are_principles_only() -> None:
    components = split_template(shipped("guide-lp"), guide=True)
    assert components.trainable == ("principles",)
    assert components.principles.startswith("- Every atom ends with its truth value")
    with pytest.raises(UsageError, match="not trainable"):
        components.with_text("description", "anything")


@pytest.mark.parametrize("text", [
    "No user line at all, {{context}}\n",
    "=== user ===\nA guide without its final newline",
])
def test_a_template_that_does_not_fit_is_one_component(text: str) -> None:
    components = split_template(text, guide=text.startswith("=== user ==="))
    assert components.layout == "whole"
    assert components.render() == text
    assert components.trainable == ("description",)


def test_learnt_principles_are_rendered_in_the_system_part_and_found_again() -> None:
    params = PromptParams.from_prompt_set(PromptSet(), prompt_ids("prontoqa", "lp"))
    rule = "- A sentence 'X are not Y' is a rule with conclusion Y($x, False)."
    updated = params.with_component("prontoqa", "principles", rule + "\n")
    text = updated.render()["prontoqa"]
    system, _, user = text.partition("\n=== user ===\n")
    assert system.endswith("Principles:\n" + rule) and rule not in user
    again = split_template(text)
    assert again == updated.prompts["prontoqa"]


def test_a_rendered_set_is_what_a_run_reads(tmp_path: Path) -> None:
    params = PromptParams.from_prompt_set(PromptSet(), prompt_ids("prontoqa", "lp"))
    updated = params.with_component("prontoqa", "principles", "- Negation is the value False.")
    for prompt_id, text in updated.render().items():
        (tmp_path / f"{prompt_id}.txt").write_text(text)
    prompt = PromptSet(tmp_path).get("prontoqa")
    assert prompt.system.endswith("Principles:\n- Negation is the value False.")
    assert prompt.fields == {"context", "question"}
    assert PromptParams.from_prompt_set(PromptSet(tmp_path), prompt_ids("prontoqa", "lp")) == updated


def test_hash_is_twelve_hex_digits_and_follows_the_content() -> None:
    params = PromptParams.from_prompt_set(PromptSet(), prompt_ids("folio", "fol"))
    again = PromptParams.from_prompt_set(PromptSet(), prompt_ids("folio", "fol"))
    assert len(params.hash) == 12 and int(params.hash, 16) >= 0
    assert params.hash == again.hash
    changed = params.with_component("refine", "description", "Repair the program.")
    assert changed.hash != params.hash
    assert changed.with_component("refine", "description", params.component("refine", "description")).hash == params.hash


def test_with_component_replaces_one_component_only() -> None:
    params = PromptParams.from_prompt_set(PromptSet(), prompt_ids("prontoqa", "lp"))
    updated = params.with_component("prontoqa", "description", "  Translate the problem into a logic program.  \n")
    assert updated.prompts["prontoqa"].description == "Translate the problem into a logic program."
    assert updated.prompts["prontoqa"].format == params.prompts["prontoqa"].format
    assert updated.prompts["refine"] == params.prompts["refine"]
    assert params.prompts["prontoqa"].description.startswith("You translate")  # the original is unchanged
    with pytest.raises(UsageError, match="no prompt"):
        params.with_component("folio", "description", "x")


def test_two_demonstrations_stay_two() -> None:
    params = PromptParams.from_prompt_set(PromptSet(), prompt_ids("prontoqa", "lp"))
    demo = params.component("prontoqa", "demonstrations")
    updated = params.with_component("prontoqa", "demonstrations", demo + "\n\n" + demo.replace("Rex", "Max"))
    assert len(updated.prompts["prontoqa"].demonstrations) == 2
    assert split_template(updated.render()["prontoqa"]) == updated.prompts["prontoqa"]


def test_demo_program_is_the_text_after_the_last_program_line() -> None:
    assert demo_program("Example.\nContext: c\nProgram:\nA(b, True)\n") == "A(b, True)\n"
    assert demo_program("Example.\nContext: c\nProgram:\n") is None
    assert demo_program("Example.\nContext: c") is None


@pytest.mark.parametrize(("dataset", "solver"), list(DATASETS.items()))
def test_the_shipped_demonstrations_pass_in_their_solver(dataset: str, solver: str) -> None:
    params = PromptParams.from_prompt_set(PromptSet(), prompt_ids(dataset, solver))
    assert check_demonstrations(params.prompts[dataset].demonstrations, solver) is None
    assert check_candidate(params, params.with_component(dataset, "description", "Translate the problem."),
                           dataset, solver) is None


def test_a_start_demonstration_that_does_not_run_blocks_no_other_rewrite() -> None:
    start = PromptParams.from_prompt_set(PromptSet(), prompt_ids("prontoqa", "lp"))
    broken = start.with_component("prontoqa", "demonstrations",
                                  start.component("prontoqa", "demonstrations").replace("Query:", "Ask:"))
    assert check_demonstrations(broken.prompts["prontoqa"].demonstrations, "lp") is not None
    assert check_candidate(broken, broken.with_component("prontoqa", "principles", "- A rule."), "prontoqa", "lp") is None


def test_a_demonstration_that_no_longer_parses_is_rejected_by_the_parser() -> None:
    params = PromptParams.from_prompt_set(PromptSet(), prompt_ids("prontoqa", "lp"))
    demo = params.component("prontoqa", "demonstrations")
    broken = params.with_component("prontoqa", "demonstrations", demo.replace("Rules:", "Rulez:"))
    reason = check_candidate(params, broken, "prontoqa", "lp")
    assert reason is not None and "demonstration 1" in reason and "parse" in reason and "Rulez" in reason


def test_a_demonstration_that_fails_when_run_is_rejected_by_the_solver() -> None:
    params = PromptParams.from_prompt_set(PromptSet(), prompt_ids("logicaldeduction", "csp"))
    demo = params.component("logicaldeduction", "demonstrations")
    broken = demo.replace("green_book == 3 :::", "green_book // (red_book - red_book) == 3 :::")
    assert broken != demo
    reason = check_candidate(params, params.with_component("logicaldeduction", "demonstrations", broken),
                             "logicaldeduction", "csp")
    assert reason is not None and "execution" in reason and "division by zero" in reason


def test_a_second_demonstration_is_checked_too() -> None:
    params = PromptParams.from_prompt_set(PromptSet(), prompt_ids("folio", "fol"))
    demo = params.component("folio", "demonstrations")
    broken = demo.replace("Dog(rex) ⊕ Lizard(rex)", "Dog(rex ⊕ Lizard(rex)")
    reason = check_candidate(params, params.with_component("folio", "demonstrations", demo + "\n\n" + broken),
                             "folio", "fol")
    assert reason is not None and reason.startswith("demonstration 2")


def test_a_demonstration_without_a_program_is_rejected() -> None:
    params = PromptParams.from_prompt_set(PromptSet(), prompt_ids("prontoqa", "lp"))
    candidate = params.with_component("prontoqa", "demonstrations", "Example.\nContext: Rex is red.")
    assert "no program" in (check_candidate(params, candidate, "prontoqa", "lp") or "")


def test_a_valid_new_demonstration_is_accepted() -> None:
    params = PromptParams.from_prompt_set(PromptSet(), prompt_ids("prontoqa", "lp"))
    demo = params.component("prontoqa", "demonstrations")
    extra = demo.replace("Wumpus", "Yumpus").replace("Rex", "Sam")
    candidate = params.with_component("prontoqa", "demonstrations", demo + "\n\n" + extra)
    assert check_candidate(params, candidate, "prontoqa", "lp") is None


def test_variables_may_be_neither_dropped_nor_added() -> None:
    params = PromptParams.from_prompt_set(PromptSet(), prompt_ids("prontoqa", "lp"))
    refine = params.prompts["refine"]
    # refine's fields are in its tail, which is never trained; a whole-template prompt can lose them.
    whole = PromptParams(prompts={"refine": refine.model_copy(update={"layout": "whole", "description": refine.render(),
                                                                     "tail": "", "format": ""})})
    dropped = whole.with_component("refine", "description", whole.prompts["refine"].render().replace("{{guide}}", ""))
    assert check_candidate(whole, dropped, "refine", "lp") == "variables dropped: {{guide}}"
    added = params.with_component("prontoqa", "demonstrations",
                                  params.component("prontoqa", "demonstrations") + "\nSee {{hint}}.")
    assert check_candidate(params, added, "prontoqa", "lp") == "unknown variables added: {{hint}}"
    in_system = params.with_component("prontoqa", "principles", "- Read {{context}} twice.")
    assert "never filled in: context" in (check_candidate(params, in_system, "prontoqa", "lp") or "")


def test_a_rewrite_may_not_add_a_second_user_line() -> None:
    params = PromptParams.from_prompt_set(PromptSet(), prompt_ids("prontoqa", "lp"))
    candidate = params.with_component("prontoqa", "format", "Grammar:\n=== user ===\nnothing")
    assert "exactly one" in (check_candidate(params, candidate, "prontoqa", "lp") or "")


def test_structure_temperature_follows_the_number_of_samples() -> None:
    assert Structure().temperature == 0.0
    assert Structure(num_samples=3).temperature == 0.7
    assert Structure().with_change("num_samples", 5).temperature == 0.7
    assert Structure(num_samples=3).with_change("num_samples", 1).temperature == 0.0
    with pytest.raises(ValueError, match="temperature"):
        Structure(num_samples=3, temperature=0)


@pytest.mark.parametrize(("field", "value"), [("num_samples", 4), ("max_rounds", 7), ("backup", "none"),
                                              ("temperature", 1.0), ("max_rounds", True)])
def test_off_menu_changes_are_refused(field: str, value: object) -> None:
    assert Structure.off_menu(field, value) is not None
    with pytest.raises(UsageError):
        Structure().with_change(field, value)


def test_structure_applies_to_a_run_config() -> None:
    config = RunConfig(dataset="prontoqa", model="m")
    applied = Structure(num_samples=3, max_rounds=1, backup="cot").apply(config)
    assert (applied.num_samples, applied.temperature, applied.max_rounds, applied.backup) == (3, 0.7, 1, "cot")
    assert applied.dataset == "prontoqa" and applied.model == "m"
    assert Structure().hash != Structure(max_rounds=2).hash
