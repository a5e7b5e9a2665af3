"""FOLIO's gold programs (FOLIO v0.0's own FOL annotations, `--programs gold`) through the CLI: the replay's
figures, the audit of the annotations, and a run's agreement with them. Needs FOLIO v0.0's files
($LOGICPIPE_DATASETS; the Makefile points it at ../shared/datasets) and Logic-LM's FOLIO dev set."""

import json
import os
import re
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
    assert ("of 204 gold programs: 8 do not parse, 8 prove another label, 0 are inconsistent, 0 do not execute, "
            "0 prove no option") in " ".join(done.stdout.split())
    flagged = lines(tmp_path / "gold" / "folio" / "audit.jsonl")
    assert {pid: r["kind"] for pid, r in flagged.items()} == {
        **{dev(n): "does_not_parse" for n in NOT_PARSING}, **{dev(n): "other_label" for n in OTHER_LABEL}}
    for number, annotation in NOT_PARSING.items():  # each names the annotation and the parser's reason
        assert flagged[dev(number)]["reason"].startswith(annotation), flagged[dev(number)]
    assert "unexpected character '⟷'" in flagged[dev(87)]["reason"]
    assert all(flagged[dev(n)]["proved"] == letter for n, letter in OTHER_LABEL.items())


GPT4 = "FOLIO_dev_gpt-4.json"
FIRST = 60


@pytest.fixture(scope="module")
def gpt4_run(data_dir, tmp_path_factory) -> Path:
    """The first 60 problems of Logic-LM's released gpt-4 programs, replayed."""
    out = tmp_path_factory.mktemp("gpt4")
    done = cli("run", "-d", "folio", "-n", str(FIRST), "--programs", str(data_dir / "programs" / GPT4),
               "--data-dir", str(data_dir), "--out", str(out), "--workers", "2", env=ENV)
    assert done.returncode == 0, done.stderr
    return out


def test_a_run_of_gpt4s_programs_is_held_against_the_gold_verdicts(data_dir, gold_run, gpt4_run, tmp_path):
    # The gold verdicts the run's metrics use are solved apart from the replay above, whose evaluate
    # records are the independent reference here.
    run = gpt4_run / "folio"
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
    assert (metrics["problems"], metrics["compared"], metrics["agree"]) == (FIRST, len(both), agree)
    assert metrics["rate"] == round(100 * agree / len(both), 2)
    assert metrics["gold_no_verdict"] == {"parse": sum(1 for pid in mine if gold[pid] is None)}
    # The viewer shows both, per problem and for the run.
    page = tmp_path / "page.html"
    shown = cli("view", str(gpt4_run), "--out", str(page), "--data-dir", str(data_dir))
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


def test_the_run_premises_are_checked_against_the_gold_conclusion_where_the_names_match(data_dir, gpt4_run, tmp_path):
    # The independent reference: each gpt-4 program with its conclusion replaced by the gold conclusion's
    # annotation (read here from FOLIO's file), replayed through the CLI as a programs file of its own.
    validation = [json.loads(line) for line in
                  (DATASETS / "folio-v0.0" / "folio-validation.jsonl").read_text(encoding="utf-8").splitlines()]
    released = {r["id"]: r["raw_logic_programs"][0] for r in json.loads((data_dir / "programs" / GPT4).read_text())
                if r.get("raw_logic_programs")}
    rows = lines(gpt4_run / "folio" / "gold_agreement.jsonl")
    composed, names_differ = {}, set()
    for number in range(FIRST):
        pid, gold = dev(number), validation[number]["conclusion-FOL"]
        premises = released[pid].split("Conclusion:")[0]
        used = {name for line in premises.split("Premises:")[-1].splitlines()
                for name in re.findall(r"(\w+)\(", line.split(":::")[0])}
        if not set(re.findall(r"(\w+)\(", gold)) <= used:
            names_differ.add(pid)
        composed[pid] = f"{premises}Conclusion:\n{gold} ::: the gold conclusion\n"
    programs = tmp_path / "composed.jsonl"
    programs.write_text("".join(json.dumps({"id": pid, "program": text}, ensure_ascii=False) + "\n"
                                for pid, text in composed.items()), encoding="utf-8")
    done = cli("run", "-d", "folio", "-n", str(FIRST), "--programs", str(programs), "--data-dir", str(data_dir),
               "--out", str(tmp_path / "out"), "--workers", "2", env=ENV)
    assert done.returncode == 0, done.stderr
    replayed = lines(tmp_path / "out" / "folio" / "evaluate.jsonl")
    checked = [pid for pid, row in rows.items() if row["premises_give_label"] is not None]
    unparsed = {pid for pid, row in rows.items() if row["premises_unchecked"] in (
        "the run's program does not parse", "the gold conclusion does not parse")}
    assert rows[dev(2)]["premises_unchecked"] == "the gold conclusion does not parse"
    differ = {pid for pid, row in rows.items() if str(row["premises_unchecked"]).startswith("names differ")}
    assert names_differ - unparsed <= differ
    for pid in differ - names_differ:  # the same name with another arity (Share/2 against Share/3)
        name = rows[pid]["premises_unchecked"].rsplit(" ", 1)[1].split("/")[0]
        assert f"{name}(" in composed[pid].split("Conclusion:")[0], pid
    assert len(checked) >= 15 and not names_differ & set(checked)
    for pid in checked:
        assert rows[pid]["premises_verdict"] == replayed[pid]["predicted"], pid
        assert rows[pid]["premises_give_label"] == (replayed[pid]["predicted"] == replayed[pid]["gold"]), pid
    give = sum(rows[pid]["premises_give_label"] for pid in checked)
    assert 0 < give < len(checked)
    right = {pid for pid, r in lines(gpt4_run / "folio" / "evaluate.jsonl").items() if r["correct_executed"]}
    premises = json.loads((gpt4_run / "folio" / "metrics.json").read_text())["gold_agreement"]["premises"]
    assert (premises["checked"], premises["give_label"]) == (len(checked), give)
    assert premises["right_answer_other_premises"] == sum(
        1 for pid in checked if pid in right and replayed[pid]["predicted"] != replayed[pid]["gold"])
    page = tmp_path / "page.html"
    assert cli("view", str(gpt4_run), "--out", str(page), "--data-dir", str(data_dir)).returncode == 0
    html = page.read_text(encoding="utf-8")
    assert f"give the label for the gold conclusion on {give} of {len(checked)} problems" in html
    shown = {p["id"]: p["gold_program"] for p in payload(html)["problems"]}
    assert {pid: shown[pid]["premises"] for pid in checked} == {pid: replayed[pid]["predicted"] for pid in checked}


def test_a_run_without_folios_files_says_so_in_its_metrics_and_downloads_nothing(data_dir, tmp_path):
    # No $LOGICPIPE_DATASETS and nothing cached: the run's metrics must not wait on a download.
    done = cli("run", "-d", "folio", "-n", "2", "--programs", str(data_dir / "programs" / GPT4),
               "--data-dir", str(data_dir), "--out", str(tmp_path), env={"LOGICPIPE_DATASETS": ""})
    assert done.returncode == 0, done.stderr
    held = json.loads((tmp_path / "folio" / "metrics.json").read_text())["gold_agreement"]
    assert held == {"error": "no gold verdicts: FOLIO v0.0's folio-v0.0/folio-validation.jsonl is not here: set "
                             "LOGICPIPE_DATASETS, or run `logicpipe audit -d folio` once to download it"}
    assert not (tmp_path / "folio" / "gold_agreement.jsonl").exists()


def test_without_datasets_gold_programs_come_from_the_download_cache(data_dir, tmp_path):
    env = {"LOGICPIPE_DATASETS": "", "LOGICPIPE_CACHE": str(tmp_path / "cache")}
    done = cli("run", "-d", "folio", "-n", "3", "--programs", "gold", "--data-dir", str(data_dir),
               "--out", str(tmp_path / "out"), env=env)
    # Nothing cached and nothing to download (the tests' download address is unreachable): one line.
    assert done.returncode == 2 and "cannot download" in done.stderr and len(done.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "out").exists()
    cached = tmp_path / "cache" / "logic-lm" / "5d7bb84c7edab3fb358e057d2807f19cf5cf5e2d" / "folio-v0.0"
    cached.mkdir(parents=True)
    (cached / "folio-validation.jsonl").write_bytes((DATASETS / "folio-v0.0" / "folio-validation.jsonl").read_bytes())
    done = cli("run", "-d", "folio", "-n", "3", "--programs", "gold", "--data-dir", str(data_dir),
               "--out", str(tmp_path / "out"), env=env)
    assert done.returncode == 0, done.stderr
    assert json.loads((tmp_path / "out" / "folio" / "metrics.json").read_text())["executed"] == 2  # dev_2: parse


def test_the_audit_tells_each_kind_of_failure_apart(data_dir, tmp_path, monkeypatch):
    # Programs written here for the first five problems, replayed, then read as the audit reads a replay.
    from logicpipe.data.registry import get_dataset
    from logicpipe.report.gold import audit

    programs = {dev(0): "Premises:\nP(a) ::: one\n¬P(a) ::: two\nConclusion:\nQ(a) ::: q\n",  # inconsistent
                dev(1): "Premises:\nP(a) ::: one\nConclusion:\nP(a)) ::: q\n",  # does not parse
                dev(3): "Premises:\nP(a) ::: one\nConclusion:\nP(a) ::: q\n",  # True; the label is Uncertain
                dev(4): "Premises:\nP(a) ::: one\nConclusion:\nQ(a) ::: q\n"}  # Uncertain, the label
    path = tmp_path / "mine.jsonl"
    path.write_text("".join(json.dumps({"id": k, "program": v}) + "\n" for k, v in programs.items()))
    done = cli("run", "-d", "folio", "-n", "5", "--programs", str(path), "--data-dir", str(data_dir),
               "--out", str(tmp_path), env=ENV)
    assert done.returncode == 0, done.stderr
    monkeypatch.setenv("LOGICPIPE_DATASETS", str(DATASETS))  # audit reads FOLIO's file in this process
    flagged, total = audit(tmp_path / "folio", get_dataset("folio"), "dev", data_dir)
    assert total == 5
    assert {f.id: (f.kind, f.proved) for f in flagged} == {
        dev(0): ("inconsistent", None), dev(1): ("does_not_parse", None), dev(2): ("does_not_execute", None),
        dev(3): ("other_label", "A")}
    reasons = {f.id: f.reason for f in flagged}
    assert reasons[dev(1)].startswith("line 4, column 5: unexpected ')'")  # FOLIO_dev_1's annotations parse
    assert reasons[dev(2)].startswith("no_program: ")


def test_the_audit_lists_a_gold_program_that_proves_none_of_the_problems_options(data_dir, tmp_path):
    """A gold program that runs and proves no option of its problem: FOLIO_dev_5's proves Uncertain, and
    in a data folder of our own its problem is asked as True or False only (a binary copy of FOLIO, as a
    user may make). FOLIO_dev_4, as released, proves its label and is not listed."""
    released = {p["id"]: p for p in json.loads((data_dir / "data" / "FOLIO" / "dev.json").read_text())}
    binary = {**released[dev(5)], "options": ["A) True", "B) False"]}
    mine = tmp_path / "logic-lm"
    (mine / "data" / "FOLIO").mkdir(parents=True)
    (mine / "data" / "FOLIO" / "dev.json").write_text(json.dumps([released[dev(4)], binary]))
    done = cli("audit", "-d", "folio", "--data-dir", str(mine), "--out", str(tmp_path / "out"), env=ENV)
    assert done.returncode == 0, done.stderr
    assert ("of 2 gold programs: 0 do not parse, 0 prove another label, 0 are inconsistent, 0 do not execute, "
            "1 prove no option") in " ".join(done.stdout.split())
    flagged = lines(tmp_path / "out" / "gold" / "folio" / "audit.jsonl")
    assert flagged == {dev(5): {"id": dev(5), "kind": "no_answer", "label": "A", "proved": None,
                                "reason": "no_answer: verdict 'Unknown' matches no option"}}
