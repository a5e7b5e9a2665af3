"""Runs as data frames: every run under a folder (a model's run through the scripted server, a replay,
a baseline) loaded in one call, one row per problem, each cell checked against the run's own records."""

from __future__ import annotations

import json

import pytest

from logicpipe.testing import FakeOpenAI, ScriptedReplies
from tests.conftest import cli, program

pandas = pytest.importorskip("pandas")

IDS = ["ProntoQA_1", "ProntoQA_2", "ProntoQA_3", "ProntoQA_4"]


def _records(path):
    return {r["id"]: r for r in map(json.loads, path.read_text().splitlines())}


@pytest.fixture(scope="module")
def runs(tmp_path_factory, data_dir):
    root = tmp_path_factory.mktemp("frames")
    ids = root / "ids.txt"
    ids.write_text("\n".join(IDS) + "\n")
    programs = data_dir / "programs" / "ProntoQA_dev_gpt-4.json"
    with FakeOpenAI(ScriptedReplies.from_logic_lm(programs)) as fake:  # the baseline's answers: the file's
        for args in (("run", "--model", "gpt-4", "--max-rounds", "0"), ("baseline", "--mode", "cot", "--model", "gpt-4")):
            done = cli(*args, "-d", "prontoqa", "--data-dir", str(data_dir), "--ids", str(ids), "--base-url", fake.url,
                       "--out", str(root / "runs" / args[0]))
            assert done.returncode == 0, done.stderr
    done = cli("run", "-d", "prontoqa", "--data-dir", str(data_dir), "--programs", str(programs), "--ids", str(ids),
               "--out", str(root / "runs" / "replay"))
    assert done.returncode == 0, done.stderr
    return root / "runs"


def test_one_call_loads_every_run_under_a_folder(runs, data_dir):
    from logicpipe import problems_df
    from logicpipe.report.frames import COLUMNS

    frame = problems_df(runs, price_prompt=2.0, price_completion=8.0)
    assert list(frame.columns) == list(COLUMNS)
    assert sorted(frame["run"].unique()) == ["baseline/baseline-cot/prontoqa", "replay/prontoqa", "run/prontoqa"]
    assert len(frame) == 3 * len(IDS) and set(frame["epoch"]) == {1}
    by_run = {run: rows.set_index("id") for run, rows in frame.groupby("run")}
    for run, rows in by_run.items():
        folder = runs / run
        evaluated = _records(folder / "evaluate.jsonl")
        assert set(rows.index) == set(evaluated)
        for pid, row in rows.iterrows():
            assert (row["answer"], row["gold"], bool(row["correct"])) == (
                evaluated[pid]["final"], evaluated[pid]["gold"], evaluated[pid]["correct"])
        assert rows["correct"].mean() == pytest.approx(json.loads((folder / "metrics.json").read_text())["accuracy"] / 100)
    model, replay, baseline = by_run["run/prontoqa"], by_run["replay/prontoqa"], by_run["baseline/baseline-cot/prontoqa"]
    formulated, solved = _records(runs / "run/prontoqa/formulate.jsonl"), _records(runs / "run/prontoqa/solve.jsonl")
    for pid, row in model.iterrows():
        usage = formulated[pid]["usage"]
        assert row["prompt_hash"] == formulated[pid]["prompt_hash"] and row["prompt_hash"]
        assert row["program"] == formulated[pid]["program"] and row["verdict"] == solved[pid]["verdict"]
        assert row["tokens"] == usage["prompt_tokens"] + usage["completion_tokens"] > 0
        assert row["cost"] == pytest.approx((2.0 * usage["prompt_tokens"] + 8.0 * usage["completion_tokens"]) / 1e6)
        assert row["seconds"] == pytest.approx(solved[pid]["seconds"], abs=1e-4)
    assert (set(model["method"]), set(model["model"]), set(model["formalism"])) == ({"logic-lm"}, {"gpt-4"}, {"lp"})
    # the replay wrote the same programs, so it gives the same answers, and costs nothing
    assert set(replay["model"]) == {"replay:ProntoQA_dev_gpt-4.json"} and set(replay["tokens"]) == {0}
    assert (replay["answer"] == model["answer"]).all()
    assert all(row["program"] == program("ProntoQA_dev_gpt-4.json", data_dir, pid) for pid, row in replay.iterrows())
    # a baseline has no program and no formalism; its tokens are the answer's
    assert set(baseline["method"]) == {"cot"} and baseline["program"].isna().all() and baseline["formalism"].isna().all()
    assert (baseline["tokens"] > 0).all() and baseline["verdict"].isna().all()


def test_rows_without_pandas_and_without_prices(runs):
    from logicpipe import problem_rows

    rows = problem_rows(runs / "replay")
    assert len(rows) == len(IDS) and all(row["cost"] is None for row in rows)
    assert problem_rows(runs / "replay" / "prontoqa") == rows  # a run's dataset folder itself
