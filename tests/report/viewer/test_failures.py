"""`logicpipe failures` through the CLI on a real run (see conftest.py)."""

import json
import shutil

from tests.conftest import cli
from tests.report.viewer.conftest import INJECTED_ID
from tests.report.viewer.pages import records


def failures(*args):
    done = cli("failures", *args)
    assert done.returncode == 0, done.stderr
    return done.stdout


def failed(run, dataset):
    return {r["id"]: r["error"] for r in records(run / dataset / "evaluate.jsonl") if r["error"]}


def test_lists_every_failed_problem_with_its_error(viewer_run):
    out = failures(str(viewer_run))
    expected = failed(viewer_run, "ar-lsat")
    assert expected and f"{len(expected)} failed problems" in out
    for problem_id, error in expected.items():
        row = next(line for line in out.splitlines() if f" {problem_id} " in line)
        assert "ar-lsat" in row and error["category"] in row and error["message"][:60] in row
    for problem_id in {r["id"] for r in records(viewer_run / "ar-lsat" / "evaluate.jsonl")} - set(expected):
        assert f" {problem_id} " not in out
    assert INJECTED_ID not in out  # its program failed in round 0 and was repaired in round 1


def test_category_and_dataset_filters(viewer_run):
    parse = [i for i, e in failed(viewer_run, "ar-lsat").items() if e["category"] == "parse"]
    out = failures(str(viewer_run), "--category", "parse")
    assert f"{len(parse)} failed problems" in out and all(f" {i} " in out for i in parse)
    assert "execution" not in out and "no_answer" not in out
    assert "0 failed problems" in failures(str(viewer_run), "--dataset", "LogicalDeduction")


def test_a_long_message_is_cut_to_one_line(viewer_run, tmp_path):
    run = tmp_path / "run"
    shutil.copytree(viewer_run / "ar-lsat", run / "ar-lsat")
    evaluate = records(run / "ar-lsat" / "evaluate.jsonl")
    evaluate[0]["error"]["message"] = "line 2: first line of the error\n  second line\n  third line"
    (run / "ar-lsat" / "evaluate.jsonl").write_text("".join(json.dumps(r) + "\n" for r in evaluate))
    out = failures(str(run))
    assert "line 2: first line of the error ..." in out and "second line" not in out


def test_unknown_category_or_dataset_is_one_error_line(viewer_run):
    done = cli("failures", str(viewer_run), "--category", "syntax")
    assert done.returncode == 2 and "unknown error category 'syntax'" in done.stderr
    done = cli("failures", str(viewer_run), "--dataset", "folio")
    assert done.returncode == 2 and "no dataset 'folio'" in done.stderr and "ar-lsat" in done.stderr


def test_a_redone_record_counts_not_the_one_it_replaced(viewer_run, tmp_path):
    # A run killed before its stages finished leaves a redone record after the one it replaces; the stages
    # read the latest, and so must the failure list: this problem ended with no answer.
    run = tmp_path / "run"
    shutil.copytree(viewer_run / "prontoqa", run / "prontoqa")
    right = next(r for r in records(run / "prontoqa" / "evaluate.jsonl") if r["correct"])
    error = {"category": "no_answer", "message": "the program decided no option"}
    for stage in ("interpret", "evaluate"):
        redone = {**next(r for r in records(run / "prontoqa" / f"{stage}.jsonl") if r["id"] == right["id"]),
                  "final": None, "predicted": None, "error": error}
        with open(run / "prontoqa" / f"{stage}.jsonl", "a") as handle:
            handle.write(json.dumps({**redone, **({"correct": False} if stage == "evaluate" else {})}) + "\n")
    row = next(line for line in failures(str(run), "--category", "no_answer").splitlines() if f" {right['id']} " in line)
    assert "the program decided no option" in row
