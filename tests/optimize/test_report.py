"""The report of an optimisation folder: the curve, the per-step table, and the best set's diff."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from logicpipe.core.errors import DataError
from logicpipe.optimize.params import PromptParams, Structure, prompt_ids
from logicpipe.optimize.records import CandidateRecord, StepRecord
from logicpipe.optimize.report import curve_figure, write_report
from logicpipe.optimize.state import OptimizeState
from logicpipe.optimize.stats import paired
from logicpipe.prompts import PromptSet

SPLITS = {"train_split": "dev", "val_split": "dev", "carved": True, "train": 3, "val": 4,
          "note": "no 'train' split: dev was split by sha256 of each id into 3 training and 4 validation problems"}
RULE = "- 'X are not Y' is a rule whose conclusion is Y($x, False)."


def build(folder: Path) -> tuple[PromptParams, PromptParams]:
    """A two-step run: step 1 accepted a new principle, step 2 rolled back a rewrite, step 3 was rejected."""
    state = OptimizeState(folder)
    start = PromptParams.from_prompt_set(PromptSet(), prompt_ids("prontoqa", "lp"))
    better = start.with_component("prontoqa", "principles", RULE)
    worse = better.with_component("prontoqa", "description", "Write something.")
    for params in (start, better, worse):
        state.save_prompts(params, Structure())
    state.save(start_hash=start.hash, current_hash=start.hash, structure=Structure(), step=0, splits=SPLITS,
               val_score=0.25)
    state.append_steps([StepRecord(step=0, val_score=0.25, calls=4, prompt_tokens=400, completion_tokens=100,
                                   cost=0.001)])
    state.append_candidates([
        CandidateRecord(step=1, kind="prompt", prompt_id="prontoqa", component="principles", params_hash=better.hash,
                        status="accepted", val_score=0.75, base_score=0.25, paired=paired([1, 1, 0, 1], [0, 0, 0, 1])),
        CandidateRecord(step=2, kind="prompt", prompt_id="prontoqa", component="description", params_hash=worse.hash,
                        status="rolled_back", val_score=0.5, base_score=0.75, paired=paired([1, 0, 0, 1], [1, 1, 0, 1]),
                        reason="not better than noise on validation"),
        CandidateRecord(step=3, kind="structure", change={"max_rounds": 7}, status="rejected",
                        reason="max_rounds=7 is not on the menu [0, 1, 2, 3]", attempts=3),
    ])
    state.append_steps([StepRecord(step=1, accepted=better.hash, val_score=0.75, calls=20, cached_calls=2,
                                   prompt_tokens=9000, completion_tokens=1500, cost=0.02, seconds=3.5),
                        StepRecord(step=2, val_score=0.75, calls=18, prompt_tokens=8000, completion_tokens=1200,
                                   cost=0.018, seconds=2.0),
                        StepRecord(step=3, val_score=0.75, calls=7, prompt_tokens=2000, completion_tokens=300,
                                   cost=0.004, seconds=0.5)])
    state.save(start_hash=start.hash, current_hash=better.hash, structure=Structure(max_rounds=1), step=3,
               splits=SPLITS, val_score=0.75)
    return start, better


def test_report_files(tmp_path: Path) -> None:
    start, better = build(tmp_path)
    paths = write_report(tmp_path)
    assert sorted(p.name for p in paths) == ["best.diff", "curve.png", "report.json", "report.md"]
    png = (tmp_path / "curve.png").read_bytes()
    assert png.startswith(b"\x89PNG") and len(png) > 5000
    report = (tmp_path / "report.md").read_text()
    assert "dev was split by sha256" in report and "training, validation and test parts" in report
    assert "| 1 | 0.750 | prontoqa/principles | 0.750 | +0.500 ± 0.289 (2 won, 0 lost of 4) | accepted |" in report
    assert "| 2 | 0.750 | prontoqa/description | 0.500 | -0.250 ± 0.250 (0 won, 1 lost of 4) | rolled_back |" in report
    assert "| 3 | 0.750 | structure max_rounds=7 | – | – | rejected: max_rounds=7 is not on the menu" in report
    assert "| 20 (2) | 9000/1500 | 0.0200 | 3.5 |" in report
    assert "Total: 49 model calls (2 from the cache), 19400 prompt and 3100 completion tokens, cost 0.0430." in report
    assert "3 (1 accepted, 1 rolled back, 0 raced out on part of validation, 1 rejected before validation)" in report
    assert f"--prompts {tmp_path}/prompts/{better.hash} --num-samples 1 --temperature 0 --max-rounds 1" in report


def test_best_diff_applies_to_the_start_prompts(tmp_path: Path) -> None:
    start, better = build(tmp_path / "run")
    write_report(tmp_path / "run")
    diff = (tmp_path / "run" / "best.diff").read_text()
    assert "+++ best/prontoqa.txt" in diff and f"+{RULE}\n" in diff and "+Principles:\n" in diff
    assert "refine.txt" not in diff  # unchanged prompts are not in the diff
    if shutil.which("patch") is None:
        pytest.skip("no patch program")
    work = tmp_path / "work"
    shutil.copytree(tmp_path / "run" / "prompts" / start.hash, work / "start")
    shutil.copytree(work / "start", work / "best")
    subprocess.run(["patch", "-p0", "-s", "-i", str(tmp_path / "run" / "best.diff")], cwd=work, check=True)
    assert (work / "best" / "prontoqa.txt").read_text() == better.render()["prontoqa"]


def test_no_improvement_says_so(tmp_path: Path) -> None:
    state = OptimizeState(tmp_path)
    start = PromptParams.from_prompt_set(PromptSet(), prompt_ids("folio", "fol"))
    state.save_prompts(start, Structure())
    state.save(start_hash=start.hash, current_hash=start.hash, structure=Structure(), step=0,
               splits={"note": "training on train (10), validating on dev (5)", "carved": False}, val_score=0.4)
    state.append_steps([StepRecord(step=0, val_score=0.4, calls=5)])
    write_report(tmp_path)
    assert (tmp_path / "best.diff").read_text() == ""
    report = (tmp_path / "report.md").read_text()
    assert "No step has finished yet: the best prompt set is the start." in report and "held-out half" not in report
    assert "No candidate beat" not in report
    assert "| 0 | 0.400 | – | – | – | start | – | 5 (0) |" in report
    # One step whose candidate was rolled back: now a candidate did not beat the start.
    state.append_steps([StepRecord(step=1, val_score=0.4, calls=9)])
    state.save(start_hash=start.hash, current_hash=start.hash, structure=Structure(), step=1,
               splits={"note": "training on train (10), validating on dev (5)", "carved": False}, val_score=0.4)
    write_report(tmp_path)
    report = (tmp_path / "report.md").read_text()
    assert "No candidate beat the start on validation: the best prompt set is the start." in report


def test_totals_come_from_spent_json_and_name_what_no_row_shows(tmp_path: Path) -> None:
    # The finished steps' rows paid for 49 - 2 = 47 requests; spent.json says 60 went out (a kill and a
    # budget stop each lost a step's first attempt), so 13 requests belong to no row.
    build(tmp_path)
    (tmp_path / "spent.json").write_text(json.dumps({"sent": 60, "prompt_tokens": 25000, "completion_tokens": 4000,
                                                     "cost": 0.1025}))
    write_report(tmp_path)
    report = (tmp_path / "report.md").read_text()
    assert ("Total (spent.json): 60 requests sent to the model, 25000 prompt and 4000 completion tokens, cost 0.1025. "
            "The rows above: 49 model calls, 2 of them from the cache (free).") in report
    assert ("Of that, 13 requests (5600 prompt and 900 completion tokens) belong to steps that were interrupted "
            "(a kill or a spent budget) or are not finished") in report
    # When every paid request is in a row, nothing is said about interrupted steps.
    (tmp_path / "spent.json").write_text(json.dumps({"sent": 47, "prompt_tokens": 19400, "completion_tokens": 3100,
                                                     "cost": None}))
    write_report(tmp_path)
    report = (tmp_path / "report.md").read_text()
    assert "Total (spent.json): 47 requests sent to the model, 19400 prompt and 3100 completion tokens. " in report
    assert "interrupted" not in report


def test_the_curve_has_whole_steps_and_a_zero_to_one_axis(tmp_path: Path) -> None:
    only_start = [StepRecord(step=0, val_score=1.0)]
    figure = curve_figure(only_start, [])
    axis = figure.axes[0]
    ticks = [t for t in axis.get_xticks() if axis.get_xlim()[0] <= t <= axis.get_xlim()[1]]
    assert ticks and all(float(t).is_integer() for t in ticks), ticks
    assert axis.get_ylim() == (0.0, 1.0)  # a flat curve at 1.0 does not stretch the axis past it
    assert len(axis.lines[0].get_xdata()) == 1 and axis.lines[0].get_marker() == "."  # the one point is drawn
    flat = [StepRecord(step=n, val_score=1.0) for n in range(4)]
    axis = curve_figure(flat, []).axes[0]
    assert axis.get_ylim() == (0.0, 1.0) and axis.get_xlim() == (-0.25, 3.25)


def test_a_folder_without_state_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(DataError, match="no optimisation state"):
        write_report(tmp_path)


def test_a_candidate_rejected_before_it_named_a_prompt_is_no_none_none(tmp_path: Path) -> None:
    # Every attempt of the step was rejected before the optimiser said which prompt it rewrites: the
    # table showed "None/None".
    build(tmp_path)
    state = OptimizeState(tmp_path)
    state.append_candidates([CandidateRecord(step=4, kind="prompt", status="rejected", attempts=3,
                                             reason="the rewrite dropped {{context}}")])
    state.append_steps([StepRecord(step=4, val_score=0.75, calls=3)])
    write_report(tmp_path)
    report = (tmp_path / "report.md").read_text()
    assert "None" not in report
    assert "| 4 | 0.750 | prompt (no rewrite written) | – | – | rejected: the rewrite dropped {{context}}" in report
