import pytest

from logicpipe.cli import main
from logicpipe.core.errors import UsageError
from logicpipe.data import all_datasets
from logicpipe.prompts import PromptSet, extract_program, is_paper, prompts_option
from logicpipe.solvers import execute_task
from logicpipe.testing import FakeOpenAI

EXPECTED = {"prontoqa": "False", "proofwriter": "False", "folio": "Unknown", "logicaldeduction": "A", "ar-lsat": "B",
            "logicbench-bqa": "True", "logicbench-mcqa": "C"}


@pytest.mark.parametrize("spec", all_datasets(), ids=lambda s: s.key)
def test_every_demonstration_is_a_program_our_solver_runs(spec):
    prompt = PromptSet().get(spec.key)
    text = prompt.system + "\n" + prompt.user
    demo = text.split("Program:\n", 1)[1].split("\n\nNow the problem.", 1)[0].split("\n\nExample.", 1)[0]
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


def test_extract_program():
    assert extract_program("Sure!\n```prolog\nFacts:\nA(b, True)\n```\nDone") == "Facts:\nA(b, True)\n"
    assert extract_program("Program:\nFacts:\nA(b, True)") == "Facts:\nA(b, True)\n"


def test_only_the_bare_word_logic_lm_names_the_papers_prompts(data_dir, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert is_paper(prompts_option("logic-lm"))
    for spelled in ("./logic-lm", "logic-lm/"):
        assert prompts_option(spelled) == tmp_path / "logic-lm" and not is_paper(prompts_option(spelled))
    folder = tmp_path / "logic-lm"
    folder.mkdir()
    shipped = PromptSet().get("prontoqa")
    (folder / "prontoqa.txt").write_text(f"{shipped.system}\nMARKER-9.\n=== user ===\n{shipped.user}")
    with FakeOpenAI(lambda body: "no program") as fake:
        for spelled in ("./logic-lm", "logic-lm/"):
            main_exit(capsys, "run", "-d", "prontoqa", "--data-dir", str(data_dir), "--model", "m", "--base-url",
                      fake.url, "--prompts", spelled, "--limit", "1", "--max-rounds", "0", "--out",
                      str(tmp_path / spelled.strip("./")), "--llm-cache", str(tmp_path / "cache.sqlite"))
        formulate = [r for r in fake.requests if r["_logicpipe"]["purpose"] == "formulate"]
        assert len(formulate) == 1 and "MARKER-9." in formulate[0]["messages"][0]["content"]  # the 2nd is cached


def main_exit(capsys, *args: str) -> None:
    try:
        main(list(args))
    except SystemExit as exc:
        assert not exc.code, capsys.readouterr().err


def test_a_folder_template_must_keep_the_shipped_variables(tmp_path):
    (tmp_path / "folio.txt").write_text("Translate.\n=== user ===\n{{context}}\n")
    with pytest.raises(UsageError, match=r"folio.txt lacks \{\{question\}\}, which the stage fills in"):
        PromptSet(tmp_path).get("folio")
    (tmp_path / "empty").mkdir()
    with pytest.raises(UsageError, match="holds no template"):
        PromptSet(tmp_path / "empty")


def test_a_folder_that_overrides_no_template_the_command_uses_is_refused(data_dir, tmp_path, capsys):
    folder = tmp_path / "prompts"
    folder.mkdir()
    shipped = PromptSet().get("prontoqa")
    (folder / "prontoqa.txt").write_text(f"{shipped.system}\n=== user ===\n{shipped.user}")
    common = ["-d", "prontoqa", "--data-dir", str(data_dir), "--model", "m", "--prompts", str(folder), "--limit", "1"]
    with FakeOpenAI(lambda body: "no program") as fake:
        for command, could in ((["baseline", "--mode", "cot"], "cot.txt"),
                               (["interpret", "--backup", "cot"], "cot.txt"),
                               (["refine", "--refine", "semantic"], "compare.txt, guide-lp.txt, refine.txt, revise.txt")):
            with pytest.raises(SystemExit) as exc:
                main([*command, *common, "--base-url", fake.url, "--out", str(tmp_path / "out")])
            lines = capsys.readouterr().err.strip().splitlines()
            assert exc.value.code == 2 and lines == [
                f"error: prompt folder {folder} overrides no template this run uses (it holds prontoqa.txt); "
                f"the names it could override (case matters): {could}"]
        assert fake.requests == []
    assert not (tmp_path / "out").exists()


def test_the_listed_problem_fields_are_those_filled():
    from logicpipe.core.records import Problem
    from logicpipe.prompts import PROBLEM_FIELDS, problem_fields

    problem = Problem(id="p", context="A is B. B is C.", question="Is A C?", options=["A) True", "B) False"],
                      answer="A")
    assert tuple(problem_fields(problem)) == PROBLEM_FIELDS
