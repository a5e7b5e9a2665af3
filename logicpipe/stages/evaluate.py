"""Evaluate: score every answer against the gold one; write evaluate.jsonl and metrics.json.

Scoring is cheap and deterministic, so it is redone from the trajectories on every run and the files
are rewritten only when their content changed.
"""

from __future__ import annotations

import time

from ..core.jsonl import write_json_if_changed
from ..core.records import EvaluateRecord, InterpretRecord
from ..core.trajectory import Trajectory
from .context import RunContext, StageReport
from .metrics import compute_metrics, model_metrics

NAME = "evaluate"


def run(ctx: RunContext, trajectories: list[Trajectory]) -> list[StageReport]:
    start = time.monotonic()
    stage = ctx.store.file(NAME, EvaluateRecord)
    inputs = [t for t in trajectories if t.interpreted is not None]
    new = 0
    for trajectory in trajectories:
        if trajectory.interpreted is None:
            continue
        record = score(trajectory.interpreted, trajectory.problem.answer)
        if stage.done.get(trajectory.id) != record:
            stage.write(record)
            new += 1
        trajectory.evaluated = record
        ctx.progress(NAME, new, len(inputs))
    records = stage.finish([t.id for t in inputs])
    metrics = compute_metrics(records, ctx.config, ctx.task.solver)
    metrics.update(model_metrics(ctx.config, trajectories))
    write_json_if_changed(ctx.store.path / "metrics.json", metrics)
    ctx.metrics = metrics
    return [StageReport(NAME, len(inputs), new, time.monotonic() - start)]


def score(record: InterpretRecord, answer: str | None) -> EvaluateRecord:
    return EvaluateRecord(
        id=record.id, gold=answer, predicted=record.predicted, final=record.final,
        executed=record.executed, error=record.error,
        correct_executed=record.executed and record.predicted is not None and record.predicted == answer,
        correct=record.final is not None and record.final == answer, backup=record.backup)
