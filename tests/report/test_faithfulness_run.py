"""`logicpipe faithfulness` through the CLI on a replay of Logic-LM's released gpt-4 FOLIO programs (the
first 6 problems), and on a run whose problems each voted over two programs (gpt-4's and
text-davinci-003's, written into the replay's records as samples). The gold programs left out are the
audit's (tests/report/test_gold_reference.py names them). Needs FOLIO v0.0's files ($LOGICPIPE_DATASETS)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from logicpipe.core.records import text_sha
from tests.conftest import cli
from tests.report.test_gold_reference import DATASETS, ENV

pytestmark = pytest.mark.skipif(DATASETS is None, reason="FOLIO v0.0 not found: set LOGICPIPE_DATASETS")


@pytest.fixture(scope="module")
def replay(data_dir, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("gpt4")
    done = cli("run", "-d", "folio", "--programs", str(data_dir / "programs" / "FOLIO_dev_gpt-4.json"), "--limit", "6",
               "--data-dir", str(data_dir), "--out", str(out), "--workers", "2", env=ENV)
    assert done.returncode == 0, done.stderr
    return out


def faithfulness(run: Path, data_dir: Path, *extra: str) -> dict:
    done = cli("faithfulness", str(run), "--data-dir", str(data_dir), "--format", "json", *extra, env=ENV)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


@pytest.fixture(scope="module")
def single(replay, data_dir) -> dict:
    return faithfulness(replay, data_dir)


def test_the_released_programs_are_scored_and_flawed_gold_left_out(replay, single):
    report = single
    # FOLIO_dev_2's gold conclusion does not parse, FOLIO_dev_5's gold program proves C, not the label.
    assert {(e["id"], e["kind"]) for e in report["excluded"]} == {("FOLIO_dev_2", "does_not_parse"),
                                                                  ("FOLIO_dev_5", "other_label")}
    rows = report["rows"]
    assert len(rows) == 4 and {r["id"] for r in rows}.isdisjoint({"FOLIO_dev_2", "FOLIO_dev_5"})
    totals = report["totals"]
    scored = [r for r in rows if not r["result"].get("error")]
    assert totals["scored"] == len(scored) == 4
    recall = [s for r in scored for s in r["result"]["recall"]]
    assert totals["premise_recall"]["yes"] == recall.count("yes") and totals["premise_recall"]["no"] == recall.count("no")
    assert totals["right_for_wrong_reason"] == sum(1 for r in scored if r["correct"] and r["result"]["equivalent"] == "no")
    # FOLIO_dev_0: gpt-4 wrote "either ... or" as ⊕ where the gold formula has ∨; the sentence is named, the
    # gold formula does not imply the model's, and a one-thing world where both hold says why.
    first = next(r for r in rows if r["id"] == "FOLIO_dev_0")["result"]
    wrong = [f for f in first["formulas"] if f["equivalent"] == "no"]
    assert [f["gold_formula"] for f in wrong][:1] == ["∀x (TalentShows(x) ∨ Inactive(x))"]
    assert "does not imply the model's: a world of 1 thing" in wrong[0]["how"]
    assert first["mapping"]["predicates"]["Perform/1"] == "TalentShows/1"
    assert 0 <= totals["le"] <= 1 and 0 <= totals["bleu"] <= 1
    lines = (replay / "folio" / "faithfulness.jsonl").read_text(encoding="utf-8").splitlines()
    assert len(lines) == 6  # four scored programs, two excluded


def test_the_totals_go_to_metrics_json_and_the_viewer(replay, single, data_dir, tmp_path):
    metrics = json.loads((replay / "folio" / "metrics.json").read_text())
    held = metrics["faithfulness"]
    assert {k: held[k] for k in single["totals"]} == single["totals"]
    assert held["excluded"] == ["FOLIO_dev_2", "FOLIO_dev_5"] and metrics["total"] == 6  # the run's own figures kept
    page = tmp_path / "view.html"
    done = cli("view", str(replay), "--out", str(page), "--data-dir", str(data_dir), env=ENV)
    assert done.returncode == 0, done.stderr
    html = page.read_text(encoding="utf-8")
    recall = single["totals"]["premise_recall"]
    assert f"premise recall {recall['rate']:.2f}% ({recall['yes']} yes, {recall['no']} no" in html
    assert f"right for the wrong reason: {single['totals']['right_for_wrong_reason']}" in html


def test_the_table_names_the_figures(replay, data_dir):
    done = cli("faithfulness", str(replay), "--data-dir", str(data_dir), "--problems", env=ENV)
    assert done.returncode == 0, done.stderr
    for said in ("premise recall", "premise precision", "conclusion equivalent", "right for the wrong reason",
                 "LE", "BLEU", "FOLIO_dev_5", "other label"):
        assert said in done.stdout, said


def test_each_sample_is_scored_and_the_voted_one_marked(replay, single, data_dir, tmp_path):
    run = tmp_path / "two"
    shutil.copytree(replay, run)
    davinci = {r["id"]: r["raw_logic_programs"][0]
               for r in json.loads((data_dir / "programs" / "FOLIO_dev_text-davinci-003.json").read_text())}
    folder = run / "folio"
    formulated = [json.loads(line) for line in (folder / "formulate.jsonl").read_text().splitlines()]
    for record in formulated:
        record["samples"] = [record["program"], davinci[record["id"]]]
    (folder / "formulate.jsonl").write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in formulated))
    solved = [json.loads(line) for line in (folder / "solve.jsonl").read_text().splitlines()]
    for record in solved:  # the first sample did not parse: the vote is the second's
        record["program"] = text_sha(*next(f["samples"] for f in formulated if f["id"] == record["id"]))
        record["explanation"] = {**(record["explanation"] or {}), "votes": ["parse", record["verdict"]]}
    (folder / "solve.jsonl").write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in solved))
    (folder / "faithfulness.jsonl").unlink()
    report = faithfulness(run, data_dir)
    rows = report["rows"]
    assert len(rows) == 8 and sorted({r["sample"] for r in rows}) == [0, 1]
    assert all(r["voted"] == (r["sample"] == 1) for r in rows)
    assert all(r["correct"] is None for r in rows if r["sample"] == 0)  # it gave no answer
    assert report["samples_totals"]["programs"] == 8 and report["totals"]["programs"] == 4
    # Each sample is scored as its own program: gpt-4's as in the single run, text-davinci-003's voted.
    by_sample = {(r["id"], r["sample"]): r["result"] for r in rows}
    for row in single["rows"]:
        assert by_sample[(row["id"], 0)] == row["result"]
    alone = [r["result"] for r in rows if r["sample"] == 1]
    assert report["totals"]["premise_recall"]["yes"] == sum(r.get("recall", []).count("yes") for r in alone)


def test_a_run_of_another_formalism_is_refused_in_one_line(replay, data_dir, tmp_path):
    run = tmp_path / "lp"
    shutil.copytree(replay, run)
    identity = json.loads((run / "folio" / "run.json").read_text())
    identity["stages"]["solve"]["solver"] = "lp"
    (run / "folio" / "run.json").write_text(json.dumps(identity))
    (run / "folio" / "faithfulness.jsonl").unlink(missing_ok=True)
    done = cli("faithfulness", str(run), "--data-dir", str(data_dir), env=ENV)
    assert done.returncode != 0 and "is a lp run" in done.stderr and len(done.stderr.strip().splitlines()) == 1
    assert not (run / "folio" / "faithfulness.jsonl").exists()  # refused before anything is written


def test_bad_input_is_one_line(tmp_path, data_dir):
    done = cli("faithfulness", str(tmp_path / "nowhere"), "--format", "json", env=ENV)
    assert done.returncode != 0 and "not found" in done.stderr and len(done.stderr.strip().splitlines()) == 1
    done = cli("faithfulness", str(tmp_path), "--format", "xml", env=ENV)
    assert done.returncode != 0 and "--format" in done.stderr
