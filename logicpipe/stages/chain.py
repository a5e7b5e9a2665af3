"""A chain of prompted steps: a method that answers without a solver by asking the model several times
per problem (SymbCoT's translate, plan, solve and verify). The steps come from the run's method spec
(data/methods.py `steps`); this module knows nothing of any one method.

Each step is a stage of its own: one record per problem in chain-<step>.jsonl (store.py reads them back).
Step k's prompt sees the problem's fields and, as {{<name>}}, the reply of every earlier step. A problem
whose earlier step failed gets a record saying so, and no request. A record stands while it was asked
with the earlier replies the problem has now (StepRecord.parent) and did not fail for a passing reason,
so a rerun sends nothing for what is done and a stopped run resumes at the step it stopped in. The
answer is read from the last step marked `answers` whose reply states one, and written to interpret.jsonl
as a baseline's is; a chain with a failed step, or whose replies state no answer, has none (a typed
error, never a guess).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from ..core.errors import ErrorCategory, UsageError
from ..core.records import InterpretRecord, StageError, StepRecord, Usage, stage_error
from ..core.trajectory import Trajectory, step_parent
from ..data.methods import MethodSpec, load_method
from ..llm import Request
from ..prompts import PROBLEM_FIELDS, Prompt, problem_fields
from .config import RunConfig
from .context import RunContext, StageReport
from .llmcalls import Result, send, usage
from .replies import read_final
from .store import CHAIN

NAME = "chain"


@dataclass(frozen=True)
class ChainStep:
    name: str
    prompt: Prompt
    answers: bool
    stop: tuple[str, ...]


def chain_method(config: RunConfig) -> MethodSpec:
    """The run's method (`--method`), which must have steps."""
    if config.method is None:
        raise UsageError("a chain of prompted steps comes from a method: give --method NAME (e.g. --method symbcot)")
    spec = load_method(config.method)
    if not spec.steps:
        raise UsageError(f"method '{spec.name}' has no steps; it is not a chain")
    return spec


def prompt_ids(config: RunConfig) -> list[str]:
    """The template of each step, `{dataset}` replaced by the task's key."""
    return chain_method(config).step_prompts(config.spec.key)


def resolve(ctx: RunContext) -> list[ChainStep]:
    """Each step with its template, checked before anything runs: a template may use the problem's fields
    and the replies of the steps before it, nothing else."""
    spec = chain_method(ctx.config)
    steps = spec.steps
    resolved: list[ChainStep] = []
    known = set(PROBLEM_FIELDS)
    for step, prompt_id in zip(steps, spec.step_prompts(ctx.config.spec.key), strict=True):
        prompt = ctx.prompts.get(prompt_id)
        unknown = sorted(prompt.fields - known)
        if unknown:
            later = [name for name in unknown if name in {s.name for s in steps}]
            why = f"a later step's reply ({', '.join(later)})" if later else "no problem field nor earlier step"
            raise UsageError(f"prompt {prompt_id} (step '{step.name}') uses {{{{{unknown[0]}}}}}, which is {why}; "
                             f"it may use {', '.join(f'{{{{{name}}}}}' for name in sorted(known))}")
        resolved.append(ChainStep(step.name, prompt, step.answers, tuple(step.stop)))
        known.add(step.name)
    return resolved


def identity(ctx: RunContext) -> dict[str, Any]:
    """What decides the chain's records (run.json stages.chain): the model and its options, and each
    step's template (id and hash), stop sequences and whether it answers, in order."""
    config = ctx.config
    steps = resolve(ctx)
    fields: dict[str, Any] = {"model": config.model, "base_url": config.base_url, "temperature": config.temperature,
                              "max_tokens": config.max_tokens, "steps": [step.name for step in steps],
                              "answers": [step.name for step in steps if step.answers],
                              "prompts": {step.prompt.id: step.prompt.hash for step in steps}}
    stops = {step.name: list(step.stop) for step in steps if step.stop}
    if stops:
        fields["stop"] = stops
    if config.sample_seed is not None:
        fields["seed"] = config.sample_seed
    return fields


def run(ctx: RunContext, trajectories: list[Trajectory]) -> list[StageReport]:
    """Every step in order over the chunk's problems, then each problem's answer."""
    steps = resolve(ctx)
    reports = [_step(ctx, trajectories, steps, index) for index in range(len(steps))]
    reports.append(_answer(ctx, trajectories, steps))
    return reports


def _step(ctx: RunContext, trajectories: list[Trajectory], steps: list[ChainStep], index: int) -> StageReport:
    step = steps[index]
    name = f"{CHAIN}{step.name}"
    start = time.monotonic()
    stage = ctx.store.file(name, StepRecord)
    todo: list[tuple[Trajectory, str]] = []
    written = 0

    def write(trajectory: Trajectory, record: StepRecord) -> None:
        nonlocal written
        stage.write(record)
        trajectory.steps[step.name] = record
        written += 1
        ctx.progress(name, written, len(todo))

    blocked: list[tuple[Trajectory, StepRecord]] = []
    for trajectory in trajectories:
        earlier = [trajectory.steps[s.name] for s in steps[:index]]
        parent = step_parent(earlier)
        record = trajectory.steps.get(step.name)
        if (record is not None and record.parent == parent and record.prompt_hash == step.prompt.hash
                and not record.retry()):
            continue
        trajectory.steps.pop(step.name, None)  # stale: asked with other replies, or failed for a passing reason
        failed = next((r for r in earlier if r.error is not None), None)
        if failed is not None and failed.error is not None:
            error = StageError(category=failed.error.category,
                               message=f"not asked: step '{failed.step}' failed ({failed.error.message})")
            blocked.append((trajectory, _record(trajectory, step, parent, error=error)))
        else:
            todo.append((trajectory, parent))
    for trajectory, record in blocked:
        stage.write(record)
        trajectory.steps[step.name] = record
    by_id = {trajectory.id: (trajectory, parent) for trajectory, parent in todo}

    def arrived(request: Request, result: Result) -> None:
        trajectory, parent = by_id[request.key]
        if isinstance(result, Exception):
            write(trajectory, _record(trajectory, step, parent, error=stage_error(result), spent=usage([result])))
        elif not result.text.strip():
            empty = StageError(category=ErrorCategory.llm, message=f"the model's reply to step '{step.name}' is empty")
            write(trajectory, _record(trajectory, step, parent, error=empty, spent=usage([result])))
        else:
            write(trajectory, _record(trajectory, step, parent, reply=result.text, spent=usage([result])))

    config = ctx.config
    requests = [Request(t.id, step.prompt.render(**_fields(t, steps[:index])), config.temperature, config.max_tokens,
                        seed=config.sample_seed, purpose=name, problem=t.id, stop=step.stop) for t, _ in todo]
    if requests and config.model is not None:
        send(ctx, config.model, requests, arrived)
    stage.finish([t.id for t in trajectories])
    return StageReport(name, len(trajectories), len(todo) + len(blocked), time.monotonic() - start)


def _fields(trajectory: Trajectory, earlier: list[ChainStep]) -> dict[str, str]:
    replies = {step.name: trajectory.steps[step.name].reply or "" for step in earlier}
    return {**problem_fields(trajectory.problem), **replies}


def _record(trajectory: Trajectory, step: ChainStep, parent: str, reply: str | None = None,
            error: StageError | None = None, spent: Usage | None = None) -> StepRecord:
    return StepRecord(id=trajectory.id, step=step.name, reply=reply, prompt_id=step.prompt.id,
                      prompt_hash=step.prompt.hash, usage=spent, parent=parent, error=error)


def _answer(ctx: RunContext, trajectories: list[Trajectory], steps: list[ChainStep]) -> StageReport:
    start = time.monotonic()
    stage = ctx.store.file("interpret", InterpretRecord)
    new = 0
    for trajectory in trajectories:
        chain = trajectory.chain_sha()
        record = stage.done.get(trajectory.id)
        if record is not None and record.program == chain and not record.retry():
            trajectory.interpreted = record
            continue
        choice, error = _read(trajectory, steps, ctx.task.closed_world)
        record = InterpretRecord(id=trajectory.id, predicted=choice, executed=choice is not None, final=choice,
                                 error=error, program=chain)
        stage.write(record)
        trajectory.interpreted = record
        new += 1
    stage.finish([t.id for t in trajectories])
    return StageReport(f"{NAME} answer", len(trajectories), new, time.monotonic() - start)


def _read(trajectory: Trajectory, steps: list[ChainStep], closed_world: bool) -> tuple[str | None, StageError | None]:
    """The option the chain settles on: that of the last answering step whose reply states one; none
    (and why) when a step failed or no answering step's reply states an answer."""
    records = [trajectory.steps[step.name] for step in steps]
    failed = next((r for r in records if r.error is not None), None)
    if failed is not None and failed.error is not None:
        return None, failed.error.model_copy(update={"message": f"step '{failed.step}': {failed.error.message}"})
    reasons = []
    for step in reversed([s for s in steps if s.answers]):
        reading = read_final(trajectory.steps[step.name].reply or "", trajectory.problem.options, closed_world)
        if reading.letter is not None:
            return reading.letter, None
        reasons.append(f"{step.name}: {reading.reason}")
    return None, StageError(category=ErrorCategory.no_answer, message="; ".join(reasons))
