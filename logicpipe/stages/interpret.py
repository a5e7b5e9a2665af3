"""Interpret: map each latest verdict onto the answer space; give what did not execute a backup answer."""

from __future__ import annotations

import random
import time
from dataclasses import dataclass

from ..core.records import (
    EXECUTED_CATEGORIES,
    ErrorCategory,
    InterpretRecord,
    Problem,
    StageError,
    Usage,
    stage_error,
)
from ..core.trajectory import Trajectory
from ..llm import Request
from ..prompts import extract_choice, problem_fields
from ..solvers import map_answer
from ..solvers.base import option_letters
from .context import RunContext, StageReport
from .llmcalls import Result, send, usage

NAME = "interpret"


def run(ctx: RunContext, trajectories: list[Trajectory]) -> list[StageReport]:
    start = time.monotonic()
    stage = ctx.store.file(NAME, InterpretRecord)
    inputs = [t for t in trajectories if t.latest_solve() is not None]
    todo = [t for t in inputs if t.interpreted is None or t.interpreted.retry()]
    mapped = {t.id: _map(ctx, t) for t in todo}
    cot: dict[str, Answer] = {}
    if ctx.config.backup == "cot":
        unexecuted = [t.problem for t in todo if not executed(mapped[t.id][1])]
        cot = ask(ctx, unexecuted, "cot")
    for count, trajectory in enumerate(todo, start=1):
        record = _interpret(ctx, trajectory, *mapped[trajectory.id], cot.get(trajectory.id))
        stage.write(record)
        trajectory.interpreted = record
        ctx.progress(NAME, count, len(todo))
    stage.finish([t.id for t in inputs])
    return [StageReport(NAME, len(inputs), len(todo), time.monotonic() - start)]


def executed(error: StageError | None) -> bool:
    return error is None or error.category in EXECUTED_CATEGORIES


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


def ask(ctx: RunContext, problems: list[Problem], prompt_id: str) -> dict[str, Answer]:
    """One Standard or chain-of-thought answer per problem (baselines and the `cot` backup)."""
    model = ctx.config.model
    if not problems or model is None:
        return {}
    prompt = ctx.prompts.get(prompt_id)
    answers: dict[str, Answer] = {}
    by_id = {p.id: p for p in problems}

    def arrived(request: Request, result: Result) -> None:
        if isinstance(result, Exception):
            answers[request.key] = Answer(None, usage([result]), stage_error(result))
            return
        choice = extract_choice(result.text, sorted(option_letters(by_id[request.key].options)))
        error = None if choice else StageError(category=ErrorCategory.no_answer,
                                               message="the reply names no option letter")
        answers[request.key] = Answer(choice, usage([result]), error)

    requests = [Request(p.id, prompt.render(**problem_fields(p)), ctx.config.temperature, ctx.config.max_tokens,
                        purpose=prompt_id, problem=p.id) for p in problems]
    send(ctx, model, requests, arrived)
    return answers
