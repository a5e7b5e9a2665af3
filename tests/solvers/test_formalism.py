"""`run --formalism`: LogicalDeduction through ASP with its own prompt, against the scripted model server
serving our own ASP programs (tests/solvers/files/asp_logicaldeduction.json), one of them broken so that
refinement repairs it from clingo's error message."""

import json

import pytest

from logicpipe.prompts import PromptSet
from logicpipe.solvers import execute_task
from logicpipe.testing import FakeOpenAI, ScriptedReplies
from tests.conftest import cli
from tests.solvers.test_asp import FILES, PROGRAMS

BROKEN = "at(crow, 5)\n"  # problem 4's program with the period of one fact missing


def records(path):
    return [json.loads(line) for line in path.read_text().splitlines()]


def one_line(done):
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert done.returncode == 2 and len(lines) == 1 and lines[0].startswith("error: "), done.stderr
    return lines[0]


def test_the_asp_prompt_demonstration_is_a_program_the_asp_solver_runs():
    prompt = PromptSet().get("logicaldeduction-asp")
    demo = prompt.user.split("Program:\n", 1)[1].split("\n\nNow the problem.", 1)[0]
    assert execute_task({"solver": "asp", "program": demo}).verdict == "A"


def run_asp(fake, data_dir, out, *extra):
    return cli("run", "-d", "logicaldeduction", "--formalism", "asp", "--data-dir", str(data_dir), "--out", str(out),
               "--model", "scripted", "--base-url", fake.url, "--limit", "5", "--max-retries", "0", *extra)


def test_logicaldeduction_runs_through_asp_end_to_end(data_dir, tmp_path):
    gold = {p["id"]: p["answer"] for p in json.loads((data_dir / "data" / "LogicalDeduction" / "dev.json").read_text())}
    programs = {pid: [text] for pid, text in PROGRAMS.items()}
    fixed = programs["logical_deduction_4"][0]
    programs["logical_deduction_4"] = [fixed.replace("at(crow, 5).\n", BROKEN)]
    replies = ScriptedReplies(programs, repairs={BROKEN: fixed})
    with FakeOpenAI(replies) as fake:
        done = run_asp(fake, data_dir, tmp_path)
        assert done.returncode == 0, done.stderr
        formulate = [r for r in fake.requests if r["_logicpipe"]["purpose"] == "formulate"]
        refine = [r for r in fake.requests if r["_logicpipe"]["purpose"] == "refine"]
        # The run's identity holds the formalism: the same folder without it is refused, nothing mixed.
        again = cli("run", "-d", "logicaldeduction", "--data-dir", str(data_dir), "--out", str(tmp_path),
                    "--model", "scripted", "--base-url", fake.url, "--limit", "5")
    assert len(formulate) == 5 and "answer set program" in formulate[0]["messages"][0]["content"]
    assert len(refine) == 1 and "clingo: syntax error" in refine[0]["messages"][-1]["content"]
    folder = tmp_path / "logicaldeduction"
    ids = [f"logical_deduction_{i}" for i in range(5)]
    for stage in ("formulate", "solve", "interpret", "evaluate"):
        assert [r["id"] for r in records(folder / f"{stage}.jsonl")] == ids, stage
    assert [r["id"] for r in records(folder / "refine-1.jsonl")] == ["logical_deduction_4"]
    solved = {r["id"]: r for r in records(folder / "solve.jsonl")}
    assert {r["solver"] for r in solved.values()} == {"asp"}
    assert solved["logical_deduction_4"]["error"]["category"] == "parse"
    evaluated = {r["id"]: (r["gold"], r["predicted"]) for r in records(folder / "evaluate.jsonl")}
    assert evaluated == {pid: (gold[pid], gold[pid]) for pid in ids}
    metrics = json.loads((folder / "metrics.json").read_text())
    assert metrics["total"] == 5 and metrics["executed"] == 5 and metrics["exe_acc"] == 100.0
    identity = json.loads((folder / "run.json").read_text())
    assert identity["formalism"] == "asp" and identity["stages"]["solve"]["solver"] == "asp"
    assert "logicaldeduction-asp" in identity["stages"]["formulate"]["prompts"]
    assert "was made with other options (formalism, " in one_line(again)


def test_a_constrained_asp_run_sends_the_asp_grammar_that_takes_every_program(data_dir, tmp_path):
    """--constrain with --formalism asp: every formulate request carries the ASP decoding grammar, which
    takes each of our programs the server answers with (tests/llm/gbnf.py's recogniser as the oracle)."""
    from logicpipe.llm.constrain import grammar_for
    from tests.llm.gbnf import Recogniser

    replies = ScriptedReplies({pid: [text] for pid, text in PROGRAMS.items()})
    with FakeOpenAI(replies) as fake:
        done = run_asp(fake, data_dir, tmp_path, "--constrain", "--max-tokens", "1024")
        assert done.returncode == 0, done.stderr
    grammar = grammar_for("asp", 1024)
    assert len(fake.requests) == 5 and all(r["grammar"] == grammar for r in fake.requests)
    recogniser = Recogniser(grammar)
    assert all(recogniser.accepts(text) for text in PROGRAMS.values())
    folder = tmp_path / "logicaldeduction"
    metrics = json.loads((folder / "metrics.json").read_text())
    assert metrics["executed"] == 5 and metrics["exe_acc"] == 100.0
    identity = json.loads((folder / "run.json").read_text())
    assert identity["formalism"] == "asp" and identity["stages"]["formulate"]["constrain"] is True


# Each dataset through another formalism: our own programs for a sample of its problems (never the released
# ones), written for the formalism's prompt and checked against the gold answers.
COMBINATIONS = [("ar-lsat", "asp", "AR-LSAT"), ("prontoqa", "asp", "ProntoQA"), ("proofwriter", "asp", "ProofWriter"),
                ("prontoqa", "fol", "ProntoQA"), ("folio", "lp", "FOLIO")]


def own_programs(dataset, formalism):
    path = FILES / f"{formalism}_{dataset}.json"
    return {r["id"]: r["raw_logic_programs"][0] for r in json.loads(path.read_text())}


@pytest.mark.parametrize(("dataset", "formalism", "folder"), COMBINATIONS)
def test_a_dataset_runs_through_another_formalism_with_its_own_prompt(data_dir, tmp_path, dataset, formalism, folder):
    programs = own_programs(dataset, formalism)
    assert 3 <= len(programs) <= 5
    gold = {p["id"]: p["answer"] for p in json.loads((data_dir / "data" / folder / "dev.json").read_text())}
    ids = tmp_path / "ids.txt"
    ids.write_text("\n".join(programs) + "\n")
    with FakeOpenAI(ScriptedReplies({pid: [text] for pid, text in programs.items()})) as fake:
        done = cli("run", "-d", dataset, "--formalism", formalism, "--data-dir", str(data_dir), "--out",
                   str(tmp_path / "out"), "--model", "scripted", "--base-url", fake.url, "--ids", str(ids),
                   "--max-retries", "0")
        assert done.returncode == 0, done.stderr
    prompt = PromptSet().get(f"{dataset}-{formalism}")
    assert len(fake.requests) == len(programs)
    assert all(r["messages"][0]["content"] == prompt.system for r in fake.requests)
    stage_dir = tmp_path / "out" / dataset
    assert {r["solver"] for r in records(stage_dir / "solve.jsonl")} == {formalism}
    evaluated = {r["id"]: (r["gold"], r["predicted"]) for r in records(stage_dir / "evaluate.jsonl")}
    assert evaluated == {pid: (gold[pid], gold[pid]) for pid in programs}
    identity = json.loads((stage_dir / "run.json").read_text())
    assert identity["formalism"] == formalism and f"{dataset}-{formalism}" in identity["stages"]["formulate"]["prompts"]


@pytest.mark.parametrize(("dataset", "formalism", "folder"), COMBINATIONS)
def test_each_prompt_demonstration_is_a_program_its_solver_answers(dataset, formalism, folder):
    prompt = PromptSet().get(f"{dataset}-{formalism}")
    demo = prompt.user.split("Program:\n", 1)[1].split("\n\nNow the problem.", 1)[0]
    answered = execute_task({"solver": formalism, "program": demo})
    assert answered.error is None and answered.verdict is not None, answered


def test_formalism_mistakes_are_one_line_before_anything_is_written(data_dir, tmp_path):
    with FakeOpenAI(lambda body: "never asked") as fake:
        misspelt = cli("run", "-d", "logicaldeduction", "--formalism", "aps", "--data-dir", str(data_dir),
                       "--out", str(tmp_path), "--model", "m", "--base-url", fake.url)
        assert "invalid option --formalism: unknown formalism 'aps' (did you mean 'asp'?)" in one_line(misspelt)
        no_prompt = cli("run", "-d", "folio", "--formalism", "asp", "--data-dir", str(data_dir), "--out",
                        str(tmp_path), "--model", "m", "--base-url", fake.url)
        assert ("--formalism asp: no prompt 'folio-asp' for folio; the formalisms with a prompt for it: lp, fol "
                "(or write folio-asp.txt into a --prompts folder)") in one_line(no_prompt)
        assert fake.requests == []
    assert not (tmp_path / "logicaldeduction").exists() and not (tmp_path / "folio").exists()
    assert FILES.is_dir()


def test_a_prose_reply_holds_no_asp_program():
    from logicpipe.stages.replies import read_program

    assert read_program("I cannot translate this problem.", "asp") is None
    assert read_program("Here:\n```\nobject(a).\noption(a) :- object(a).\n```\n", "asp") == "object(a).\noption(a) :- object(a).\n"
    assert read_program("rain.\nquery :- rain.\n", "asp") == "rain.\nquery :- rain.\n"
