"""Interpret: map each latest verdict onto the answer space; give what did not execute a backup answer."""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from dataclasses import dataclass

from ..core.records import (
    ErrorCategory,
    InterpretRecord,
    Problem,
    StageError,
    Usage,
    Vote,
    executed,
    stage_error,
)
from ..core.trajectory import Trajectory
from ..core.vote import majority
from ..llm import Request
from ..prompts import problem_fields
from ..solvers import map_answer
from ..solvers.base import option_letters
from .context import RunContext, StageReport
from .llmcalls import Result, Samples, send, usage
from .replies import read_answer

NAME = "interpret"


def run(ctx: RunContext, trajectories: list[Trajectory]) -> list[StageReport]:
    start = time.monotonic()
    stage = ctx.store.file(NAME, InterpretRecord)
    inputs = [t for t in trajectories if t.latest_solve() is not None]
    todo = [t for t in inputs if t.interpreted is None or t.interpreted.retry()]
    mapped = {t.id: _map(ctx, t) for t in todo}
    by_id = {t.id: t for t in todo}
    written = 0

    def write(trajectory: Trajectory, cot: Answer | None) -> None:
        nonlocal written
        record = _interpret(ctx, trajectory, *mapped[trajectory.id], cot)
        stage.write(record)
        trajectory.interpreted = record
        written += 1
        ctx.progress(NAME, written, len(todo))

    asking = [t for t in todo if ctx.config.backup == "cot" and not executed(mapped[t.id][1])]
    asked = {t.id for t in asking}
    for trajectory in todo:
        if trajectory.id not in asked:
            write(trajectory, None)
    # Each chain-of-thought answer is written as it arrives, so a stopped run keeps those it got.
    ask(ctx, [t.problem for t in asking], "cot", lambda pid, answer: write(by_id[pid], answer))
    stage.finish([t.id for t in inputs])
    return [StageReport(NAME, len(inputs), len(todo), time.monotonic() - start)]


def _map(ctx: RunContext, trajectory: Trajectory) -> tuple[str | None, StageError | None]:
    record = trajectory.latest_solve()
    if record is None or record.error is not None:
        return None, record.error if record else None
    predicted = map_answer(record.verdict, trajectory.problem.options, ctx.task.closed_world)
    if predicted is None:
        return None, StageError(category=ErrorCategory.no_answer, message=f"verdict {record.verdict!r} matches no option")
    return predicted, None


def _interpret(ctx: RunContext, trajectory: Trajectory, predicted: str | None, error: StageError | None,
               cot: Answer | None) -> InterpretRecord:
    latest = trajectory.latest_solve()
    final, backup, spent, backup_error = predicted, None, None, None
    if not executed(error) and cot is not None:
        final, backup, spent, backup_error = cot.choice, "cot", cot.usage, cot.error
    if not executed(error) and final is None and ctx.config.backup in ("random", "cot"):
        letters = sorted(option_letters(trajectory.problem.options)) or ["A"]
        # Seeded per problem, so the guess does not depend on order, workers or resumption.
        final = random.Random(f"{ctx.config.seed}:{trajectory.id}").choice(letters)
        backup = "random" if backup is None else "cot, then random"
    return InterpretRecord(id=trajectory.id, predicted=predicted, executed=executed(error), final=final,
                           backup=backup, backup_error=backup_error, error=error, usage=spent,
                           round=latest.round if latest else 0, program=latest.program if latest else None)


@dataclass
class Answer:
    choice: str | None
    usage: Usage
    error: StageError | None
    votes: list[Vote] | None = None  # with samples > 1: each sample's answer or error, in sample order


def ask(ctx: RunContext, problems: list[Problem], prompt_id: str, answered: Callable[[str, Answer], None],
        samples: int = 1) -> None:
    """One Standard or chain-of-thought answer per problem (baselines and the `cot` backup), handed to
    `answered` as each one arrives. With `samples` K > 1 (self-consistency, Wang et al. 2023), K sampled
    replies per problem, each its own request and cache entry (sample index i, as formulate's samples),
    and the answer is their majority (core/vote.py), handed on once all K are back."""
    model = ctx.config.model
    if not problems or model is None:
        return
    prompt = ctx.prompts.get(prompt_id)
    by_id = {p.id: p for p in problems}
    gathered: Samples[Answer] = Samples(samples, lambda pid, each: answered(pid, voted(each)))

    def read(pid: str, result: Result) -> Answer:
        if isinstance(result, Exception):
            return Answer(None, usage([result]), stage_error(result))
        reading = read_answer(result.text, by_id[pid].options)
        error = None if reading.letter else StageError(category=ErrorCategory.no_answer,
                                                       message=reading.reason or "the reply names no option")
        return Answer(reading.letter, usage([result]), error)

    def arrived(request: Request, result: Result) -> None:
        if samples == 1:
            answered(request.key, read(request.key, result))
            return
        gathered.add(request.key, read(request.problem, result))

    # One sample keeps the request (key and sample index 0) a run without samples sends.
    requests = [Request(p.id if samples == 1 else Samples.key(p.id, i), prompt.render(**problem_fields(p)),
                        ctx.config.temperature, ctx.config.max_tokens, sample=i, seed=ctx.config.sample_seed,
                        purpose=prompt_id, problem=p.id)
                for p in problems for i in range(samples)]
    send(ctx, model, requests, arrived)


def voted(answers: list[Answer]) -> Answer:
    """The samples' majority (the most common option among those that named one, ties to the first seen),
    with what all of them cost. Where none named an option there is no answer and no guess: a failed
    request that may succeed later (transient) is the error, so the next run asks again; else no_answer."""
    votes = [Vote(answer=a.choice, error=a.error) for a in answers]
    spent = sum((a.usage for a in answers), Usage())
    choice = majority(a.choice for a in answers)
    if choice is not None:
        return Answer(choice, spent, None, votes)
    errors = [a.error for a in answers if a.error is not None]
    transient = next((e for e in errors if e.transient), None)
    if transient is not None:
        return Answer(None, spent, transient, votes)
    said = ", ".join(e.category.value for e in errors)
    return Answer(None, spent, StageError(category=ErrorCategory.no_answer, message=(
        f"none of the {len(answers)} samples named an option ({said}); the first: {errors[0].message}")), votes)
