"""Solve: run every program (every sample) on the run's executor (local pool or Ray); vote over samples."""

from __future__ import annotations

import time
from collections import Counter
from typing import Any

from ..core.records import ErrorCategory, SolveRecord, StageError
from ..core.trajectory import Trajectory, program_sha
from ..isolation import Outcome, Task
from ..run import make_executor
from ..solvers import SolverOutcome
from .context import RunContext, StageReport

NAME = "solve"


def run(ctx: RunContext, trajectories: list[Trajectory]) -> list[StageReport]:
    return [solve_round(ctx, trajectories, 0)]


def solve_round(ctx: RunContext, trajectories: list[Trajectory], round_: int) -> StageReport:
    """Solve round `round_` (0: the formulated programs; N: the repairs of refinement round N) for the
    trajectories that have a program for it."""
    start = time.monotonic()
    name = NAME if round_ == 0 else f"{NAME}-{round_}"
    stage = ctx.store.file(name, SolveRecord)
    inputs = [t for t in trajectories if t.source(round_) is not None]
    todo = [t for t in inputs if round_ not in t.solved or t.solved[round_].retry()]
    base: dict[str, Any] = {"dataset": ctx.task.dataset, "solver": ctx.task.solver, "round": round_}
    timeout = ctx.config.timeout or ctx.task.timeout
    done = 0

    def write(trajectory: Trajectory, record: SolveRecord) -> None:
        nonlocal done
        stage.write(record)
        trajectory.set_solved(record)
        done += 1
        ctx.progress(name, done, len(todo))

    tasks: list[Task] = []
    expected: dict[str, int] = {}
    shas: dict[str, str] = {}
    by_id = {t.id: t for t in todo}
    for trajectory in todo:
        source = trajectory.source(round_)
        if source is None:
            continue
        sha, programs = program_sha(source), source.programs()
        if source.error is not None or not programs:
            error = source.error or StageError(category=ErrorCategory.no_program, message="empty program")
            write(trajectory, SolveRecord(id=trajectory.id, error=error, program=sha, **base))
            continue
        expected[trajectory.id], shas[trajectory.id] = len(programs), sha
        for index, text in enumerate(programs):
            payload = {"solver": ctx.task.solver, "program": text,
                       "limits": {"seconds": timeout, "memory_mb": ctx.config.memory_mb}}
            # The hard bound leaves the solver's own limit room to report a clean timeout first.
            tasks.append(Task(f"{trajectory.id}\x1f{index}", payload, timeout * 1.5 + 5))
    if tasks:
        results: dict[str, dict[int, SolveRecord]] = {}
        config = ctx.config
        with make_executor(config.executor, "logicpipe.solvers:execute_task", config.workers, config.memory_mb,
                           config.ray_address) as executor:
            executor.check(ctx.task.solver)
            for finished in executor.map(tasks):
                outcome = finished.outcome
                identifier, number = outcome.key.rsplit("\x1f", 1)
                record = _record(outcome, identifier, shas[identifier], base, finished.node)
                results.setdefault(identifier, {})[int(number)] = record
                if len(results[identifier]) == expected[identifier]:
                    samples = results.pop(identifier)
                    write(by_id[identifier], vote([samples[i] for i in range(len(samples))]))
    stage.finish([t.id for t in inputs])
    return StageReport(name, len(inputs), len(todo), time.monotonic() - start)


def _record(outcome: Outcome, identifier: str, sha: str, base: dict[str, Any], node: str | None) -> SolveRecord:
    common = {"id": identifier, "seconds": round(outcome.seconds, 4), "program": sha, "node": node, **base}
    if outcome.status == "timeout":
        return SolveRecord(**common, error=StageError(category=ErrorCategory.timeout, message=outcome.message))
    if outcome.status != "ok":
        return SolveRecord(**common, error=StageError(category=ErrorCategory.execution, message=outcome.message))
    result: SolverOutcome = outcome.value
    return SolveRecord(**common, verdict=result.verdict, explanation=result.explanation, error=result.error)


def vote(samples: list[SolveRecord]) -> SolveRecord:
    """Self-consistency: the most common verdict among samples that produced one (ties: earliest)."""
    if len(samples) == 1:
        return samples[0]
    verdicts = [s.verdict for s in samples if s.verdict is not None]
    if not verdicts:
        chosen = samples[0]
    else:
        counts = Counter(verdicts)
        best = max(counts.values())
        winner = next(v for v in verdicts if counts[v] == best)
        chosen = next(s for s in samples if s.verdict == winner)
    explanation = dict(chosen.explanation or {})
    explanation["votes"] = [s.verdict or (s.error.category.value if s.error else None) for s in samples]
    return chosen.model_copy(update={"explanation": explanation,
                                     "seconds": round(sum(s.seconds for s in samples), 4)})
