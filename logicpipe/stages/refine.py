"""Refine: send each failed program and the solver's exact error back to the model, round by round;
each round writes refine-N.jsonl (the repairs) and solve-N.jsonl (their results).

With --refine semantic (Logic-LM++), a program that executed is revised too: the model rewrites it given
the problem, the revision is solved, and the model compares the two (compare.py, compare-N.jsonl); the
revision replaces the program only if it wins, otherwise the trajectory backtracks to the program.

A reply that holds no program is a failed repair (no_program, the reply kept): the standing program stays,
and the next round asks again saying so. No round sends a problem's request that an earlier round sent
(the same messages would bring the same reply): the problem stops refining there instead.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from functools import partial

from ..core.errors import LLMError
from ..core.records import (
    REFINABLE,
    REVISE_SOURCE,
    ErrorCategory,
    FormulateRecord,
    StageError,
    executed,
    stage_error,
    text_sha,
)
from ..core.trajectory import Trajectory, program_sha
from ..llm import Request
from ..llm.constrain import check_refusal, constraint_for, field_for
from ..prompts import problem_fields
from . import compare
from .context import RunContext, StageReport
from .llmcalls import Result, send, usage
from .replies import NO_PROGRAM, read_program
from .solve import overlapped

REVISE = "revise"
# Added to the solver's error in the repair request after a reply that held no program.
NO_PROGRAM_BEFORE = "\n\nYour previous reply held no program. Answer with the whole corrected program."


def run(ctx: RunContext, trajectories: list[Trajectory]) -> list[StageReport]:
    model = ctx.config.refine_with
    if model is None:
        why = "--max-rounds is 0" if ctx.config.max_rounds == 0 else "no model (give --model or --refine-model)"
        return [StageReport("refine", 0, 0, 0.0, note=f"nothing refined: {why}")]
    semantic = ctx.config.refine == "semantic"
    reports = []
    for round_ in range(1, ctx.config.max_rounds + 1):
        candidates = [t for t in trajectories if _refinable(t, round_) or (semantic and _revisable(t, round_))]
        asks = _requests(ctx, candidates, round_)
        # A trajectory whose request this round would repeat one it sent before stops here: the model
        # (at temperature 0, or from the cache) would only give the same reply again.
        due = [t for t in candidates if t.id in asks or (round_ in t.refined and not t.refined[round_].retry())]
        repeated = len(candidates) - len(due)
        if not due:
            if repeated:
                reports.append(StageReport(f"refine-{round_}", 0, 0, 0.0, note=_stopped(repeated, round_)))
            break
        # Each new program is solved as soon as it arrives, while the model writes the others.
        reports += overlapped(ctx, due, round_, partial(_ask, model=model, round_=round_, asks=asks,
                                                        repeated=repeated))
        if semantic:
            reports.append(compare.decide(ctx, due, model, round_))
    return reports


def _stopped(count: int, round_: int) -> str:
    problems = "problem stops" if count == 1 else "problems stop"
    return f"refine-{round_}: {count} {problems} refining, as the next request would repeat an earlier round's"


def _refinable(trajectory: Trajectory, round_: int) -> bool:
    latest = trajectory.latest_solve(before=round_)
    return (latest is not None and latest.error is not None and latest.error.category in REFINABLE
            and trajectory.latest_program(before=round_) is not None)


def _revisable(trajectory: Trajectory, round_: int) -> bool:
    """A program that executed is revised until a revision of it is not taken."""
    latest = trajectory.latest_solve(before=round_)
    return (latest is not None and executed(latest.error) and not trajectory.rejected(before=round_)
            and trajectory.latest_program(before=round_) is not None)


def request_sha(messages: list[dict[str, str]]) -> str:
    """What identifies a request's content: at temperature 0 the same messages get the same reply."""
    return text_sha(json.dumps(messages, sort_keys=True, ensure_ascii=False))


@dataclass
class _Ask:
    request: Request
    parent: str  # program hash of the program it repairs or revises
    sha: str  # request_sha of its messages


def _requests(ctx: RunContext, candidates: list[Trajectory], round_: int) -> dict[str, _Ask]:
    """One repair request per failing program and one revision request per executed one, for those an
    earlier, interrupted run did not get back; none where it would repeat an earlier round's request."""
    config = ctx.config
    repair = ctx.prompts.refine(ctx.task.prompt)
    revise = ctx.prompts.get(REVISE) if config.refine == "semantic" else None
    guide = ctx.prompts.guide(ctx.task.solver)
    constraint = constraint_for(ctx.task.solver, config.max_tokens) if config.constrain else None
    grammar = constraint.grammar if constraint else None
    asks = {}
    for trajectory in candidates:
        if round_ in trajectory.refined and not trajectory.refined[round_].retry():
            continue
        parent, latest = trajectory.latest_program(before=round_), trajectory.latest_solve(before=round_)
        if parent is None or latest is None:
            continue
        fields = {"program": parent.program or "", "guide": guide, **problem_fields(trajectory.problem)}
        if latest.error is not None and latest.error.category in REFINABLE:
            message = latest.error.message
            before = trajectory.refined.get(round_ - 1)
            if before is not None and before.error is not None and before.error.category == ErrorCategory.no_program:
                message += NO_PROGRAM_BEFORE  # so this round does not send the request that got no program
            messages, purpose = repair.render(error=message, **fields), "refine"
        elif revise is not None and executed(latest.error):
            messages, purpose = revise.render(**fields), "revise"
        else:
            continue
        sha = request_sha(messages)
        if any(record.request == sha for r, record in trajectory.refined.items() if r < round_):
            continue
        asks[trajectory.id] = _Ask(
            Request(trajectory.id, messages, 0.0, config.max_tokens, purpose=purpose, problem=trajectory.id,
                    grammar=grammar, grammar_field=field_for(config.constrain_format),
                    then=constraint.then if constraint else None,
                    stop=repair.stop if purpose == "refine" else ()),
            program_sha(parent), sha)
    return asks


def _ask(ctx: RunContext, due: list[Trajectory], model: str, round_: int, asks: dict[str, _Ask],
         repeated: int) -> list[StageReport]:
    """Send the round's requests; each reply is written as it arrives. A reply that holds no program
    leaves the standing program in place: it is recorded as a failed repair (no_program, with the reply)."""
    start = time.monotonic()
    name = f"refine-{round_}"
    stage = ctx.store.file(name, FormulateRecord)
    todo = [t for t in due if t.id in asks]
    repair = ctx.prompts.refine(ctx.task.prompt)
    revise = ctx.prompts.get(REVISE) if ctx.config.refine == "semantic" else None
    by_id = {t.id: t for t in todo}
    config = ctx.config
    constrained = config.constrain
    written = 0

    def arrived(request: Request, result: Result) -> None:
        nonlocal written
        if constrained and isinstance(result, LLMError):
            check_refusal(result, config.constrain_format)
        reply, error, program = None, None, None
        if isinstance(result, Exception):
            error = stage_error(result)
        else:
            program = read_program(result.text, ctx.task.solver)
            if program is None:
                reply, error = result.text, StageError(category=ErrorCategory.no_program, message=NO_PROGRAM)
        prompt = revise if request.purpose == "revise" and revise is not None else repair
        source = f"{REVISE_SOURCE}{model}" if prompt is revise else f"refine:{model}"
        ask = asks[request.key]
        record = FormulateRecord(
            id=request.key, dataset=ctx.task.dataset, round=round_, source=source, program=program,
            usage=usage([result]), prompt_id=prompt.id, prompt_hash=prompt.hash, parent=ask.parent,
            error=error, reply=reply, request=ask.sha)
        stage.write(record)
        by_id[request.key].set_refined(record)
        if ctx.on_program is not None:
            ctx.on_program(by_id[request.key])
        written += 1
        ctx.progress(name, written, len(todo))

    send(ctx, model, [asks[t.id].request for t in todo], arrived)
    stage.finish([t.id for t in due])
    return [StageReport(name, len(due), len(todo), time.monotonic() - start,
                        note=_stopped(repeated, round_) if repeated else "")]
