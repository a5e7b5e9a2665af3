"""The stages: formulate -> solve -> interpret -> evaluate, each reading and writing JSONL per dataset."""

from __future__ import annotations

import random
import time
from collections import Counter
from collections.abc import Callable, Iterator
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
    """One program per problem: replayed from --programs, or written by --model."""
    start = time.monotonic()
    if config.programs is None and config.model is None:
        raise UsageError("formulate needs --programs FILE (replay) or --model NAME (an LLM writes the programs)")
    stage = StageFile(config.stage_file("formulate"), FormulateRecord)
    ids = [p.id for p in problems]
    todo = stage.missing(ids)
    if todo and config.programs is not None:
        _replay(config, stage, todo, progress)
    elif todo:
        from .llmstages import formulate_with_model

        formulate_with_model(config, problems, stage, todo, progress)
    stage.finish(ids)
    return StageReport("formulate", len(ids), len(todo), time.monotonic() - start)


def _replay(config: RunConfig, stage: StageFile, todo: list[str], progress: Progress) -> None:
    assert config.programs is not None
    programs = load_programs(config.programs)
    source = f"replay:{config.programs.name}"
    with stage.writer() as out:
        for count, identifier in enumerate(todo, start=1):
            text = programs.get(identifier)
            error = None if text else StageError(
                category=ErrorCategory.no_program, message=f"no program for this id in {config.programs.name}")
            out.write(FormulateRecord(id=identifier, dataset=config.spec.key, program=text, source=source, error=error))
            progress("formulate", count, len(todo))


def solve(config: RunConfig, problems: list[Problem], progress: Progress = _quiet) -> StageReport:
    return _solve_stage(config, problems, "formulate", "solve", 0, progress)


def _solve_stage(config: RunConfig, problems: list[Problem], source: str, name: str, round_: int,
                 progress: Progress) -> StageReport:
    """Run every program of every upstream record; with several samples, vote over the executed ones."""
    start = time.monotonic()
    spec = config.spec
    inputs = _upstream(config, source, FormulateRecord, problems)
    stage = StageFile(config.stage_file(name), SolveRecord)
    todo = stage.missing(r.id for r in inputs)
    timeout = config.timeout or spec.timeout
    by_id = {r.id: r for r in inputs}
    base = {"dataset": spec.key, "solver": spec.solver, "round": round_}
    done = 0
    with stage.writer() as out:
        tasks: list[Task] = []
        expected: dict[str, int] = {}
        for identifier in todo:
            record = by_id[identifier]
            programs = record.samples or ([record.program] if record.program else [])
            if record.error is not None or not programs:
                error = record.error or StageError(category=ErrorCategory.no_program, message="empty program")
                out.write(SolveRecord(id=identifier, error=error, **base))
                done += 1
                progress(name, done, len(todo))
                continue
            expected[identifier] = len(programs)
            for index, text in enumerate(programs):
                payload = {"solver": spec.solver, "program": text,
                           "limits": {"seconds": timeout, "memory_mb": config.memory_mb}}
                # The hard bound leaves the solver's own limit room to report a clean timeout first.
                tasks.append(Task(f"{identifier}\x1f{index}", payload, timeout * 1.5 + 5))
        if tasks:
            get_solver(spec.solver).check()
            results: dict[str, dict[int, SolveRecord]] = {}
            with WorkerPool("logicpipe.solvers:execute_task", config.workers, config.memory_mb) as pool:
                for outcome in pool.map(tasks):
                    identifier, index = outcome.key.split("\x1f")
                    results.setdefault(identifier, {})[int(index)] = _solve_record(outcome, identifier, base)
                    if len(results[identifier]) == expected[identifier]:
                        samples = results.pop(identifier)
                        out.write(_vote([samples[i] for i in range(len(samples))]))
                        done += 1
                        progress(name, done, len(todo))
    stage.finish([r.id for r in inputs])
    return StageReport(name, len(inputs), len(todo), time.monotonic() - start)


def _vote(samples: list[SolveRecord]) -> SolveRecord:
    """Self-consistency: the most common verdict among samples that produced one (ties: earliest)."""
    if len(samples) == 1:
        return samples[0]
    verdicts = [s.verdict for s in samples if s.verdict is not None]
    if not verdicts:
        chosen = samples[0]
    else:
        counts = Counter(verdicts)
        best = max(counts.values())
        winner = next(v for v in verdicts if counts[v] == best)
        chosen = next(s for s in samples if s.verdict == winner)
    explanation = dict(chosen.explanation or {})
    explanation["votes"] = [s.verdict or (s.error.category.value if s.error else None) for s in samples]
    return chosen.model_copy(update={"explanation": explanation,
                                     "seconds": round(sum(s.seconds for s in samples), 4)})


def refine(config: RunConfig, problems: list[Problem], progress: Progress = _quiet) -> list[StageReport]:
    """Error-driven self-refinement: up to max_rounds rounds, each with its own refine-N and solve-N files."""
    if not (config.refine_model or config.model) or config.max_rounds == 0:
        return []
    from .llmstages import REFINABLE, refine_round

    reports = []
    for round_ in range(1, config.max_rounds + 1):
        start = time.monotonic()
        current = latest_solve(config, problems, before=round_)
        failing = [r for r in current if r.error is not None and r.error.category in REFINABLE]
        if not failing:
            break
        programs = latest_programs(config, problems, before=round_)
        new = refine_round(config, problems, failing, programs, round_, progress)
        reports.append(StageReport(f"refine-{round_}", len(failing), new, time.monotonic() - start))
        reports.append(_solve_stage(config, problems, f"refine-{round_}", f"solve-{round_}", round_, progress))
    return reports


def _rounds(config: RunConfig, before: int | None) -> Iterator[int]:
    round_ = 1
    while (before is None or round_ < before) and config.stage_file(f"solve-{round_}").exists():
        yield round_
        round_ += 1


def latest_solve(config: RunConfig, problems: list[Problem], before: int | None = None) -> list[SolveRecord]:
    """Each problem's solve record from its latest refinement round (a round whose model call failed
    does not replace the solver's own verdict)."""
    records = {r.id: r for r in _upstream(config, "solve", SolveRecord, problems)}
    for round_ in _rounds(config, before):
        for record in StageFile(config.stage_file(f"solve-{round_}"), SolveRecord).done.values():
            skipped = record.error is not None and record.error.category in (ErrorCategory.llm, ErrorCategory.no_program)
            if record.id in records and not skipped:
                records[record.id] = record
    return [records[p.id] for p in problems if p.id in records]


def latest_programs(config: RunConfig, problems: list[Problem], before: int | None = None) -> dict[str, str]:
    programs = {r.id: r.program for r in _upstream(config, "formulate", FormulateRecord, problems) if r.program}
    for round_ in _rounds(config, before):
        for record in StageFile(config.stage_file(f"refine-{round_}"), FormulateRecord).done.values():
            if record.program:
                programs[record.id] = record.program
    return programs


def _solve_record(outcome, identifier: str, base: dict) -> SolveRecord:
    common = {"id": identifier, "seconds": round(outcome.seconds, 4), **base}
    if outcome.status == "timeout":
        return SolveRecord(**common, error=StageError(category=ErrorCategory.timeout, message=outcome.message))
    if outcome.status in ("crashed", "error"):
        return SolveRecord(**common, error=StageError(category=ErrorCategory.execution, message=outcome.message))
    value = outcome.value
    if "error" in value:
        category, message = value["error"]
        return SolveRecord(**common, explanation=value.get("explanation"),
                           error=StageError(category=ErrorCategory(category), message=message))
    return SolveRecord(**common, verdict=value["verdict"], explanation=value.get("explanation"))


def interpret(config: RunConfig, problems: list[Problem], progress: Progress = _quiet) -> StageReport:
    """Map verdicts to option letters; give problems with no executed program the backup answer."""
    if config.backup == "cot" and not config.model:
        raise UsageError("--backup cot needs --model (the model answers by chain of thought)")
    by_problem = {p.id: p for p in problems}
    cot: dict = {}

    def prepare(todo: list[SolveRecord]) -> None:
        if config.backup == "cot":
            from .llmstages import ask

            unexecuted = [by_problem[r.id] for r in todo if not _executed(_answer_error(r, by_problem[r.id], config)[1])]
            cot.update(ask(config, unexecuted, "cot"))

    report, _ = _transform(config, latest_solve(config, problems), "interpret", InterpretRecord,
                           lambda record: _interpret_one(record, by_problem[record.id], config, cot), progress,
                           prepare)
    return report


def _answer_error(record: SolveRecord, problem: Problem, config: RunConfig) -> tuple[str | None, StageError | None]:
    if record.error is not None:
        return None, record.error
    predicted = map_answer(record.verdict, problem.options, config.spec.closed_world)
    if predicted is None:
        return None, StageError(category=ErrorCategory.no_answer, message=f"verdict {record.verdict!r} matches no option")
    return predicted, None


def _executed(error: StageError | None) -> bool:
    return error is None or error.category in EXECUTED_CATEGORIES


def _interpret_one(record: SolveRecord, problem: Problem, config: RunConfig, cot: dict) -> InterpretRecord:
    predicted, error = _answer_error(record, problem, config)
    executed = _executed(error)
    final, backup, usage = predicted, None, None
    if not executed and config.backup == "cot":
        answer = cot[record.id]
        final, backup, usage = answer.choice, "cot", answer.usage
    if not executed and final is None and config.backup in ("random", "cot"):
        letters = sorted(option_letters(problem.options)) or ["A"]
        # Seeded per problem, so the guess does not depend on order, workers or resumption.
        final = random.Random(f"{config.seed}:{record.id}").choice(letters)
        backup = "random" if backup is None else "cot, then random"
    return InterpretRecord(id=record.id, predicted=predicted, executed=executed, final=final,
                           backup=backup, error=error, round=record.round, usage=usage)


def evaluate(config: RunConfig, problems: list[Problem], progress: Progress = _quiet) -> tuple[StageReport, dict]:
    gold = {p.id: p.answer for p in problems}
    inputs = _upstream(config, "interpret", InterpretRecord, problems)
    report, records = _transform(config, inputs, "evaluate", EvaluateRecord,
                                 lambda record: _evaluate_one(record, gold[record.id]), progress)
    metrics = compute_metrics(records, config)
    metrics.update(_llm_metrics(config, problems, inputs))
    write_json_if_changed(config.stage_dir / "metrics.json", metrics)
    return report, metrics


def _llm_metrics(config: RunConfig, problems: list[Problem], interpreted: list[InterpretRecord]) -> dict:
    """Exe_Rate before refinement and the tokens every model call of this run used (from the records,
    so the figures are the same however often the run was resumed)."""
    extra: dict = {}
    rounds = list(_rounds(config, None))
    if rounds:
        first = _upstream(config, "solve", SolveRecord, problems)
        executed = sum(_executed(r.error) for r in first)
        extra["exe_rate_before_refinement"] = round(100.0 * executed / len(first), 2) if first else 0.0
        extra["refinement_rounds"] = len(rounds)
    formulated = config.stage_file("formulate")
    usages = [r.usage for r in StageFile(formulated, FormulateRecord).done.values() if r.usage]
    for round_ in rounds:
        usages += [r.usage for r in StageFile(config.stage_file(f"refine-{round_}"), FormulateRecord).done.values()
                   if r.usage]
    usages += [r.usage for r in interpreted if r.usage]
    if usages:
        tokens = {key: sum(getattr(u, key) for u in usages)
                  for key in ("prompt_tokens", "completion_tokens", "calls", "cached_calls")}
        extra["tokens"] = tokens
        if config.price_prompt is not None or config.price_completion is not None:
            extra["cost"] = round((tokens["prompt_tokens"] * (config.price_prompt or 0)
                                   + tokens["completion_tokens"] * (config.price_completion or 0)) / 1e6, 6)
    return extra


def _evaluate_one(record: InterpretRecord, answer: str | None) -> EvaluateRecord:
    return EvaluateRecord(
        id=record.id, gold=answer, predicted=record.predicted, final=record.final,
        executed=record.executed, error=record.error,
        correct_executed=record.executed and record.predicted is not None and record.predicted == answer,
        correct=record.final is not None and record.final == answer)


def _transform(config: RunConfig, inputs: list, name: str, model, make: Callable, progress: Progress,
               prepare: Callable[[list], None] | None = None) -> tuple[StageReport, list]:
    """A stage that turns each upstream record into one record of its own, resuming what is done."""
    start = time.monotonic()
    stage = StageFile(config.stage_file(name), model)
    todo = set(stage.missing(r.id for r in inputs))
    if prepare is not None:
        prepare([r for r in inputs if r.id in todo])
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
    reports = [formulate(config, problems, progress), solve(config, problems, progress)]
    reports += refine(config, problems, progress)
    reports.append(interpret(config, problems, progress))
    final, metrics = evaluate(config, problems, progress)
    reports.append(final)
    return RunReport(metrics=metrics, stages=reports)


def baseline(config: RunConfig, mode: str, progress: Progress = _quiet) -> RunReport:
    """The paper's Standard or CoT row: the model answers directly, scored by the same evaluator.
    Files go to OUT/baseline-MODE/<dataset>/ (interpret.jsonl holds the answers)."""
    if mode not in ("standard", "cot"):
        raise UsageError(f"unknown baseline mode '{mode}'; choose standard or cot")
    if not config.model:
        raise UsageError("baselines need --model")
    config = config.model_copy(update={"out": config.out / f"baseline-{mode}", "backup": "none", "programs": None})
    problems = problems_for(config)
    start = time.monotonic()
    stage = StageFile(config.stage_file("interpret"), InterpretRecord)
    todo = [p for p in problems if p.id not in stage.done]
    if todo:
        from .llmstages import ask

        answers = ask(config, todo, mode)
        with stage.writer() as out:
            for count, problem in enumerate(todo, start=1):
                answer = answers[problem.id]
                out.write(InterpretRecord(id=problem.id, predicted=answer.choice, executed=answer.choice is not None,
                                          final=answer.choice, error=answer.error, usage=answer.usage))
                progress(mode, count, len(todo))
    stage.finish([p.id for p in problems])
    answered = StageReport(mode, len(problems), len(todo), time.monotonic() - start)
    report, metrics = evaluate(config, problems, progress)
    return RunReport(metrics=metrics, stages=[answered, report])
