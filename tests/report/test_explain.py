from pathlib import Path

from logicpipe.core.records import ErrorCategory, SolveRecord, StageError
from logicpipe.report.render import verdict_lines
from tests.conftest import cli

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
    assert lines[:6] == ["c2 (cats, solver lp)", "question: Is the following true? Tom is a dog.",
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
    # Without the task file the verdict is still shown, and the missing question is said plainly.
    bare = cli("explain", str(tmp_path), "--id", "c4")
    assert bare.returncode == 0 and "question: not available: unknown dataset 'cats'" in bare.stdout


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
    import json

    programs = json.loads((FILES / "cats_programs.json").read_text())
    text = programs[0]["raw_logic_programs"][0].replace("Tom is a cat.", "Tom [/dim] is [bold]a cat[/]")
    (tmp_path / "programs.json").write_text(json.dumps([{**programs[0], "raw_logic_programs": [text]}]))
    done = cli("run", "--task", str(FILES / "cats.yaml"), "--programs", str(tmp_path / "programs.json"),
               "--out", str(tmp_path / "out"))
    assert done.returncode == 0, done.stderr
    shown = cli("explain", str(tmp_path / "out"), "--id", "c1", "--task", str(FILES / "cats.yaml"))
    assert shown.returncode == 0, shown.stderr
    assert "fact: Tom [/dim] is [bold]a cat[/]" in shown.stdout
