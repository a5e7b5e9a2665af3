"""`--strict` and the `lenient` counts through the real CLI, on a small FOL task written here: one program
in Logic-LM's grammar, one that needs a nested quantifier (a rule Logic-LM's parser lacks) and one whose
free variable Prover9 closes with ∀ (a rule Logic-LM shares)."""

from __future__ import annotations

import json
from pathlib import Path

from ..conftest import cli

ROWS = [
    {"qid": "plain", "premises": ["Rex is a dog.", "Dogs are pets."], "claim": "Rex is a pet.", "label": "True"},
    {"qid": "nested", "premises": ["Every dog has an owner.", "Rex is a dog."], "claim": "Someone owns Rex.",
     "label": "True"},
    {"qid": "free", "premises": ["Mammals are lizards.", "Rex is a mammal."], "claim": "Rex is a lizard.",
     "label": "True"},
]
PROGRAMS = {
    "plain": "Premises:\n∀x (Dog(x) → Pet(x))\nDog(rex)\nConclusion:\nPet(rex)\n",
    "nested": "Premises:\n∀x (Dog(x) → ∃y Owns(y, x))\nDog(rex)\nConclusion:\n∃y Owns(y, rex)\n",
    "free": "Premises:\n∃z (Mammal(x) → Lizard(x))\nMammal(rex)\nConclusion:\nLizard(rex)\n",
}


def task(tmp_path: Path) -> tuple[Path, Path]:
    (tmp_path / "rows.jsonl").write_text("".join(json.dumps(row) + "\n" for row in ROWS))
    (tmp_path / "dogs.yaml").write_text(
        "name: dogs\nsource: {format: jsonl, path: rows.jsonl}\n"
        "fields: {id: qid, context: \"{premises}\", question: \"Is the following true? {claim}\", options: null, "
        "answer: label}\nanswer_space: truth\nformalism: fol\nprompt: folio\n")
    programs = tmp_path / "programs.jsonl"
    programs.write_text("".join(json.dumps({"id": key, "program": text}) + "\n" for key, text in PROGRAMS.items()))
    return tmp_path / "dogs.yaml", programs


def records(folder: Path, stage: str) -> dict[str, dict]:
    return {r["id"]: r for r in map(json.loads, (folder / f"{stage}.jsonl").read_text().splitlines())}


def test_lenient_is_recorded_and_counted_and_strict_refuses_what_logic_lm_lacks(tmp_path):
    task_file, programs = task(tmp_path)
    done = cli("run", "--task", str(task_file), "--programs", str(programs), "--out", str(tmp_path / "loose"))
    assert done.returncode == 0, done.stderr
    solved = records(tmp_path / "loose" / "dogs", "solve")
    assert "lenient" not in solved["plain"]
    assert solved["nested"]["lenient"] == {"nested-quantifier": "line 2, column 14"}
    assert solved["free"]["lenient"] == {"free-variable": "line 2, column 12"}
    metrics = json.loads((tmp_path / "loose" / "dogs" / "metrics.json").read_text())
    assert metrics["executed"] == 3
    assert metrics["lenient"] == {"programs": 2, "beyond_logic_lm": 1,
                                  "rules": {"free-variable": 1, "nested-quantifier": 1}}
    assert "lenient: 2 executed programs needed a named rule, 1 one Logic-LM's code does not read so" in done.stdout

    strict = cli("run", "--task", str(task_file), "--programs", str(programs), "--out", str(tmp_path / "strict"),
                 "--strict")
    assert strict.returncode == 0, strict.stderr
    solved = records(tmp_path / "strict" / "dogs", "solve")
    assert solved["nested"]["error"]["category"] == "parse"
    assert solved["nested"]["error"]["message"].startswith("line 2, column 14: a quantifier inside parentheses")
    assert "--strict refuses the rule 'nested-quantifier'" in solved["nested"]["error"]["message"]
    assert solved["free"]["verdict"] == "True" and solved["plain"]["verdict"] == "True"
    metrics = json.loads((tmp_path / "strict" / "dogs" / "metrics.json").read_text())
    assert metrics["executed"] == 2 and metrics["lenient"]["beyond_logic_lm"] == 0
    run = json.loads((tmp_path / "strict" / "dogs" / "run.json").read_text())
    assert run["stages"]["solve"]["strict"] is True

    # The same folder without --strict is another run: it says so rather than mixing the two.
    again = cli("run", "--task", str(task_file), "--programs", str(programs), "--out", str(tmp_path / "strict"))
    assert again.returncode != 0 and "strict" in again.stderr


def test_refinement_is_told_the_located_fault_and_how_to_write_it(tmp_path):
    from logicpipe.testing import FakeOpenAI, ScriptedReplies

    task_file, _programs = task(tmp_path)
    english = "Premises:\n∀x (Dog(x) → Pet(x))\nDog(rex) and Dog(fido)\nConclusion:\nPet(rex)\n"
    nested = PROGRAMS["nested"]
    replies = ScriptedReplies({"plain": [english], "nested": [nested], "free": [PROGRAMS["free"]]},
                              repairs={"Dog(rex) and Dog(fido)": PROGRAMS["plain"],
                                       "∃y Owns(y, x)": nested.replace("∃y Owns(y, x)", "Owned(x)")
                                       .replace("∃y Owns(y, rex)", "Owned(rex)")})
    with FakeOpenAI(replies) as fake:
        done = cli("run", "--task", str(task_file), "--out", str(tmp_path / "out"), "--model", "fake",
                   "--base-url", fake.url, "--llm-timeout", "5", "--strict", "--backup", "none")
        assert done.returncode == 0, done.stderr
        sent = {r["_logicpipe"]["problem"]: r["messages"][1]["content"] for r in fake.requests
                if r["_logicpipe"]["purpose"] == "refine"}
    assert set(sent) == {"plain", "nested"}  # `free` keeps to Logic-LM's reading: nothing to repair
    assert "line 3, column 10: 'and' is an English word, not a connective: write ∧" in sent["plain"]
    assert "never as the words and, or, not" in sent["plain"]
    assert "line 2, column 14: a quantifier inside parentheses or an operand" in sent["nested"]
    assert "--strict refuses the rule 'nested-quantifier'" in sent["nested"]
    repaired = records(tmp_path / "out" / "dogs", "solve-1")
    assert repaired["plain"]["verdict"] == "True" and repaired["nested"]["verdict"] == "True"
