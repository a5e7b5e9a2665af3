"""Evaluate: score every answer against the gold one; write evaluate.jsonl and metrics.json.

Scoring is cheap and deterministic, so it is redone from the trajectories on every run and the files
are rewritten only when their content changed. A run streams its problems in chunks: each chunk's scores
are added to the run's tally, and metrics.json is written once, from the tally, when the run ends.
"""

from __future__ import annotations

import time

from ..core.jsonl import write_json_if_changed
from ..core.records import EvaluateRecord, InterpretRecord, Usage
from ..core.trajectory import Trajectory
from ..report.gold import reference
from .context import RunContext, StageReport
from .metrics import Tally

NAME = "evaluate"
METRICS_FILE = "metrics.json"


def run(ctx: RunContext, trajectories: list[Trajectory]) -> list[StageReport]:
    start = time.monotonic()
    stage = ctx.store.file(NAME, EvaluateRecord)
    inputs = [t for t in trajectories if t.interpreted is not None]
    if ctx.tally is None:
        ctx.tally = Tally(ctx.task.solver)
    new = 0
    for trajectory in inputs:
        assert trajectory.interpreted is not None
        usage = trajectory.usage()
        cost = ctx.config.cost(usage.prompt_tokens, usage.completion_tokens) if usage is not None else None
        record = score(trajectory.interpreted, trajectory.problem.answer, usage, cost)
        if stage.done.get(trajectory.id) != record:
            stage.write(record)
            new += 1
        trajectory.evaluated = record
        ctx.progress(NAME, new, len(inputs))
    ctx.tally.scores(t.evaluated for t in inputs if t.evaluated is not None)
    ctx.tally.trajectories(trajectories)
    stage.finish([t.id for t in inputs])
    return [StageReport(NAME, len(inputs), new, time.monotonic() - start)]


def conclude(ctx: RunContext) -> None:
    """Once every chunk is scored: metrics.json (rewritten only when it changed)."""
    if ctx.tally is None:
        return
    ctx.metrics = ctx.tally.metrics(ctx.config)
    held = reference(ctx.config, ctx.store.path)  # a task with gold programs: agreement with them
    if held is not None:
        ctx.metrics["gold_agreement"] = held
    write_json_if_changed(ctx.store.path / METRICS_FILE, ctx.metrics)


def score(record: InterpretRecord, answer: str | None, usage: Usage | None = None,
          cost: float | None = None) -> EvaluateRecord:
    return EvaluateRecord(
        id=record.id, gold=answer, predicted=record.predicted, final=record.final,
        executed=record.executed, error=record.error,
        correct_executed=record.executed and record.predicted is not None and record.predicted == answer,
        correct=record.final is not None and record.final == answer, backup=record.backup,
        tokens=None if usage is None else usage.prompt_tokens + usage.completion_tokens,
        cost=None if cost is None else round(cost, 8))
