"""The stages: formulate -> solve -> interpret -> evaluate, each reading and writing JSONL per dataset."""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from .config import RunConfig
from .datasets import load_problems
from .errors import UsageError
from .isolation import Task, WorkerPool
from .jsonl import write_json_if_changed
from .metrics import compute_metrics
from .records import (
    EXECUTED_CATEGORIES,
    ErrorCategory,
    EvaluateRecord,
    FormulateRecord,
    InterpretRecord,
    Problem,
    SolveRecord,
    StageError,
)
from .replay import load_programs
from .solvers import get_solver, map_answer
from .solvers.base import option_letters
from .stagefile import StageFile

Progress = Callable[[str, int, int], None]
STAGES = ("formulate", "solve", "interpret", "evaluate")


def _quiet(stage: str, done: int, total: int) -> None:
    return None


@dataclass
class StageReport:
    name: str
    total: int
    new: int
    seconds: float


@dataclass
class RunReport:
    metrics: dict
    stages: list[StageReport] = field(default_factory=list)


def problems_for(config: RunConfig) -> list[Problem]:
    problems = load_problems(config.spec, config.split, config.data_dir)
    return problems[: config.limit] if config.limit else problems


def formulate(config: RunConfig, problems: list[Problem], progress: Progress = _quiet) -> StageReport:
    start = time.monotonic()
    if config.programs is None:
        raise UsageError("formulate needs --programs FILE (replay of programs an LLM already wrote)")
    stage = StageFile(config.stage_file("formulate"), FormulateRecord)
    ids = [p.id for p in problems]
    todo = stage.missing(ids)
    source = f"replay:{config.programs.name}"
    if todo:
        programs = load_programs(config.programs)
        with stage.writer() as out:
            for count, identifier in enumerate(todo, start=1):
                text = programs.get(identifier)
                error = None if text else StageError(
                    category=ErrorCategory.no_program, message=f"no program for this id in {config.programs.name}")
                out.write(FormulateRecord(id=identifier, dataset=config.spec.key, program=text, source=source, error=error))
                progress("formulate", count, len(todo))
    stage.finish(ids)
    return StageReport("formulate", len(ids), len(todo), time.monotonic() - start)


def solve(config: RunConfig, problems: list[Problem], progress: Progress = _quiet) -> StageReport:
    start = time.monotonic()
    spec = config.spec
    inputs = _upstream(config, "formulate", FormulateRecord, problems)
    stage = StageFile(config.stage_file("solve"), SolveRecord)
    todo = stage.missing(r.id for r in inputs)
    solver_name = spec.solver
    solver = get_solver(solver_name)
    timeout = config.timeout or spec.timeout
    by_id = {r.id: r for r in inputs}
    done = 0
    with stage.writer() as out:
        tasks = []
        for identifier in todo:
            record = by_id[identifier]
            if record.error is not None or not record.program:
                error = record.error or StageError(category=ErrorCategory.no_program, message="empty program")
                out.write(SolveRecord(id=identifier, dataset=spec.key, solver=solver_name, error=error))
                done += 1
                progress("solve", done, len(todo))
                continue
            payload = {"solver": solver_name, "program": record.program,
                       "limits": {"seconds": timeout, "memory_mb": config.memory_mb}}
            # The hard bound leaves the solver's own limit room to report a clean timeout first.
            tasks.append(Task(identifier, payload, timeout * 1.5 + 5))
        if tasks:
            solver.check()
            with WorkerPool("logicpipe.solvers:execute_task", config.workers, config.memory_mb) as pool:
                for outcome in pool.map(tasks):
                    out.write(_solve_record(outcome, spec.key, solver_name))
                    done += 1
                    progress("solve", done, len(todo))
    stage.finish([r.id for r in inputs])
    return StageReport("solve", len(inputs), len(todo), time.monotonic() - start)


def _solve_record(outcome, dataset: str, solver: str) -> SolveRecord:
    base = {"id": outcome.key, "dataset": dataset, "solver": solver, "seconds": round(outcome.seconds, 4)}
    if outcome.status == "timeout":
        return SolveRecord(**base, error=StageError(category=ErrorCategory.timeout, message=outcome.message))
    if outcome.status in ("crashed", "error"):
        return SolveRecord(**base, error=StageError(category=ErrorCategory.execution, message=outcome.message))
    value = outcome.value
    if "error" in value:
        category, message = value["error"]
        return SolveRecord(**base, explanation=value.get("explanation"),
                           error=StageError(category=ErrorCategory(category), message=message))
    return SolveRecord(**base, verdict=value["verdict"], explanation=value.get("explanation"))


def interpret(config: RunConfig, problems: list[Problem], progress: Progress = _quiet) -> StageReport:
    by_problem = {p.id: p for p in problems}
    report, _ = _transform(config, problems, "solve", SolveRecord, "interpret", InterpretRecord,
                           lambda record: _interpret_one(record, by_problem[record.id], config), progress)
    return report


def _interpret_one(record: SolveRecord, problem: Problem, config: RunConfig) -> InterpretRecord:
    error = record.error
    predicted = None
    if error is None:
        predicted = map_answer(record.verdict, problem.options, config.spec.closed_world)
        if predicted is None:
            error = StageError(category=ErrorCategory.no_answer,
                               message=f"verdict {record.verdict!r} matches no option")
    executed = error is None or error.category in EXECUTED_CATEGORIES
    final, backup = predicted, None
    if not executed and config.backup == "random":
        letters = sorted(option_letters(problem.options)) or ["A"]
        # Seeded per problem, so the guess does not depend on order, workers or resumption.
        final, backup = random.Random(f"{config.seed}:{record.id}").choice(letters), "random"
    return InterpretRecord(id=record.id, predicted=predicted, executed=executed, final=final,
                           backup=backup, error=error, round=record.round)


def evaluate(config: RunConfig, problems: list[Problem], progress: Progress = _quiet) -> tuple[StageReport, dict]:
    gold = {p.id: p.answer for p in problems}
    report, records = _transform(config, problems, "interpret", InterpretRecord, "evaluate", EvaluateRecord,
                                 lambda record: _evaluate_one(record, gold[record.id]), progress)
    metrics = compute_metrics(records, config)
    write_json_if_changed(config.stage_dir / "metrics.json", metrics)
    return report, metrics


def _evaluate_one(record: InterpretRecord, answer: str | None) -> EvaluateRecord:
    return EvaluateRecord(
        id=record.id, gold=answer, predicted=record.predicted, final=record.final,
        executed=record.executed, error=record.error,
        correct_executed=record.executed and record.predicted is not None and record.predicted == answer,
        correct=record.final is not None and record.final == answer)


def _transform(config: RunConfig, problems: list[Problem], source: str, source_model, name: str, model,
               make: Callable, progress: Progress) -> tuple[StageReport, list]:
    """A stage that turns each upstream record into one record of its own, resuming what is done."""
    start = time.monotonic()
    inputs = _upstream(config, source, source_model, problems)
    stage = StageFile(config.stage_file(name), model)
    todo = set(stage.missing(r.id for r in inputs))
    with stage.writer() as out:
        count = 0
        for record in inputs:
            if record.id in todo:
                out.write(make(record))
                count += 1
                progress(name, count, len(todo))
    records = stage.finish([r.id for r in inputs])
    return StageReport(name, len(inputs), len(todo), time.monotonic() - start), records


def _upstream(config: RunConfig, stage: str, model, problems: list[Problem]):
    path = config.stage_file(stage)
    if not path.exists():
        raise UsageError(f"{path} not found: run the {stage} stage first")
    wanted = {p.id for p in problems}
    records = [r for r in StageFile(path, model).done.values() if r.id in wanted]
    order = {p.id: i for i, p in enumerate(problems)}
    return sorted(records, key=lambda r: order[r.id])


def run(config: RunConfig, progress: Progress = _quiet) -> RunReport:
    problems = problems_for(config)
    reports = [formulate(config, problems, progress), solve(config, problems, progress),
               interpret(config, problems, progress)]
    final, metrics = evaluate(config, problems, progress)
    reports.append(final)
    return RunReport(metrics=metrics, stages=reports)
