"""FOLIO's gold programs (FOLIO v0.0's own FOL annotations, `--programs gold`) through the CLI: the replay's
figures, the audit of the annotations, and a run's agreement with them. Needs FOLIO v0.0's files
($LOGICPIPE_DATASETS; the Makefile points it at ../shared/datasets) and Logic-LM's FOLIO dev set."""

import json
import os
from pathlib import Path

import pytest

from tests.conftest import ROOT, cli
from tests.report.viewer.pages import payload

# The dev problems whose gold annotations FOLIO v0.0 writes with a syntax error (an extra ')', a '.' in
# a name, '⟷', a ',' for '∧'), and those whose gold program proves another option than the label.
NOT_PARSING = {2: "conclusion", 66: "premise 3", 67: "premise 3", 68: "premise 3", 87: "premise 3",
               108: "premise 6", 109: "premise 6", 110: "premise 6"}
OTHER_LABEL = {5: "C", 27: "C", 29: "B", 47: "C", 112: "C", 114: "C", 138: "C", 139: "C"}


def _datasets() -> Path | None:
    chosen = os.environ.get("LOGICPIPE_DATASETS") or str(ROOT.parent / "shared" / "datasets")
    return Path(chosen) if (Path(chosen) / "folio-v0.0" / "folio-validation.jsonl").is_file() else None


DATASETS = _datasets()
pytestmark = pytest.mark.skipif(DATASETS is None, reason="FOLIO v0.0 not found: set LOGICPIPE_DATASETS")
ENV = {"LOGICPIPE_DATASETS": str(DATASETS)}


def lines(path: Path) -> dict[str, dict]:
    return {r["id"]: r for r in map(json.loads, path.read_text(encoding="utf-8").splitlines())}


def dev(number: int) -> str:
    return f"FOLIO_dev_{number}"


@pytest.fixture(scope="module")
def gold_run(data_dir, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("gold")
    done = cli("run", "-d", "folio", "--programs", "gold", "--data-dir", str(data_dir), "--out", str(out),
               "--workers", "2", env=ENV)
    assert done.returncode == 0, done.stderr
    return out / "folio"


def test_the_gold_replay_gives_the_issues_figures_with_a_typed_record_per_problem(gold_run):
    metrics = json.loads((gold_run / "metrics.json").read_text())
    assert (metrics["total"], metrics["executed"], metrics["exe_rate"], metrics["exe_acc"]) == (204, 196, 96.08, 95.92)
    assert metrics["failures"] == {"parse": 8} and metrics["source"] == "replay:folio-dev.gold.jsonl"
    assert "gold_agreement" not in metrics  # the gold programs are not held against themselves
    for stage in ("formulate", "solve", "interpret", "evaluate"):
        assert len(lines(gold_run / f"{stage}.jsonl")) == 204, stage
    solved = lines(gold_run / "solve.jsonl")
    failed = {pid: r["error"]["category"] for pid, r in solved.items() if r["error"]}
    assert failed == {dev(n): "parse" for n in NOT_PARSING}
    # The replayed program is the annotation: FOLIO_dev_66's premise 3 as FOLIO v0.0 writes it.
    assert "ValuedAt(yalesendowment, y42.3billion)" in lines(gold_run / "formulate.jsonl")[dev(66)]["program"]
    evaluated = lines(gold_run / "evaluate.jsonl")
    wrong = {pid: r["predicted"] for pid, r in evaluated.items() if r["executed"] and not r["correct_executed"]}
    assert wrong == {dev(n): letter for n, letter in OTHER_LABEL.items()}


def test_the_audit_lists_the_annotations_that_do_not_parse_and_the_other_labels(data_dir, tmp_path):
    done = cli("audit", "-d", "folio", "--data-dir", str(data_dir), "--out", str(tmp_path), env=ENV)
    assert done.returncode == 0, done.stderr
    assert "of 204 gold programs: 8 do not parse, 8 prove another label, 0 are inconsistent, 0 do not execute" \
        in " ".join(done.stdout.split())
    flagged = lines(tmp_path / "gold" / "folio" / "audit.jsonl")
    assert {pid: r["kind"] for pid, r in flagged.items()} == {
        **{dev(n): "does_not_parse" for n in NOT_PARSING}, **{dev(n): "other_label" for n in OTHER_LABEL}}
    for number, annotation in NOT_PARSING.items():  # each names the annotation and the parser's reason
        assert flagged[dev(number)]["reason"].startswith(annotation), flagged[dev(number)]
    assert "unexpected character '⟷'" in flagged[dev(87)]["reason"]
    assert all(flagged[dev(n)]["proved"] == letter for n, letter in OTHER_LABEL.items())


def test_a_run_of_gpt4s_programs_is_held_against_the_gold_verdicts(data_dir, gold_run, tmp_path):
    # The first 60 problems of the released gpt-4 programs; the gold verdicts the run's metrics use are
    # solved apart from the replay above, whose evaluate records are the independent reference here.
    done = cli("run", "-d", "folio", "-n", "60", "--programs", str(data_dir / "programs" / "FOLIO_dev_gpt-4.json"),
               "--data-dir", str(data_dir), "--out", str(tmp_path), "--workers", "2", env=ENV)
    assert done.returncode == 0, done.stderr
    run = tmp_path / "folio"
    gold = {pid: r["predicted"] if r["executed"] else None for pid, r in lines(gold_run / "evaluate.jsonl").items()}
    mine = {pid: r["predicted"] if r["executed"] else None for pid, r in lines(run / "evaluate.jsonl").items()}
    both = [pid for pid in mine if mine[pid] is not None and gold[pid] is not None]
    agree = sum(mine[pid] == gold[pid] for pid in both)
    rows = lines(run / "gold_agreement.jsonl")
    assert list(rows) == list(mine)  # one row per problem of the run
    for pid, row in rows.items():
        assert (row["verdict"], row["gold_verdict"]) == (mine[pid], gold[pid]), pid
        assert row["agrees"] == (mine[pid] == gold[pid] if pid in both else None), pid
    assert rows[dev(2)]["gold_error"] == "parse"  # its gold conclusion does not parse: nothing to compare
    metrics = json.loads((run / "metrics.json").read_text())["gold_agreement"]
    assert 0 < agree < len(both)  # a mix of agreement and disagreement, so a flipped comparison shows
    assert (metrics["problems"], metrics["compared"], metrics["agree"]) == (60, len(both), agree)
    assert metrics["rate"] == round(100 * agree / len(both), 2)
    assert metrics["gold_no_verdict"] == {"parse": sum(1 for pid in mine if gold[pid] is None)}
    # The viewer shows both, per problem and for the run.
    page = tmp_path / "page.html"
    shown = cli("view", str(tmp_path), "--out", str(page), "--data-dir", str(data_dir))
    assert shown.returncode == 0, shown.stderr
    html = page.read_text(encoding="utf-8")
    assert f"the run's verdict agrees with the gold program's on {agree} of {len(both)} problems" in html
    problems = {p["id"]: p for p in payload(html)["problems"]}
    assert {pid: (p["gold_program"]["verdict"], p["gold_program"]["agrees"]) for pid, p in problems.items()} == \
        {pid: (gold[pid], mine[pid] == gold[pid] if pid in both else None) for pid in mine}


@pytest.mark.parametrize("args,said", [
    (["-d", "folio", "--split", "train"], "FOLIO v0.0's train file annotates the premises but not the conclusions"),
    (["-d", "prontoqa"], "prontoqa has no gold programs"),
    (["-d", "folio", "--formalism", "lp"], "the gold programs are first-order logic; drop --formalism lp"),
])
def test_gold_programs_that_do_not_exist_are_one_line_before_anything_is_written(data_dir, tmp_path, args, said):
    done = cli("run", *args, "--programs", "gold", "--data-dir", str(data_dir), "--out", str(tmp_path / "out"),
               env=ENV)
    assert done.returncode == 2 and said in done.stderr and len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert not (tmp_path / "out").exists()


def test_annotation_files_that_are_not_the_pinned_ones_are_refused(data_dir, tmp_path):
    copy = tmp_path / "datasets" / "folio-v0.0"
    copy.mkdir(parents=True)
    text = (DATASETS / "folio-v0.0" / "folio-validation.jsonl").read_text(encoding="utf-8")
    (copy / "folio-validation.jsonl").write_text(text.replace("Bonnie", "Bonny"), encoding="utf-8")
    done = cli("run", "-d", "folio", "--programs", "gold", "--data-dir", str(data_dir), "--out", str(tmp_path / "out"),
               env={"LOGICPIPE_DATASETS": str(tmp_path / "datasets")})
    assert done.returncode == 2 and "is not FOLIO v0.0 at commit 5d7bb84c7eda (sha256 differs)" in done.stderr
    assert not (tmp_path / "out").exists()
