"""Refine: send each failed program and the solver's exact error back to the model, round by round;
each round writes refine-N.jsonl (the repairs) and solve-N.jsonl (their results).

With --refine semantic (Logic-LM++), a program that executed is revised too: the model rewrites it given
the problem, the revision is solved, and the model compares the two (compare.py, compare-N.jsonl); the
revision replaces the program only if it wins, otherwise the trajectory backtracks to the program.
"""

from __future__ import annotations

import time
from functools import partial

from ..core.errors import LLMError
from ..core.records import REFINABLE, REVISE_SOURCE, FormulateRecord, executed, stage_error
from ..core.trajectory import Trajectory, program_sha
from ..llm import Request
from ..llm.constrain import check_refusal, field_for, grammar_for
from ..prompts import extract_program, problem_fields
from . import compare
from .context import RunContext, StageReport
from .llmcalls import Result, send, usage
from .solve import overlapped

REVISE = "revise"


def run(ctx: RunContext, trajectories: list[Trajectory]) -> list[StageReport]:
    model = ctx.config.refine_with
    if model is None:
        why = "--max-rounds is 0" if ctx.config.max_rounds == 0 else "no model (give --model or --refine-model)"
        return [StageReport("refine", 0, 0, 0.0, note=f"nothing refined: {why}")]
    semantic = ctx.config.refine == "semantic"
    reports = []
    for round_ in range(1, ctx.config.max_rounds + 1):
        due = [t for t in trajectories if _refinable(t, round_) or (semantic and _revisable(t, round_))]
        if not due:
            break
        # Each new program is solved as soon as it arrives, while the model writes the others.
        reports += overlapped(ctx, due, round_, partial(_ask, model=model, round_=round_))
        if semantic:
            reports.append(compare.decide(ctx, due, model, round_))
    return reports


def _refinable(trajectory: Trajectory, round_: int) -> bool:
    latest = trajectory.latest_solve(before=round_)
    return (latest is not None and latest.error is not None and latest.error.category in REFINABLE
            and trajectory.latest_program(before=round_) is not None)


def _revisable(trajectory: Trajectory, round_: int) -> bool:
    """A program that executed is revised until a revision of it is not taken."""
    latest = trajectory.latest_solve(before=round_)
    return (latest is not None and executed(latest.error) and not trajectory.rejected(before=round_)
            and trajectory.latest_program(before=round_) is not None)


def _ask(ctx: RunContext, due: list[Trajectory], model: str, round_: int) -> list[StageReport]:
    """One repair request per failing program and one revision request per executed one (those an
    earlier, interrupted run did not get back)."""
    start = time.monotonic()
    name = f"refine-{round_}"
    stage = ctx.store.file(name, FormulateRecord)
    todo = [t for t in due if round_ not in t.refined or t.refined[round_].retry()]
    repair = ctx.prompts.refine(ctx.task.prompt)
    revise = ctx.prompts.get(REVISE) if ctx.config.refine == "semantic" else None
    guide = ctx.prompts.guide(ctx.task.solver)
    by_id = {t.id: t for t in todo}
    parents: dict[str, str] = {}
    config = ctx.config
    grammar = grammar_for(ctx.task.solver, config.max_tokens) if config.constrain else None
    requests = []
    for trajectory in todo:
        parent, latest = trajectory.latest_program(before=round_), trajectory.latest_solve(before=round_)
        if parent is None or latest is None:
            continue
        fields = {"program": parent.program or "", "guide": guide, **problem_fields(trajectory.problem)}
        if latest.error is not None and latest.error.category in REFINABLE:
            messages, purpose = repair.render(error=latest.error.message, **fields), "refine"
        elif revise is not None and executed(latest.error):
            messages, purpose = revise.render(**fields), "revise"
        else:
            continue
        parents[trajectory.id] = program_sha(parent)
        requests.append(Request(trajectory.id, messages, 0.0, config.max_tokens, purpose=purpose,
                                problem=trajectory.id, grammar=grammar,
                                grammar_field=field_for(config.constrain_format),
                                stop=repair.stop if purpose == "refine" else ()))
    written = 0

    def arrived(request: Request, result: Result) -> None:
        nonlocal written
        if grammar is not None and isinstance(result, LLMError):
            check_refusal(result, config.constrain_format)
        if isinstance(result, Exception):
            program, error = None, stage_error(result)
        else:
            program, error = extract_program(result.text), None
        prompt = revise if request.purpose == "revise" and revise is not None else repair
        source = f"{REVISE_SOURCE}{model}" if prompt is revise else f"refine:{model}"
        record = FormulateRecord(
            id=request.key, dataset=ctx.task.dataset, round=round_, source=source, program=program,
            usage=usage([result]), prompt_id=prompt.id, prompt_hash=prompt.hash, parent=parents[request.key],
            error=error)
        stage.write(record)
        by_id[request.key].set_refined(record)
        if ctx.on_program is not None:
            ctx.on_program(by_id[request.key])
        written += 1
        ctx.progress(name, written, len(todo))

    send(ctx, model, requests, arrived)
    stage.finish([t.id for t in due])
    return [StageReport(name, len(due), len(requests), time.monotonic() - start)]
