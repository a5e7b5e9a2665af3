"""Every command finds runs at any depth by one rule (stages/store.py find_runs): a folder of several
runs (a kb batch, a compare's OUT/<formalism>/<dataset>/, a run's --out) is viewed, listed, exported
and explained through the real CLI."""

import json
import shutil

import pytest

from logicpipe.stages.store import find_runs
from logicpipe.testing import FakeOpenAI
from tests.conftest import ROOT, cli
from tests.kb.test_modes import CAMPUS, EXAMPLE, NOW, QUESTIONS, model_args, replies
from tests.report.viewer.pages import by_id, payload

FILES = ROOT / "tests" / "data" / "files"


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    """results/ holding a kb batch, a run's --out (cats-run/cats/) and a compare-like OUT/fol/cats/."""
    root = tmp_path_factory.mktemp("find")
    results = root / "results"
    cats = ["run", "--task", str(FILES / "cats.yaml"), "--programs", str(FILES / "cats_programs.json")]
    done = cli(*cats, "--out", str(results / "cats-run"))
    assert done.returncode == 0, done.stderr
    shutil.copytree(results / "cats-run" / "cats", results / "compare" / "fol" / "cats")
    questions = root / "questions.jsonl"
    questions.write_text((EXAMPLE / "questions.jsonl").read_text())
    with FakeOpenAI(replies()) as server:
        done = cli("kb", "ask", str(CAMPUS), "--questions", str(questions), "--out", str(results / "kb-batch"),
                   *NOW, *model_args(server, root))
    assert done.returncode == 0, done.stderr
    return results


def test_find_runs_is_one_rule_at_any_depth(results):
    labels = [label for label, _ in find_runs(results)]
    assert labels == ["cats-run/cats", "compare/fol/cats", "kb-batch"]
    assert [label for label, _ in find_runs(results / "compare")] == ["fol/cats"]
    assert find_runs(results / "kb-batch") == [("kb-batch", results / "kb-batch")]


def test_view_of_a_folder_of_runs_shows_every_run_and_the_kb_batchs_goals_and_trees(results, tmp_path):
    page = tmp_path / "page.html"
    done = cli("view", str(results), "--out", str(page))
    assert done.returncode == 0, done.stderr
    html = page.read_text()
    for label in ("cats-run/cats", "compare/fol/cats", "kb-batch"):
        assert f"<td>{label}</td>" in html
    problems = payload(html)["problems"]
    assert {p["dataset"] for p in problems} == {"cats-run/cats", "compare/fol/cats", "kb-batch"}
    asked = {p["id"]: p for p in problems if p["dataset"] == "kb-batch"}
    assert sorted(asked) == sorted(QUESTIONS)
    records = {r["id"]: r for r in map(json.loads, (results / "kb-batch" / "ask.jsonl").read_text().splitlines())}
    q05 = asked["q05"]
    assert q05["question"] == records["q05"]["question"] and q05["predicted"] == "ANSWER FOR q05"
    goal = q05["rounds"][0]
    assert goal["program"] == records["q05"]["goals"][0] and goal["verdict"] == "yes: proved"
    assert goal["explanation"]["solution 1"] == records["q05"]["results"][0]["solutions"][0]["tree"]
    assert asked["q06"]["rounds"][0]["verdict"].startswith("no: not derivable")
    # The batch alone, and the compare's OUT alone.
    done = cli("view", str(results / "kb-batch"), "--out", str(page))
    assert done.returncode == 0, done.stderr
    assert len(payload(page.read_text())["problems"]) == len(QUESTIONS)
    done = cli("view", str(results / "compare"), "--out", str(page))
    assert done.returncode == 0, done.stderr
    assert by_id(payload(page.read_text())["problems"], "c1")["dataset"] == "fol/cats"


def test_status_failures_and_export_find_the_same_runs(results, tmp_path):
    done = cli("status", str(results), "--json")
    assert done.returncode == 0, done.stderr
    assert [f["label"] for f in json.loads(done.stdout)] == ["cats-run/cats", "compare/fol/cats", "kb-batch"]
    done = cli("failures", str(results))
    assert done.returncode == 0, done.stderr
    assert done.stdout.count("parse") == 2  # the one parse failure of each cats run; the kb batch has no programs
    # Two cats runs: export names them; one: it is found three levels down.
    done = cli("export", str(results), "--programs", str(tmp_path / "x.json"), "--dataset", "cats")
    assert done.returncode == 2 and "cats-run/cats" in done.stderr and "compare/fol/cats" in done.stderr
    done = cli("export", str(results / "compare"), "--programs", str(tmp_path / "x.json"), "--dataset", "cats")
    assert done.returncode == 0, done.stderr
    assert len(json.loads((tmp_path / "x.json").read_text())) == 4  # every problem had a program
    done = cli("export", str(results / "kb-batch"), "--programs", str(tmp_path / "y.json"))
    assert done.returncode == 2 and "holds only kb batches" in done.stderr and done.stderr.count("\n") == 1
