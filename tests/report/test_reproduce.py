import json
import shutil
from pathlib import Path

import pytest

from logicpipe.report.reproduce import LOGICBENCH_PROGRAMS, paper, reproduce
from tests.conftest import cli
from tests.data import test_logicbench as logicbench_tests

FLOORS = json.loads((Path(__file__).parent.parent / "golden" / "replay_floors.json").read_text())


# LogicBench's files, which reproduce's LogicBench table replays our programs against: found as its tests find them.
pytestmark = logicbench_tests.pytestmark
_datasets_env = logicbench_tests._datasets_env


@pytest.fixture(scope="module")
def reproduced(data_dir, tmp_path_factory):
    """One `logicpipe reproduce --limit 2` through the CLI (about 6 s, half of it the LogicBench replays),
    read by the tests that check what it prints and writes; a test that changes the folder works on a copy.
    tests/conftest.py keeps the tests that use it on one pytest-xdist worker, so it runs once."""
    out = tmp_path_factory.mktemp("reproduced")
    # A module fixture runs before the autouse cache isolation: isolate the cache here.
    env = {"LOGICPIPE_CACHE": str(out.parent / "reproduced-cache"), "LOGICPIPE_DATA_URL": "http://127.0.0.1:9/unreachable"}
    done = cli("reproduce", "--out", str(out), "--limit", "2", "--data-dir", str(data_dir), "--workers", "2",
               env=env, timeout=600)
    assert done.returncode == 0, done.stderr
    return done, out


def lend_logicbench_replays(reproduced, out: Path) -> None:
    """The shared run's LogicBench replays, copied into OUT: a test of the Logic-LM tables, which does not
    read the LogicBench table, then resumes those runs (a fraction of a second) instead of making them anew
    (3 s). The replays themselves are checked by the LogicBench test below, on the shared run."""
    shutil.copytree(reproduced[1] / "replay" / "logicbench", out / "replay" / "logicbench", symlinks=True)


def test_reproduce_labels_each_file_and_prints_the_tables(reproduced):
    done, out = reproduced
    assert "replaying ProntoQA, gpt-4: file 1 of 10 (ProntoQA_dev_gpt-4.json)" in done.stderr
    assert "replaying AR-LSAT, text-davinci-003: file 10 of 10 (AR-LSAT_dev_text-davinci-003.json)" in done.stderr
    assert "# Logic-LM Table 3 reproduced" in done.stdout and "# Logic-LM Table 2 reproduced" in done.stdout
    # Table rows stay whole lines however narrow the terminal (the output is meant to be redirected).
    table3 = (out / "table3.md").read_text()
    assert table3 in done.stdout and (out / "table2.md").read_text() in done.stdout
    assert (out / "logicbench.md").read_text() in done.stdout
    assert ("| dataset | model | total | exe_rate_logiclm | exe_rate_logiclm_ci | paper_exe_rate | diff_exe_rate | "
            "executed_logiclm | exe_acc_logiclm | exe_acc_logiclm_ci |") in table3


def test_reproduce_with_another_limit_is_refused_naming_an_option_it_takes(data_dir, reproduced, tmp_path):
    out = tmp_path / "results"
    shutil.copytree(reproduced[1], out, symlinks=True)  # made with --limit 2
    args = ["reproduce", "--out", str(out), "--data-dir", str(data_dir), "--workers", "2"]
    refused = cli(*args, "--limit", "3")
    assert refused.returncode == 2
    line = next(line for line in refused.stderr.splitlines() if line.startswith("error: "))
    assert "limit" in line and "--overwrite" in line  # the way out it names is an option of reproduce
    done = cli(*args, "--limit", "3", "--overwrite")
    assert done.returncode == 0, done.stderr
    table = json.loads((out / "table3.json").read_text())
    assert len(table) == 10 and all(row["total"] == 3 for row in table)


def test_reproduce_writes_both_tables_and_the_chart(data_dir, reproduced, tmp_path):
    lend_logicbench_replays(reproduced, tmp_path)
    labels = []
    result = reproduce(tmp_path, data_dir, workers=2, models=("gpt-4",), limit=12, label=labels.append)
    assert labels[0] == "ProntoQA, gpt-4: file 1 of 5 (ProntoQA_dev_gpt-4.json)"
    assert labels[4] == "AR-LSAT, gpt-4: file 5 of 5 (AR-LSAT_dev_gpt-4.json)"
    assert {r["dataset"] for r in result["rows"]} == {"prontoqa", "proofwriter", "folio", "logicaldeduction", "ar-lsat"}
    assert all(r["total"] == 12 for r in result["rows"])
    table = json.loads((tmp_path / "table3.json").read_text())
    folio = next(r for r in table if r["dataset"] == "folio")
    assert folio["paper_exe_rate"] == paper()["table3"]["gpt-4"]["folio"]["exe_rate"]
    assert folio["diff_exe_rate"] == round(folio["exe_rate_logiclm"] - folio["paper_exe_rate"], 2)
    arlsat = next(r for r in table if r["dataset"] == "ar-lsat")
    row = next(r for r in result["rows"] if r["dataset"] == "ar-lsat")
    assert (arlsat["exe_rate_logiclm"], arlsat["exe_rate"]) == (row["exe_rate_logiclm"], row["exe_rate"])
    assert arlsat["diff_exe_acc"] == round(row["exe_acc_logiclm"] - arlsat["paper_exe_acc"], 2)
    assert list(arlsat)[:12] == ["dataset", "model", "total", "exe_rate_logiclm", "exe_rate_logiclm_ci", "paper_exe_rate",
                                 "diff_exe_rate", "executed_logiclm", "exe_acc_logiclm", "exe_acc_logiclm_ci",
                                 "paper_exe_acc", "diff_exe_acc"]
    # each rate with its 95% interval: Wilson's on the run's counts for Exe_Rate, and Exe_Acc's n beside it
    from logicpipe.core import stats

    executed = round(arlsat["exe_rate_logiclm"] * 12 / 100)
    assert arlsat["executed_logiclm"] == executed and arlsat["exe_rate_logiclm_ci"] == stats.percent(stats.wilson(executed, 12))
    low, high = folio["exe_acc_ci"]
    assert low <= folio["exe_acc"] <= high and folio["executed"] == round(folio["exe_rate"] * 12 / 100)
    text = (tmp_path / "table3.md").read_text()
    assert "| folio | gpt-4 |" in text and f"| [{low:.2f}, {high:.2f}] |" in text
    table2 = {r["dataset"]: r for r in json.loads((tmp_path / "table2.json").read_text())}
    assert table2["folio"]["logic_lm_ci"] == stats.percent(stats.wilson(round(table2["folio"]["logic_lm"] * 12 / 100), 12))
    assert table2["folio"]["n"] == 12 and table2["folio"]["standard_ci"] is None  # no baseline run: no interval
    assert (tmp_path / "table2.csv").read_text().count("not run") >= 10
    assert (tmp_path / "accuracy.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.slow
def test_full_replays_do_not_regress(data_dir, tmp_path):
    result = reproduce(tmp_path, data_dir, workers=2)
    rows = {(r["model"], r["dataset"]): r for r in result["rows"]}
    for model, floors in FLOORS.items():
        if model.startswith("_"):
            continue
        for dataset, floor in floors.items():
            row = rows[(model, dataset)]
            assert row["exe_rate"] >= floor["exe_rate"], (model, dataset, row["exe_rate"])
            assert row["exe_acc"] >= floor["exe_acc"], (model, dataset, row["exe_acc"])
    # The figures docs/reproduce.md shows (scripts/docs_figures.py) are this replay's, cell for cell.
    from tests.docs.test_figures import docs_figures

    module = docs_figures()
    assert module.figures(tmp_path) == json.loads(module.GOLDEN.read_text()), \
        "a full replay no longer gives the page's figures: run make reproduce, then scripts/docs_figures.py"


def test_table2_baselines_come_from_a_configured_model(data_dir, reproduced, tmp_path):
    from logicpipe.stages import RunConfig
    from logicpipe.testing import FakeOpenAI, ScriptedReplies

    lend_logicbench_replays(reproduced, tmp_path)
    answers = {}
    for name in ("FOLIO", "LogicalDeduction", "ProntoQA", "ProofWriter", "AR-LSAT"):
        for problem in json.loads((data_dir / "data" / name / "dev.json").read_text())[:4]:
            answers[problem["id"]] = problem["answer"]
    with FakeOpenAI(ScriptedReplies({}, answers=answers)) as fake:
        llm = RunConfig(dataset="folio", model="gpt-4", base_url=fake.url, max_concurrency=4)
        result = reproduce(tmp_path, data_dir, workers=2, models=("gpt-4",), llm=llm, limit=4)
        assert len(fake.requests) == 5 * 2 * 4
    assert set(result["baselines"].values()) == {100.0}
    table = {r["dataset"]: r for r in json.loads((tmp_path / "table2.json").read_text())}
    assert table["folio"]["standard"] == 100.0 and table["folio"]["paper_standard"] == 69.11
    assert table["folio"]["diff_cot"] == round(100.0 - 70.58, 2)


def test_the_logicbench_table_replays_our_programs_and_counts_every_question_without_one(reproduced):
    """Through the CLI (`--limit` cuts the Logic-LM replays only): one row per programs file and logic type,
    each run over every question of the type; the figures are docs/reproduce.md's."""
    done, out = reproduced
    assert "replaying LogicBench logicbench-bqa nm_logic through lp: bqa-lp.jsonl" in done.stderr
    rows = json.loads((out / "logicbench.json").read_text())
    table = (out / "logicbench.md").read_text()
    assert "| logicbench-bqa | nm_logic | lp | bqa-lp.jsonl | 6 of 8 | 440 | 24 | 416 |" in table
    # MCQA's propositional and first-order rows (first-order hypothetical syllogism has no program).
    assert "| logicbench-mcqa | first_order_logic | asp | mcqa-pf-asp.jsonl | 8 of 9 | 180 | 24 | 156 |" in table
    assert [(r["task"], r["logic"]) for r in rows if r["task"] == "logicbench-mcqa"] == [
        ("logicbench-mcqa", logic) for logic in ("propositional_logic", "first_order_logic", "nm_logic")]
    sizes = {"logicbench-bqa": {"propositional_logic": 560, "first_order_logic": 520, "nm_logic": 440},
             "logicbench-mcqa": {"propositional_logic": 160, "first_order_logic": 180, "nm_logic": 160}}
    for row in rows:
        written = [line for line in (LOGICBENCH_PROGRAMS / row["programs"]).read_text().splitlines()
                   if f'"id": "{row["logic"]}/' in line]
        run_dir = out / "replay" / "logicbench" / Path(row["programs"]).stem / row["logic"] / row["task"]
        evaluated = [json.loads(line) for line in (run_dir / "evaluate.jsonl").read_text().splitlines()]
        missing = sum((r["error"] or {}).get("category") == "no_program" for r in evaluated)
        # Every question of the type is in the run; those we wrote no program for are typed records.
        assert row["questions"] == len(evaluated) == sizes[row["task"]][row["logic"]]
        assert (row["with_program"], row["no_program"]) == (len(written), missing) == (len(written),
                                                                                        row["questions"] - len(written))
        assert row["executed"] == row["correct"] == len(written), row
    from tests.docs.test_figures import docs_figures

    assert docs_figures().figures(out)["logicbench"] == json.loads(docs_figures().GOLDEN.read_text())["logicbench"], \
        "a replay no longer gives docs/reproduce.md's LogicBench table: run make reproduce, then scripts/docs_figures.py"


def _offline(tmp_path, data):
    """No LogicBench anywhere and nothing to download: the quick look of docs/reproduce.md on a machine
    that has only Logic-LM's files."""
    empty = tmp_path / "no-datasets"
    empty.mkdir(exist_ok=True)
    return {"LOGICPIPE_DATA": str(data), "LOGICPIPE_DATASETS": str(empty), "LOGICPIPE_CACHE": str(tmp_path / "cache"),
            "LOGICPIPE_DATA_URL": "http://127.0.0.1:9/unreachable"}


def test_reproduce_writes_the_tables_it_has_data_for_and_names_the_others(data_dir, tmp_path):
    # A data folder with one released program file, and no LogicBench: Table 3, Table 2 and the chart are
    # made; the LogicBench table is named as not made, with why, and the command succeeds.
    data = tmp_path / "logic-lm"
    (data / "programs").mkdir(parents=True)
    (data / "data").symlink_to(data_dir / "data")
    (data / "programs" / "ProntoQA_dev_gpt-4.json").symlink_to(data_dir / "programs" / "ProntoQA_dev_gpt-4.json")
    out = tmp_path / "results"
    done = cli("reproduce", "--out", str(out), "--limit", "3", env=_offline(tmp_path, data))
    assert done.returncode == 0, done.stderr
    assert [line for line in done.stderr.splitlines() if line.startswith("not made:")] == \
        [next(line for line in done.stderr.splitlines() if line.startswith("not made: logicbench: LogicBench's data: "))]
    assert "| prontoqa | gpt-4 | 3 |" in (out / "table3.md").read_text() and (out / "table2.md").exists()
    assert (out / "accuracy.png").exists() and not (out / "logicbench.md").exists()
    # No program file either: no table can be made, one line, non-zero.
    (data / "programs" / "ProntoQA_dev_gpt-4.json").unlink()
    done = cli("reproduce", "--out", str(tmp_path / "none"), "--limit", "3", env=_offline(tmp_path, data))
    [error] = [line for line in done.stderr.splitlines() if not line.startswith("replaying ")]
    assert done.returncode == 2 and "; logicbench: LogicBench's data: " in error
    assert error.startswith("error: no table could be made: table3, table2, accuracy.png: Logic-LM's data or programs: ")
