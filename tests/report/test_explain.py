import json
import shutil
from pathlib import Path

from logicpipe.core.records import ErrorCategory, SolveRecord, StageError
from logicpipe.report.render import verdict_lines
from logicpipe.testing import FakeOpenAI, ScriptedReplies
from tests.conftest import cli
from tests.report.viewer.pages import by_id, payload

FILES = Path(__file__).parent.parent / "data" / "files"


def _run_cats(out: Path) -> None:
    done = cli("run", "--task", str(FILES / "cats.yaml"), "--programs", str(FILES / "cats_programs.json"),
               "--out", str(out))
    assert done.returncode == 0, done.stderr


def test_explain_shows_problem_gold_prediction_and_the_refuted_query(tmp_path):
    _run_cats(tmp_path)
    done = cli("explain", str(tmp_path), "--id", "c2", "--task", str(FILES / "cats.yaml"))
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    # The premises first: what the program was written from (issue 49: explain did not show them).
    assert lines[:9] == ["c2 (cats, solver lp)", "context:", "  Tom is a cat.", "  No cat is a dog.",
                         "question: Is the following true? Tom is a dog.",
                         "  A) True", "  B) False", "  C) Unknown", "gold: B   predicted: B   right"]
    assert "query Dog(Tom, True) is refuted: its negation is derived" in lines
    unknown = cli("explain", str(tmp_path), "--id", "c3", "--task", str(FILES / "cats.yaml")).stdout
    assert "query Furry(Tom, True): neither it nor its negation is derived from 2 facts" in unknown


def test_explain_of_a_program_that_did_not_execute(tmp_path):
    _run_cats(tmp_path)
    done = cli("explain", str(tmp_path), "--id", "c4", "--task", str(FILES / "cats.yaml"))
    assert done.returncode == 0, done.stderr
    assert ("gold: A   predicted: A (backup answer: a random letter, as the program did not execute)   right"
            in done.stdout)
    assert "parse: line 10: expected an atom such as Pred(arg, True) in 'Query'" in done.stdout



def test_explain_finds_the_task_file_from_run_json(tmp_path):
    task = tmp_path / "task"
    shutil.copytree(FILES, task)
    done = cli("run", "--task", str(task / "cats.yaml"), "--programs", str(task / "cats_programs.json"),
               "--out", str(tmp_path / "run"))
    assert done.returncode == 0, done.stderr
    assert json.loads((tmp_path / "run" / "cats" / "run.json").read_text())["task_file"] == str(task / "cats.yaml")
    found = cli("explain", str(tmp_path / "run"), "--id", "c2")
    assert found.returncode == 0 and "question: Is the following true? Tom is a dog." in found.stdout, found.stderr
    # Without the task file the verdict is still shown, and the missing question is said plainly.
    (task / "cats.yaml").rename(task / "renamed.yaml")
    bare = cli("explain", str(tmp_path / "run"), "--id", "c2")
    assert bare.returncode == 0 and "gold: B   predicted: B   right" in bare.stdout
    assert f"question: not available: task file {task / 'cats.yaml'} (named in " in bare.stdout
    assert "pass --task" in bare.stdout
    moved = cli("explain", str(tmp_path / "run"), "--id", "c2", "--task", str(task / "renamed.yaml"))
    assert "question: Is the following true? Tom is a dog." in moved.stdout, moved.stderr
    folio = Path(__file__).parents[2] / "logicpipe" / "data" / "tasks" / "folio.json"
    other = cli("explain", str(tmp_path / "run"), "--id", "c2", "--task", str(folio))
    assert other.returncode == 2 and other.stderr.startswith(f"error: --task {folio} describes 'folio', but 'c2'")


def test_explain_shows_the_refined_round_that_answered_and_any_other(tmp_path):
    # The scripted server writes the released-style programs and repairs c4's broken query in round 1.
    programs = json.loads((FILES / "cats_programs.json").read_text())
    repaired = next(p for p in programs if p["id"] == "c1")["raw_logic_programs"][0]
    replies = ScriptedReplies.from_logic_lm(FILES / "cats_programs.json", repairs={"Animal(Tom True)": repaired})
    with FakeOpenAI(replies) as fake:
        done = cli("run", "--task", str(FILES / "cats.yaml"), "--out", str(tmp_path), "--model", "scripted",
                   "--base-url", fake.url, "--llm-timeout", "5")
        assert done.returncode == 0, done.stderr
        assert [r["_logicpipe"]["purpose"] for r in fake.requests].count("refine") == 1
    answered = cli("explain", str(tmp_path), "--id", "c4")
    assert answered.returncode == 0, answered.stderr
    lines = answered.stdout.splitlines()
    assert "gold: A   predicted: A   right" in lines
    assert "round 1 of rounds 0, 1: the round that answered (--round N shows another)" in lines
    assert "verdict: True" in lines and "query Animal(Tom, True) is proved" in lines
    assert not any(line.startswith("parse:") for line in lines)
    first = cli("explain", str(tmp_path), "--id", "c4", "--round", "0").stdout.splitlines()
    assert "round 0 of rounds 0, 1: not the round that answered (round 1 did)" in first
    assert "verdict: none" in first and "parse: line 10: expected an atom such as Pred(arg, True) in 'Query'" in first
    # The viewer shows the same round as the one that answered.
    page = tmp_path / "page.html"
    assert cli("view", str(tmp_path), "--out", str(page)).returncode == 0
    shown = by_id(payload(page.read_text())["problems"], "c4")
    assert shown["refinements"] == 1 and shown["rounds"][1]["verdict"] == "True" and shown["category"] is None
    missing = cli("explain", str(tmp_path), "--id", "c4", "--round", "2")
    assert missing.returncode == 2 and missing.stderr.strip() == "error: problem 'c4' has no round 2; its rounds: 0, 1"


def record(verdict, explanation, solver="smt", error=None):
    return SolveRecord(id="p", dataset="d", solver=solver, verdict=verdict, explanation=explanation, error=error)


def test_smt_verdict_names_the_options_that_also_held():
    lines = verdict_lines(record("B", {"options": {"A": False, "B": True, "C": True, "D": True}, "checks": 8,
                                       "also_held": ["C", "D"]}))
    assert lines == ["verdict: B", "options that hold: B, C, D; do not hold: A",
                     "also held: C, D (the first option that holds, B, is the answer, as in Logic-LM)"]
    none = verdict_lines(record(None, {"options": {"A": False, "B": False}, "checks": 2},
                                error=StageError(category=ErrorCategory.no_answer, message="no option holds")))
    assert none == ["verdict: none", "no_answer: no option holds", "options that hold: none; do not hold: A, B"]


def test_csp_verdict_lists_solutions_readably():
    lines = verdict_lines(record("A", {"solutions": 2, "entailed": "A", "sample": [{"x": 1, "y": 2}, {"x": 1, "y": 3}]},
                                 solver="csp"))
    assert lines == ["verdict: A", "2 solutions; option A holds in every one", "  solution 1: x = 1, y = 2",
                     "  solution 2: x = 1, y = 3"]


def test_fol_false_verdict_says_the_negation_was_proved():
    lines = verdict_lines(record("False", {"proof": "1 p. [assumption].", "proved": "negation",
                                           "attempts": {"conclusion": "exhausted", "negation": "proved"}}, "fol"))
    assert lines == ["verdict: False", "Prover9 attempts: conclusion: exhausted, negation: proved",
                     "the negation of the conclusion is proved, so the conclusion is False"]
    unknown = verdict_lines(record("Unknown", {"attempts": {"conclusion": "exhausted", "negation": "exhausted"}}, "fol"))
    assert unknown == ["verdict: Unknown", "Prover9 attempts: conclusion: exhausted, negation: exhausted",
                       "neither the conclusion nor its negation is proved, so it is Unknown"]


def test_markup_in_model_text_is_shown_as_text(tmp_path):
    programs = json.loads((FILES / "cats_programs.json").read_text())
    text = programs[0]["raw_logic_programs"][0].replace("Tom is a cat.", "Tom [/dim] is [bold]a cat[/]")
    (tmp_path / "programs.json").write_text(json.dumps([{**programs[0], "raw_logic_programs": [text]}]))
    done = cli("run", "--task", str(FILES / "cats.yaml"), "--programs", str(tmp_path / "programs.json"),
               "--out", str(tmp_path / "out"))
    assert done.returncode == 0, done.stderr
    shown = cli("explain", str(tmp_path / "out"), "--id", "c1", "--task", str(FILES / "cats.yaml"))
    assert shown.returncode == 0, shown.stderr
    assert "fact: Tom [/dim] is [bold]a cat[/]" in shown.stdout


def test_explain_finds_a_run_below_the_folder_given_and_names_the_runs_an_id_is_ambiguous_in(tmp_path):
    # `explain results --id ...` where the run's --out was results/deep/cats-run: found at any depth.
    _run_cats(tmp_path / "results" / "deep" / "cats-run")
    done = cli("explain", str(tmp_path / "results"), "--id", "c1")
    assert done.returncode == 0, done.stderr
    assert "c1" in done.stdout
    _run_cats(tmp_path / "results")  # a run of its own there too: c1 is in both, which one is the reader's to say
    done = cli("explain", str(tmp_path / "results"), "--id", "c1")
    assert done.returncode == 2 and done.stderr.count("\n") == 1
    assert "id 'c1' was solved in 2 runs under" in done.stderr and str(tmp_path / "results" / "cats") in done.stderr
    done = cli("explain", str(tmp_path / "results"), "--id", "c9")
    assert done.returncode == 2 and done.stderr.startswith("error: no solve record for id 'c9' under ")
    assert cli("explain", str(tmp_path / "results" / "deep" / "cats-run"), "--id", "c1").returncode == 0
