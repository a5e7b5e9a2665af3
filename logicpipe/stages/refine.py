"""Refine: send each failed program and the solver's exact error back to the model, round by round;
each round writes refine-N.jsonl (the repairs) and solve-N.jsonl (their results)."""

from __future__ import annotations

import time
from functools import partial

from ..core.records import REFINABLE, FormulateRecord, stage_error
from ..core.trajectory import Trajectory, program_sha
from ..errors import LLMError
from ..llm import Request
from ..llm.constrain import check_refusal, field_for, grammar_for
from ..prompts import extract_program, problem_fields
from .context import RunContext, StageReport
from .llmcalls import Result, send, usage
from .solve import overlapped

PROMPT = "refine"


def run(ctx: RunContext, trajectories: list[Trajectory]) -> list[StageReport]:
    model = ctx.config.refine_with
    if model is None:
        why = "--max-rounds is 0" if ctx.config.max_rounds == 0 else "no model (give --model or --refine-model)"
        return [StageReport("refine", 0, 0, 0.0, note=f"nothing refined: {why}")]
    reports = []
    for round_ in range(1, ctx.config.max_rounds + 1):
        failing = [t for t in trajectories if _refinable(t, round_)]
        if not failing:
            break
        # Each repair is solved as soon as it arrives, while the model writes the others.
        reports += overlapped(ctx, failing, round_, partial(_ask, model=model, round_=round_))
    return reports


def _refinable(trajectory: Trajectory, round_: int) -> bool:
    latest = trajectory.latest_solve(before=round_)
    return (latest is not None and latest.error is not None and latest.error.category in REFINABLE
            and trajectory.latest_program(before=round_) is not None)


def _ask(ctx: RunContext, failing: list[Trajectory], model: str, round_: int) -> list[StageReport]:
    """One repair request per failing program (those an earlier, interrupted run did not get back)."""
    start = time.monotonic()
    name = f"refine-{round_}"
    stage = ctx.store.file(name, FormulateRecord)
    todo = [t for t in failing if round_ not in t.refined or t.refined[round_].retry()]
    prompt, guide = ctx.prompts.refine(ctx.task.prompt), ctx.prompts.guide(ctx.task.solver)
    by_id = {t.id: t for t in todo}
    parents: dict[str, str] = {}
    config = ctx.config
    grammar = grammar_for(ctx.task.solver) if config.constrain else None
    requests = []
    for trajectory in todo:
        parent, latest = trajectory.latest_program(before=round_), trajectory.latest_solve(before=round_)
        if parent is None or latest is None or latest.error is None:
            continue
        parents[trajectory.id] = program_sha(parent)
        messages = prompt.render(program=parent.program or "", error=latest.error.message, guide=guide,
                                 **problem_fields(trajectory.problem))
        requests.append(Request(trajectory.id, messages, 0.0, config.max_tokens, purpose="refine",
                                problem=trajectory.id, grammar=grammar,
                                grammar_field=field_for(config.constrain_format), stop=prompt.stop))
    written = 0

    def arrived(request: Request, result: Result) -> None:
        nonlocal written
        if grammar is not None and isinstance(result, LLMError):
            check_refusal(result, config.constrain_format)
        if isinstance(result, Exception):
            program, error = None, stage_error(result)
        else:
            program, error = extract_program(result.text), None
        record = FormulateRecord(
            id=request.key, dataset=ctx.task.dataset, round=round_, source=f"refine:{model}", program=program,
            usage=usage([result]), prompt_id=prompt.id, prompt_hash=prompt.hash, parent=parents[request.key],
            error=error)
        stage.write(record)
        by_id[request.key].set_refined(record)
        if ctx.on_program is not None:
            ctx.on_program(by_id[request.key])
        written += 1
        ctx.progress(name, written, len(todo))

    send(ctx, model, requests, arrived)
    stage.finish([t.id for t in failing])
    return [StageReport(name, len(failing), len(requests), time.monotonic() - start)]
