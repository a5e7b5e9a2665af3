import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from logicpipe.core.errors import DataError
from logicpipe.data import check_problems, load_problems, load_task_file
from tests.conftest import ROOT, cli

FILES = Path(__file__).parent / "files"


def write_task(folder: Path, **fields) -> Path:
    path = folder / "task.json"
    path.write_text(json.dumps({"name": "mine", "formalism": "lp", "prompt": "proofwriter", **fields}))
    return path


def test_jsonl_task_runs_end_to_end_with_replayed_programs(tmp_path):
    done = cli("run", "--task", str(FILES / "cats.yaml"), "--programs", str(FILES / "cats_programs.json"),
               "--out", str(tmp_path))
    assert done.returncode == 0, done.stderr
    metrics = json.loads((tmp_path / "cats" / "metrics.json").read_text())
    assert (metrics["dataset"], metrics["total"], metrics["executed"]) == ("cats", 4, 3)
    assert metrics["exe_acc"] == 100.0 and metrics["failures"] == {"parse": 1}
    evaluated = {json.loads(line)["id"]: json.loads(line) for line in
                 (tmp_path / "cats" / "evaluate.jsonl").read_text().splitlines()}
    assert {k: (v["gold"], v["predicted"]) for k, v in evaluated.items()} == {
        "c1": ("A", "A"), "c2": ("B", "B"), "c3": ("C", "C"), "c4": ("A", None)}
    # The summary is on stdout, so `logicpipe run ... > out.txt` keeps it; stderr has no table.
    assert "cats (dev, replay:cats_programs.json)" in done.stdout and "Exe_Rate" in done.stdout
    assert "Exe_Rate" not in done.stderr


def test_summary_redirected_to_a_file_keeps_the_table(tmp_path):
    target = tmp_path / "out.txt"
    command = (f"{sys.executable} -m logicpipe run --task {FILES / 'cats.yaml'} --programs "
               f"{FILES / 'cats_programs.json'} --out {tmp_path / 'run'} > {target}")
    done = subprocess.run(command, shell=True, cwd=ROOT, capture_output=True, text=True, env=dict(os.environ))
    assert done.returncode == 0, done.stderr
    assert "accuracy (random backup)" in target.read_text()


def test_validate_accepts_a_good_task():
    done = cli("validate", "--task", str(FILES / "cats.yaml"))
    assert done.returncode == 0, done.stderr
    assert "cats dev: 4 problems, answer space truth, solver lp, prompt proofwriter: ok" in done.stdout


def _lines(done):
    assert done.returncode == 2
    return [line for line in done.stderr.splitlines() if line.strip()]


def test_validate_names_the_row_of_each_mistake(tmp_path):
    rows = [{"id": "p1", "context": "c", "question": "q", "options": ["A) yes", "B) no"], "answer": "A"},
            {"id": "p2", "context": "c", "options": ["A) yes", "B) no"], "answer": "B"},
            {"id": "p1", "context": "c", "question": "q", "options": ["A) yes", "B) no"], "answer": "B"},
            {"id": "p4", "context": "c", "question": "q", "options": ["A) yes", "B) no"], "answer": "D"}]
    (tmp_path / "rows.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    task = write_task(tmp_path, source={"format": "jsonl", "path": "rows.jsonl"})
    lines = _lines(cli("validate", "--task", str(task)))
    data = tmp_path / "rows.jsonl"
    assert lines == [f"error: {data}: row 2 (id 'p2'): no field 'question'",
                     f"error: {data}: row 3 (id 'p1'): duplicate id, first used by row 1",
                     f"error: {data}: row 4 (id 'p4'): answer 'D' is not one of the options A, B"]
    # A run refuses the same data with the first mistake, on one line.
    run = cli("run", "--task", str(task), "--programs", str(FILES / "cats_programs.json"), "--out", str(tmp_path))
    assert _lines(run) == [f"error: {data}: row 2 (id 'p2'): no field 'question' (and 2 more; see `logicpipe validate`)"]


def test_a_wrong_answer_space_is_one_line(tmp_path):
    (tmp_path / "rows.jsonl").write_text(json.dumps({"id": "x", "context": "c", "question": "q", "answer": "A"}) + "\n")
    task = write_task(tmp_path, source={"format": "jsonl", "path": "rows.jsonl"}, answer_space="truth",
                      fields={"options": None})
    assert _lines(cli("validate", "--task", str(task))) == [
        f"error: {tmp_path / 'rows.jsonl'}: row 1 (id 'x'): answer 'A' is not True, False or Unknown"]
    bad = write_task(tmp_path, source={"format": "jsonl", "path": "rows.jsonl"}, answer_space="yes-no")
    line, = _lines(cli("validate", "--task", str(bad)))
    assert line.startswith(f"error: {bad}: answer_space: Input should be 'options', 'truth' or 'free'")


def test_csv_with_option_templates(tmp_path):
    (tmp_path / "dev.csv").write_text("key,story,ask,a,b,gold\n"
                                      "k1,\"Ann is tall.\",Who is tall?,Ann,Bob,A\n"
                                      "k2,\"Bob is tall.\",Who is tall?,Ann,Bob,(B)\n")
    task = write_task(tmp_path, source={"format": "csv", "path": "{split}.csv"}, formalism="csp",
                      fields={"id": "key", "context": "Story: {story}", "question": "ask",
                              "options": ["A) {a}", "B) {b}"], "answer": "gold"})
    problems = load_problems(load_task_file(task), "dev")
    assert [(p.id, p.context, p.options, p.answer) for p in problems] == [
        ("k1", "Story: Ann is tall.", ["A) Ann", "B) Bob"], "A"), ("k2", "Story: Bob is tall.", ["A) Ann", "B) Bob"], "B")]


def test_json_file_with_a_records_key(tmp_path):
    (tmp_path / "all.json").write_text(json.dumps({"items": [{"id": 7, "context": "c", "question": "q",
                                                              "answer": "true"}]}))
    task = write_task(tmp_path, source={"format": "json", "path": "all.json", "records": "items"},
                      answer_space="truth", fields={"options": None})
    problem, = load_problems(load_task_file(task), "dev")
    assert (problem.id, problem.options, problem.answer) == ("7", ["A) True", "B) False", "C) Unknown"], "A")


def test_templates_take_plain_field_names_only(tmp_path):
    (tmp_path / "rows.jsonl").write_text(json.dumps({"id": "x", "context": "c", "question": "q"}) + "\n")
    task = write_task(tmp_path, source={"format": "jsonl", "path": "rows.jsonl"}, answer_space="free",
                      fields={"context": "{context.__class__}", "options": None, "answer": None})
    problems, issues = check_problems(load_task_file(task), "dev")
    assert problems == [] and issues == [
        f"{tmp_path / 'rows.jsonl'}: row 1 (id 'x'): template '{{context.__class__}}': "
        "'{context.__class__}' is not a plain field name"]


def test_task_file_mistakes_name_the_key(tmp_path):
    task = write_task(tmp_path, source={"format": "jsonl", "path": "rows.jsonl"}, formalism="prolog")
    with pytest.raises(DataError, match=r"task.json: formalism: unknown formalism 'prolog'; choose from lp, fol, csp, smt, asp"):
        load_task_file(task)
    with pytest.raises(DataError, match="data file .*missing.jsonl not found"):
        load_problems(load_task_file(write_task(tmp_path, source={"format": "jsonl", "path": "missing.jsonl"})), "dev")


HF_ROWS = [{"uid": "h1", "facts": "Ann is kind.", "q": "Is Ann kind?", "verdict": "True"},
           {"uid": "h2", "facts": "Ann is kind.", "q": "Is Ann cruel?", "verdict": "Unknown"}]
HF_FIELDS = {"id": "uid", "context": "facts", "question": "q", "options": None, "answer": "verdict"}


def test_hugging_face_dataset_saved_to_disk(tmp_path):
    datasets = pytest.importorskip("datasets")
    datasets.DatasetDict({"validation": datasets.Dataset.from_list(HF_ROWS)}).save_to_disk(str(tmp_path / "saved"))
    task = write_task(tmp_path, source={"format": "hf", "path": "saved"}, splits=["validation"],
                      answer_space="truth", fields=HF_FIELDS)
    problems = load_problems(load_task_file(task), "validation")
    assert [(p.id, p.answer) for p in problems] == [("h1", "A"), ("h2", "C")]
    done = cli("validate", "--task", str(task))
    assert done.returncode == 0 and "mine validation: 2 problems" in done.stdout, done.stderr


_HF_LOAD = """
import json, sys
from logicpipe.data import load_problems, load_task_file
spec = load_task_file(sys.argv[1])
print(json.dumps([[p.id, p.question, p.answer] for p in load_problems(spec, "train")]))
"""


@pytest.mark.slow  # imports datasets and fills its cache
def test_hugging_face_dataset_from_the_local_cache_offline(tmp_path):
    pytest.importorskip("datasets")
    (tmp_path / "rows.jsonl").write_text("".join(json.dumps(r) + "\n" for r in HF_ROWS))
    task = write_task(tmp_path, source={"format": "hf", "path": "json", "data_files": "rows.jsonl"},
                      splits=["train"], answer_space="truth", fields=HF_FIELDS)
    env = {**os.environ, "HF_HOME": str(tmp_path / "hf"), "HF_DATASETS_CACHE": str(tmp_path / "hf" / "datasets")}
    first = subprocess.run([sys.executable, "-c", _HF_LOAD, str(task)], env=env, capture_output=True, text=True,
                           cwd=ROOT, timeout=300)
    assert first.returncode == 0, first.stderr
    assert any((tmp_path / "hf" / "datasets").iterdir())  # load_dataset built its cache there
    cached = sorted(p.relative_to(tmp_path) for p in (tmp_path / "hf").rglob("*.arrow"))
    # The same call offline is answered from that cache (no new build).
    offline = subprocess.run([sys.executable, "-c", _HF_LOAD, str(task)], capture_output=True, text=True,
                             env={**env, "HF_DATASETS_OFFLINE": "1", "HF_HUB_OFFLINE": "1"}, cwd=ROOT, timeout=300)
    assert offline.returncode == 0, offline.stderr
    assert cached and sorted(p.relative_to(tmp_path) for p in (tmp_path / "hf").rglob("*.arrow")) == cached
    assert json.loads(offline.stdout) == json.loads(first.stdout) == [["h1", "Is Ann kind?", "A"],
                                                                      ["h2", "Is Ann cruel?", "C"]]


def test_a_run_names_a_dataset_or_a_task_file_not_both(tmp_path):
    for args in ([], ["--dataset", "folio", "--task", str(FILES / "cats.yaml")]):
        done = cli("run", *args, "--programs", str(FILES / "cats_programs.json"), "--out", str(tmp_path))
        assert _lines(done) == ["error: invalid option: name a built-in --dataset or a --task file (one of the two)"]


def test_a_changed_task_file_does_not_resume_the_old_directory(tmp_path):
    task = tmp_path / "cats.yaml"
    task.write_text((FILES / "cats.yaml").read_text().replace("cats.jsonl", str(FILES / "cats.jsonl")))
    args = ["run", "--task", str(task), "--programs", str(FILES / "cats_programs.json"), "--out", str(tmp_path / "out")]
    assert cli(*args).returncode == 0
    assert cli(*args).returncode == 0  # the same file resumes
    task.write_text(task.read_text().replace("Is the following true? {claim}", "{claim}"))
    line, = _lines(cli(*args))
    assert "was made with other options (task differ)" in line
    assert cli(*args, "--overwrite").returncode == 0


def test_validate_checks_every_split_there_is_and_lists_the_missing_ones(tmp_path):
    shutil.copy(FILES / "cats.jsonl", tmp_path / "dev.jsonl")
    task = write_task(tmp_path, source={"format": "jsonl", "path": "{split}.jsonl"}, splits=["train", "dev", "test"],
                      answer_space="truth", fields={"id": "qid", "context": "{premises}", "question": "claim",
                                                    "options": None, "answer": "label"})
    done = cli("validate", "--task", str(task))
    assert done.returncode == 2
    assert done.stdout.splitlines() == ["mine dev: 4 problems, answer space truth, solver lp, prompt proofwriter: ok"]
    assert done.stderr.splitlines() == [f"error: task mine: data file {tmp_path / 'train.jsonl'} not found",
                                        f"error: task mine: data file {tmp_path / 'test.jsonl'} not found",
                                        "error: mine: 2 of 3 splits could not be read: train, test"]


def test_a_misspelt_key_is_one_line_with_a_suggestion(tmp_path):
    # A misspelt required key is reported as the misspelling, not as the key that then seems absent.
    task = tmp_path / "task.json"
    task.write_text(json.dumps({"name": "mine", "formalsim": "lp", "source": {"format": "jsonl", "path": "x"}}))
    for args in (["validate"], ["run", "--programs", str(FILES / "cats_programs.json"), "--out", str(tmp_path / "out")]):
        line, = _lines(cli(*args, "--task", str(task)))
        assert line.startswith(f"error: {task}: formalsim: unknown key (did you mean 'formalism'?); "
                               "the keys are name, title"), line
    task.write_text(json.dumps({"name": "mine", "formalism": "lp", "source": {"format": "jsonl", "pth": "x"}}))
    line, = _lines(cli("validate", "--task", str(task)))
    assert line == (f"error: {task}: source.pth: unknown key (did you mean 'path'?); "
                    "the keys are format, path, folder, config, data_files, records")
    task.write_text(json.dumps({"name": "mine", "formalism": "lpp", "source": {"format": "jsonl", "path": "x"}}))
    line, = _lines(cli("validate", "--task", str(task)))
    assert line == f"error: {task}: formalism: unknown formalism 'lpp' (did you mean 'lp'?); choose from lp, fol, csp, smt, asp"
    line, = _lines(cli("validate", "--task", str(FILES / "cats.yaml"), "--split", "devv"))
    assert line == "error: dataset cats has no split 'devv' (did you mean 'dev'?); choose from dev"
    assert not (tmp_path / "out").exists()


def test_an_unknown_prompt_exits_2_with_the_prompts_there_are(tmp_path):
    (tmp_path / "rows.jsonl").write_text((FILES / "cats.jsonl").read_text())
    task = write_task(tmp_path, source={"format": "jsonl", "path": "rows.jsonl"}, prompt="proofwritter")
    line, = _lines(cli("validate", "--task", str(task)))
    assert line.startswith("error: no prompt 'proofwritter' in the package (did you mean 'proofwriter'?); "
                           "choose from ar-lsat, ar-lsat-asp, compare, cot, folio,"), line
    mine = write_task(tmp_path, source={"format": "jsonl", "path": "rows.jsonl"}, prompt="mine", answer_space="truth",
                      fields={"id": "qid", "context": "{premises}", "question": "claim", "options": None,
                              "answer": "label"})
    line, = _lines(cli("run", "--task", str(mine), "--model", "m", "--base-url", "http://127.0.0.1:9/v1",
                       "--out", str(tmp_path / "out")))
    assert "no prompt 'mine' in the package" in line and "proofwriter" in line
    assert not (tmp_path / "out").exists()


def test_a_moved_task_file_resumes_and_run_json_follows_it(tmp_path):
    shutil.copytree(FILES, tmp_path / "a")
    out = tmp_path / "out"
    args = ["--programs", str(FILES / "cats_programs.json"), "--out", str(out)]
    assert cli("run", "--task", str(tmp_path / "a" / "cats.yaml"), *args).returncode == 0
    written = {p.name: p.stat().st_mtime_ns for p in (out / "cats").glob("*.jsonl")}
    (tmp_path / "a").rename(tmp_path / "b")
    again = cli("run", "--task", str(tmp_path / "b" / "cats.yaml"), *args)
    assert again.returncode == 0, again.stderr  # the same definition: the path is recorded, not compared
    assert {p.name: p.stat().st_mtime_ns for p in (out / "cats").glob("*.jsonl")} == written  # resumed as it was
    assert json.loads((out / "cats" / "run.json").read_text())["task_file"] == str(tmp_path / "b" / "cats.yaml")
