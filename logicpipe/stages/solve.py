"""Solve: run every program (every sample) on the run's executor (local pool or Ray); vote over samples."""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable
from typing import Any

from ..core.errors import RunStopped
from ..core.records import ErrorCategory, SolveRecord, StageError
from ..core.trajectory import Trajectory, program_sha
from ..core.vote import majority
from ..runtime.pool import Fetch, Outcome, SolverCall, fixed
from ..solvers import SolverOutcome
from .context import RunContext, Stage, StageReport

NAME = "solve"
# How long a failed run waits for the model side to notice before it gives up its directory.
_HALT_SECONDS = 30.0


def run(ctx: RunContext, trajectories: list[Trajectory]) -> list[StageReport]:
    return [solve_round(ctx, trajectories, 0)]


Arrivals = queue.SimpleQueue["Trajectory | None"]


def overlapped(ctx: RunContext, trajectories: list[Trajectory], round_: int, produce: Stage) -> list[StageReport]:
    """Run `produce` (a stage that writes round `round_`'s programs: formulate, or one refinement round)
    in a thread, and solve each program as soon as it is written. The run then takes about as long as
    the slower of the model and the solver, not their sum."""
    arrivals: Arrivals = queue.SimpleQueue()
    for trajectory in trajectories:  # what an earlier run already wrote needs no model call
        source = trajectory.source(round_)
        if source is not None and not source.retry():
            arrivals.put(trajectory)
    reports: list[StageReport] = []
    failure: list[BaseException] = []

    def producer() -> None:
        try:
            reports.extend(produce(ctx, trajectories))
        except BaseException as exc:  # noqa: BLE001 - handed to the solving thread, which re-raises it
            failure.append(exc)
        finally:
            arrivals.put(None)

    halted = threading.Event()

    def ready(trajectory: Trajectory) -> None:
        if halted.is_set():  # the solving side failed: stop the model's requests too
            raise RunStopped("stopped: the solver side of the run failed")
        arrivals.put(trajectory)

    ctx.on_program = ready
    thread = threading.Thread(target=producer, name=f"model-round-{round_}", daemon=True)
    thread.start()
    try:
        solved = solve_round(ctx, trajectories, round_, arrivals)
    except BaseException:
        # Nothing may write after the run lets go of its directory: the next reply stops the model side,
        # and a provider's batch is no longer waited for.
        halted.set()
        if ctx.gate is not None:
            ctx.gate.stop()
        thread.join(_HALT_SECONDS)
        raise
    finally:
        ctx.on_program = None
    thread.join()
    if failure:
        raise failure[0]
    return [*reports, solved]


def solve_round(ctx: RunContext, trajectories: list[Trajectory], round_: int,
                arrivals: Arrivals | None = None) -> StageReport:
    """Solve round `round_` (0: the formulated programs; N: the repairs of refinement round N) for the
    trajectories that have a program for it; with `arrivals`, for each trajectory as it arrives there
    (None ends them)."""
    start = time.monotonic()
    name = NAME if round_ == 0 else f"{NAME}-{round_}"
    stage = ctx.store.file(name, SolveRecord)
    base: dict[str, Any] = {"dataset": ctx.task.dataset, "solver": ctx.task.solver, "round": round_}
    timeout = ctx.config.timeout or ctx.task.timeout
    # Streaming, programs still to be written count too; what an earlier run solved does not.
    total = sum(_due(t, round_) or (arrivals is not None and t.source(round_) is None) for t in trajectories)
    done = 0
    expected: dict[str, int] = {}
    shas: dict[str, str] = {}
    by_id: dict[str, Trajectory] = {}
    copies: dict[str, list[int]] = {}  # per problem, each sample's first sample with the same program

    def write(trajectory: Trajectory, record: SolveRecord) -> None:
        nonlocal done
        stage.write(record)
        trajectory.set_solved(record)
        done += 1
        ctx.progress(name, done, total)

    def tasks_for(trajectory: Trajectory) -> list[SolverCall]:
        """The solver calls a trajectory needs; a program that failed upstream is written at once."""
        source = trajectory.source(round_)
        if source is None or not _due(trajectory, round_):
            return []
        sha, programs = program_sha(source), source.programs()
        if source.error is not None or not programs:
            error = source.error or StageError(category=ErrorCategory.no_program, message="empty program")
            write(trajectory, SolveRecord(id=trajectory.id, error=error, program=sha, **base))
            return []
        # Samples that wrote the same program (LINC's ten often repeat) are solved once: the same text
        # under the same limits gives the same verdict, and a search that runs to its limit is not run
        # again for each copy.
        first: dict[str, int] = {}
        copies[trajectory.id] = [first.setdefault(text, index) for index, text in enumerate(programs)]
        expected[trajectory.id], shas[trajectory.id], by_id[trajectory.id] = len(first), sha, trajectory
        payload: dict[str, Any] = {"solver": ctx.task.solver,
                                   "limits": {"seconds": timeout, "memory_mb": ctx.config.memory_mb}}
        if ctx.config.strict:  # only Logic-LM's grammar: a program needing another leniency is a parse error
            payload["strict"] = True
        # The hard bound leaves the solver's own limit room to report a clean timeout first.
        return [SolverCall(f"{trajectory.id}\x1f{index}", {**payload, "program": text}, timeout * 1.5 + 5)
                for text, index in first.items()]

    fetch: Fetch | None
    if arrivals is not None:
        fetch = _fetcher(arrivals, tasks_for)
    else:
        tasks = [task for t in trajectories for task in tasks_for(t)]
        fetch = fixed(tasks) if tasks else None
    results: dict[str, dict[int, SolveRecord]] = {}
    if fetch is not None:
        for finished in ctx.executor().stream(fetch):
            outcome = finished.outcome
            identifier, number = outcome.key.rsplit("\x1f", 1)
            record = solve_record(outcome, identifier, shas[identifier], base, finished.node)
            results.setdefault(identifier, {})[int(number)] = record
            if len(results[identifier]) == expected[identifier]:
                solved, same = results.pop(identifier), copies.pop(identifier)
                record = vote(_samples(solved, same))
                if len(same) > 1:  # the distinct programs among the samples, each solved once
                    record = record.model_copy(update={"explanation": {**(record.explanation or {}),
                                                                       "distinct_programs": len(solved)}})
                write(by_id[identifier], record)
    inputs = [t for t in trajectories if t.source(round_) is not None]
    stage.finish([t.id for t in inputs])
    return StageReport(name, len(inputs), done, time.monotonic() - start)


def _samples(solved: dict[int, SolveRecord], copies: list[int]) -> list[SolveRecord]:
    """Every sample's record, in sample order: a repeated program's is its first sample's, with no time
    of its own (it was not solved again)."""
    return [solved[first] if first == index else solved[first].model_copy(update={"seconds": 0.0})
            for index, first in enumerate(copies)]


def _due(trajectory: Trajectory, round_: int) -> bool:
    return trajectory.source(round_) is not None and (round_ not in trajectory.solved
                                                       or trajectory.solved[round_].retry())


def _fetcher(arrivals: Arrivals, tasks_for: Callable[[Trajectory], list[SolverCall]]) -> Fetch:
    closed = False

    def fetch(timeout: float | None) -> list[SolverCall] | None:
        nonlocal closed
        if closed:
            return None
        tasks: list[SolverCall] = []
        try:
            item = arrivals.get(timeout=timeout) if timeout != 0 else arrivals.get_nowait()
            while True:
                if item is None:
                    closed = True
                    break
                tasks += tasks_for(item)
                item = arrivals.get_nowait()
        except queue.Empty:
            pass
        return tasks if tasks or not closed else None

    return fetch


def solve_record(outcome: Outcome, identifier: str, sha: str | None, base: dict[str, Any],
                 node: str | None = None) -> SolveRecord:
    """The solve record of one outcome (one program, one sample); `node` names the cluster node that ran it."""
    common = {"id": identifier, "seconds": round(outcome.seconds, 4), "program": sha, "node": node, **base}
    if outcome.status == "timeout":
        return SolveRecord(**common, error=StageError(category=ErrorCategory.timeout, message=outcome.message))
    if outcome.status != "ok":
        return SolveRecord(**common, error=StageError(category=ErrorCategory.execution, message=outcome.message))
    result: SolverOutcome = outcome.value
    error = None if result.error is None else StageError(category=result.error.category, message=result.error.message)
    return SolveRecord(**common, verdict=result.verdict, explanation=result.explanation, error=error,
                       lenient=result.lenient)


def vote(samples: list[SolveRecord]) -> SolveRecord:
    """Self-consistency: the most common verdict among samples that produced one (ties: earliest)."""
    if len(samples) == 1:
        return samples[0]
    verdicts = [s.verdict for s in samples if s.verdict is not None]
    if not verdicts:
        chosen = samples[0]
    else:
        winner = majority(verdicts)
        chosen = next(s for s in samples if s.verdict == winner)
    explanation = dict(chosen.explanation or {})
    explanation["votes"] = [s.verdict or (s.error.category.value if s.error else None) for s in samples]
    return chosen.model_copy(update={"explanation": explanation,
                                     "seconds": round(sum(s.seconds for s in samples), 4)})
