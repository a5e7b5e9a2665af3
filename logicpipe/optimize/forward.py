"""The forward pass: the real pipeline (formulate -> solve -> refine -> interpret -> evaluate) on a set of
problems under one prompt set and structure, and what each problem's trajectory came to."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ..core.records import Problem, text_sha
from ..core.trajectory import Trajectory
from ..runtime.folder import ModelErrors
from ..stages import PIPELINE, RunConfig, run_stages
from ..stages.config import TaskOptions
from ..stages.context import Gate
from .calls import model_stop
from .config import OptimizeConfig
from .params import Structure
from .records import ProblemOutcome


@dataclass
class Trace:
    """One problem's trajectory, as the judge and the gradients read it."""

    problem: Problem
    outcome: ProblemOutcome
    first_program: str | None  # what formulate wrote (before any repair)
    first_result: str  # the solver's verdict or error on it
    last_result: str  # ... and on the latest program
    tokens: int = 0  # model tokens (prompt + completion) the problem took: what --objective cost counts


def run_dir(config: OptimizeConfig, params_hash: str, structure: Structure, tag: str) -> Path:
    return config.out / "runs" / f"{params_hash}-{structure.hash}" / tag


def forward(config: OptimizeConfig, prompts_dir: Path, params_hash: str, structure: Structure, split: str,
            ids: list[str], tag: str, gate: Gate | None = None) -> list[Trace]:
    """Run the pipeline on `ids` of `split` with the prompts in `prompts_dir`. Each (prompt set,
    structure, problem set) has its own run folder, so a repeated forward pass reads its records back
    and sends nothing."""
    # The options a run shares with an optimisation (TaskOptions) are the optimisation's, but where it writes.
    shared = config.model_dump(include=set(TaskOptions.model_fields))
    base = RunConfig(**{**shared, "split": split, "ids": ids, "out": run_dir(config, params_hash, structure, tag),
                        "prompts": prompts_dir, "llm_cache": config.cache_path})
    try:
        report = run_stages(structure.apply(base), list(PIPELINE), gate=gate, keep=True)
    except ModelErrors as exc:  # its message names `run`'s --max-errors
        raise model_stop(exc.last) from None
    return [trace(t, tag, params_hash) for t in report.trajectories]


def batch_tag(kind: str, ids: list[str]) -> str:
    """A run folder name per problem set: a minibatch's ids decide its records."""
    return f"{kind}-{text_sha(*ids)[:10]}"


def _result(trajectory: Trajectory, round_: int | None) -> str:
    record = trajectory.solved.get(0) if round_ == 0 else trajectory.latest_solve()
    if record is None:
        return "not run"
    if record.error is not None:
        return f"{record.error.category.value} error: {record.error.message}"
    return f"verdict {record.verdict}"


def _tokens(trajectory: Trajectory) -> int:
    """Prompt and completion tokens of every model request the trajectory made (a cached reply counts
    as sent: the cost of a prompt set does not depend on what happened to be cached)."""
    records = [trajectory.formulated, *trajectory.refined.values(), *trajectory.decided.values(),
               trajectory.interpreted]
    return sum(r.usage.prompt_tokens + r.usage.completion_tokens for r in records
               if r is not None and r.usage is not None)


def trace(trajectory: Trajectory, split: str, params_hash: str) -> Trace:
    interpreted, evaluated, latest = trajectory.interpreted, trajectory.evaluated, trajectory.latest_solve()
    error = latest.error if latest is not None else (interpreted.error if interpreted is not None else None)
    program = trajectory.latest_program()
    outcome = ProblemOutcome(
        id=trajectory.id, split=split, correct=bool(evaluated and evaluated.correct),
        executed=bool(interpreted and interpreted.executed),
        error_category=error.category.value if error is not None else None,
        answer=interpreted.final if interpreted is not None else None, gold=trajectory.problem.answer,
        rounds=trajectory.rounds(), program=program.program if program is not None else None,
        prompt_hash=params_hash)
    first = trajectory.formulated
    return Trace(trajectory.problem, outcome, first.program if first is not None else None,
                 _result(trajectory, 0), _result(trajectory, None), _tokens(trajectory))
