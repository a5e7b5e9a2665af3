"""Formulate: one program per problem (K samples with self-consistency), replayed or written by a model."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path

from ..core.errors import LLMError
from ..core.jsonl import MAX_RECORD_BYTES
from ..core.records import ErrorCategory, FormulateRecord, StageError, stage_error
from ..core.trajectory import Trajectory
from ..data import index_programs
from ..llm import Request
from ..llm.constrain import check_refusal, constraint_for, field_for
from ..prompts import problem_fields
from .context import RunContext, StageReport
from .llmcalls import Result, Samples, send, usage
from .replies import NO_PROGRAM, read_program

NAME = "formulate"
# The largest replayed program (as JSON) a formulate record can hold beside its other fields: a third of
# a record, as llm/client.py's text_bound(1) (not imported: a replay loads no model client).
MAX_REPLAYED_BYTES = MAX_RECORD_BYTES // 3
Write = Callable[[Trajectory, FormulateRecord], None]


def run(ctx: RunContext, trajectories: list[Trajectory]) -> list[StageReport]:
    start = time.monotonic()
    stage = ctx.store.file(NAME, FormulateRecord)
    todo = [t for t in trajectories if t.formulated is None or t.formulated.retry()]

    def write(trajectory: Trajectory, record: FormulateRecord) -> None:
        stage.write(record)
        trajectory.set_formulated(record)
        if ctx.on_program is not None:
            ctx.on_program(trajectory)
        done.append(record.id)
        ctx.progress(NAME, len(done), len(todo))

    done: list[str] = []
    if todo and ctx.config.programs is not None:
        _replay(ctx, ctx.config.programs, todo, write)
    elif todo:
        _ask(ctx, todo, write)
    stage.finish([t.id for t in trajectories])
    return [StageReport(NAME, len(trajectories), len(todo), time.monotonic() - start)]


def _replay(ctx: RunContext, path: Path, todo: list[Trajectory], write: Write) -> None:
    programs = index_programs(path).samples(t.id for t in todo)  # this chunk's, read from the file now
    for trajectory in todo:
        samples = programs.get(trajectory.id) or []
        text = next((sample for sample in samples if sample.strip()), None)
        error = None if text else StageError(category=ErrorCategory.no_program,
                                             message=f"no program for this id in {path.name}")
        size = len(json.dumps(samples, ensure_ascii=False).encode("utf-8", "surrogatepass")) if text else 0
        if size > MAX_REPLAYED_BYTES:  # it could not be written: this problem's error, the others go on
            text, samples, error = None, [], StageError(category=ErrorCategory.no_program, message=(
                f"the program in {path.name} is {size} bytes, over the {MAX_REPLAYED_BYTES}-byte bound of a "
                "record; it is not run"))
        write(trajectory, FormulateRecord(id=trajectory.id, dataset=ctx.task.dataset, program=text,
                                          samples=samples if len(samples) > 1 else [],
                                          source=f"replay:{path.name}", error=error))


def _ask(ctx: RunContext, todo: list[Trajectory], write: Write) -> None:
    """K samples per problem (K = num_samples); one record once all K are back."""
    config = ctx.config
    model = config.model or ""
    prompt = ctx.prompts.get(ctx.task.prompt)
    samples = config.num_samples
    by_id = {t.id: t for t in todo}
    constraint = constraint_for(ctx.task.solver, config.max_tokens) if config.constrain else None
    grammar = constraint.grammar if constraint else None
    requests = [Request(Samples.key(t.id, i), prompt.render(**problem_fields(t.problem)), config.temperature,
                        config.max_tokens, sample=i, seed=config.sample_seed, purpose="formulate", problem=t.id, grammar=grammar,
                        grammar_field=field_for(config.constrain_format), stop=prompt.stop,
                        then=constraint.then if constraint else None)
                for t in todo for i in range(samples)]

    def arrived(request: Request, result: Result) -> None:
        if grammar is not None and isinstance(result, LLMError):
            check_refusal(result, config.constrain_format)
        gathered.add(request.key, result)

    def finished(pid: str, results: list[Result]) -> None:
        replies = [r.text for r in results if not isinstance(r, Exception)]
        # A reply with no program in it (empty, or prose) is not sent on as one, nor voted with.
        texts = [t for t in (read_program(r, ctx.task.solver) for r in replies) if t is not None]
        failures = [r for r in results if isinstance(r, Exception)]
        error = None
        if not texts:  # a failed request may succeed on a later run; a reply without a program would not
            error = (stage_error(failures[0]) if failures
                     else StageError(category=ErrorCategory.no_program, message=NO_PROGRAM))
        write(by_id[pid], FormulateRecord(
            id=pid, dataset=ctx.task.dataset, program=texts[0] if texts else None,
            samples=texts if samples > 1 else [], source=f"llm:{model}", usage=usage(results),
            prompt_id=prompt.id, prompt_hash=prompt.hash, error=error,
            reply=replies[0] if replies and not texts else None))

    gathered: Samples[Result] = Samples(samples, finished)
    send(ctx, model, requests, arrived)
