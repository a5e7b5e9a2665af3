"""The optimisation folder: content-addressed prompt sets a run can read, append-only records that
survive a kill, and state.json naming the current and best prompt sets."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from logicpipe.core.errors import DataError
from logicpipe.optimize.params import PromptParams, Structure, prompt_ids
from logicpipe.optimize.records import CandidateRecord, GradientRecord, LossRecord, ProblemOutcome, StepRecord
from logicpipe.optimize.state import OptimizeState
from logicpipe.prompts import PromptSet

SPLITS = {"train_split": "dev", "val_split": "dev", "carved": True, "train": 3, "val": 4, "note": "dev cut in two"}


def start_params() -> PromptParams:
    return PromptParams.from_prompt_set(PromptSet(), prompt_ids("prontoqa", "lp"))


def outcome(problem_id: str) -> ProblemOutcome:
    return ProblemOutcome(id=problem_id, split="dev", correct=False, executed=True, answer="A", gold="B")


def test_saved_prompts_are_a_folder_a_run_reads(tmp_path: Path) -> None:
    state = OptimizeState(tmp_path)
    params = start_params().with_component("prontoqa", "principles", "- Negation is the value False.")
    folder = state.save_prompts(params, Structure(max_rounds=1))
    assert folder == tmp_path / "prompts" / params.hash
    assert sorted(p.name for p in folder.iterdir()) == ["guide-lp.txt", "params.json", "prontoqa.txt", "refine.txt",
                                                       "structure.json"]
    read = PromptSet(folder)
    assert read.get("prontoqa").system.endswith("Principles:\n- Negation is the value False.")
    assert read.guide("lp") == PromptSet().guide("lp")
    assert Structure.model_validate_json((folder / "structure.json").read_text()) == Structure(max_rounds=1)
    assert state.load_params(params.hash) == params
    assert PromptParams.from_prompt_set(read, prompt_ids("prontoqa", "lp")).hash == params.hash


def test_prompt_sets_are_written_once(tmp_path: Path) -> None:
    state = OptimizeState(tmp_path)
    params = start_params()
    folder = state.save_prompts(params, Structure())
    before = {p.name: p.stat().st_mtime_ns for p in folder.iterdir()}
    time.sleep(0.01)
    assert state.save_prompts(params, Structure(max_rounds=0)) == folder
    assert {p.name: p.stat().st_mtime_ns for p in folder.iterdir()} == before
    assert not list(tmp_path.rglob("*.tmp"))


def test_a_tampered_prompt_set_is_refused(tmp_path: Path) -> None:
    state = OptimizeState(tmp_path)
    params = start_params()
    folder = state.save_prompts(params, Structure())
    other = params.with_component("refine", "description", "Fix it.")
    (folder / "params.json").write_text(other.model_dump_json())
    with pytest.raises(DataError, match="hashes to"):
        state.load_params(params.hash)
    with pytest.raises(DataError, match="never saved"):
        state.load_params("0" * 12)


def test_records_read_back_and_a_torn_tail_is_cut(tmp_path: Path) -> None:
    state = OptimizeState(tmp_path)
    state.append_losses([LossRecord(step=1, id="p1", score=7.5, critique="ok", outcome=outcome("p1")),
                         LossRecord(step=1, id="p2", score=None, error="reply was not JSON", outcome=outcome("p2"))])
    # A kill in the middle of a write leaves part of a line.
    with open(tmp_path / "losses.jsonl", "ab") as handle:
        handle.write(b'{"schema_version": 2, "step": 2, "id": "p3", "sco')
    assert [r.id for r in state.read_losses()] == ["p1", "p2"]
    state.append_losses([LossRecord(step=2, id="p3", score=1, outcome=outcome("p3"))])
    assert [(r.id, r.score) for r in state.read_losses()] == [("p1", 7.5), ("p2", None), ("p3", 1.0)]


def test_a_redone_step_counts_once(tmp_path: Path) -> None:
    state = OptimizeState(tmp_path)
    grads = [GradientRecord(step=1, id="p1", node=node, gradient=f"first {node}")
             for node in ("interpret", "solve")]
    state.append_gradients(grads)
    state.append_steps([StepRecord(step=0, val_score=0.5), StepRecord(step=1, val_score=0.5, calls=3)])
    candidate = CandidateRecord(step=2, kind="prompt", prompt_id="prontoqa", component="format", status="rejected",
                                reason="interrupted run's attempt")
    state.append_candidates([candidate])
    # The step is redone after a kill: the same keys again, with the new values.
    state.append_gradients([grads[0].model_copy(update={"gradient": "second interpret"})])
    state.append_candidates([candidate.model_copy(update={"status": "accepted", "reason": None})])
    state.append_steps([StepRecord(step=1, val_score=0.75, calls=4)])
    assert [(g.node, g.gradient) for g in state.read_gradients()] == [("solve", "first solve"),
                                                                       ("interpret", "second interpret")]
    assert [(s.step, s.val_score, s.calls) for s in state.steps()] == [(0, 0.5, 0), (1, 0.75, 4)]
    assert [c.status for c in state.read_candidates()] == ["accepted"]


def test_state_names_current_and_best(tmp_path: Path) -> None:
    state = OptimizeState(tmp_path)
    assert state.current() is None
    start = start_params()
    better = start.with_component("prontoqa", "principles", "- A rule.")
    for params in (start, better):
        state.save_prompts(params, Structure())
    state.save(start_hash=start.hash, current_hash=start.hash, structure=Structure(), step=0, splits=SPLITS,
               val_score=0.5)
    saved = state.save(start_hash=start.hash, current_hash=better.hash, structure=Structure(max_rounds=1), step=1,
                       splits=SPLITS, val_score=0.75)
    assert (saved.best_hash, saved.best_score, saved.best_dir) == (better.hash, 0.75, f"prompts/{better.hash}")
    assert saved.best_structure == Structure(max_rounds=1)
    assert (tmp_path / "best").resolve() == state.prompts_dir(better.hash).resolve()
    assert PromptSet(tmp_path / "best").get("prontoqa").system.endswith("- A rule.")
    # A later state that scores lower leaves the best where it was.
    saved = state.save(start_hash=start.hash, current_hash=start.hash, structure=Structure(), step=2, splits=SPLITS,
                       val_score=0.6)
    assert (saved.current_hash, saved.step, saved.best_hash) == (start.hash, 2, better.hash)
    assert state.current() == saved and saved.carved
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]


def test_mark_best_takes_a_saved_set_that_scores_higher(tmp_path: Path) -> None:
    state = OptimizeState(tmp_path)
    start = start_params()
    other = start.with_component("refine", "description", "Repair the program.")
    state.save_prompts(start, Structure())
    with pytest.raises(DataError, match="save a state"):
        state.mark_best(start.hash, Structure(), 1.0)
    state.save(start_hash=start.hash, current_hash=start.hash, structure=Structure(), step=0, splits=SPLITS,
               val_score=0.5)
    with pytest.raises(DataError, match="never saved"):
        state.mark_best(other.hash, Structure(), 0.9)
    state.save_prompts(other, Structure())
    assert state.mark_best(other.hash, Structure(), 0.4).best_hash == start.hash
    assert state.mark_best(other.hash, Structure(), 0.9).best_hash == other.hash
    assert os.readlink(tmp_path / "best") == f"prompts/{other.hash}"


def test_a_corrupt_state_file_is_one_error(tmp_path: Path) -> None:
    (tmp_path / "state.json").write_text("{not json")
    with pytest.raises(DataError, match="state.json"):
        OptimizeState(tmp_path).current()


_WRITER = """
import sys
from pathlib import Path
from logicpipe.optimize.records import LossRecord, ProblemOutcome
from logicpipe.optimize.state import OptimizeState
state = OptimizeState(Path(sys.argv[1]))
out = ProblemOutcome(id="p", split="dev", correct=True, executed=True, program="x" * 200_000)
print("ready", flush=True)
step = 0
while True:
    step += 1
    state.append_losses([LossRecord(step=step, id="p", score=5, outcome=out)])
"""


def test_records_survive_a_sigkill_of_the_writer(tmp_path: Path) -> None:
    writer = subprocess.Popen([sys.executable, "-c", _WRITER, str(tmp_path)], stdout=subprocess.PIPE)
    try:
        assert writer.stdout is not None and writer.stdout.readline().strip() == b"ready"
        deadline = time.monotonic() + 30
        path = tmp_path / "losses.jsonl"
        while time.monotonic() < deadline and (not path.exists() or path.stat().st_size < 5_000_000):
            time.sleep(0.01)
    finally:
        os.kill(writer.pid, signal.SIGKILL)
        writer.wait()
    state = OptimizeState(tmp_path)
    before = state.read_losses()
    assert len(before) >= 20 and [r.step for r in before] == list(range(1, len(before) + 1))
    state.append_losses([LossRecord(step=10_000, id="p", score=1, outcome=outcome("p"))])
    after = state.read_losses()
    assert after[:-1] == before and after[-1].step == 10_000
