"""The runner: checks everything a run needs, loads problems once into trajectories, pushes them through
the stages in order, and owns the run's directory (lock, identity, --overwrite)."""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from ..core.errors import DataError, UsageError
from ..core.records import InterpretRecord, Problem
from ..core.task import Task
from ..core.trajectory import Trajectory
from ..data import ProblemSet, Programs, index_problems, index_programs
from ..data.methods import method_name
from ..data.program_files import WrittenPrograms
from ..llm import api_key
from ..llm.declared import phased
from ..llm.grammars import LANGUAGES
from ..prompts import PromptSet
from ..runtime.folder import RunFolder
from ..solvers import get_solver
from ..solvers.registry import names as solver_names
from . import evaluate, formulate, interpret, refine, solve
from .chunks import ChunkLog, chunk_key, finished
from .config import STAGES, RunConfig
from .context import Gate, Progress, RunContext, Stage, StageReport, quiet
from .identity import SEMANTIC, check_identity
from .metrics import Tally
from .store import load_trajectories

# Problems taken through the stages at a time: bounds a run's memory (about 10 KB a problem in flight).
CHUNK = 10_000
PIPELINE: dict[str, Stage] = dict(zip(STAGES, (formulate.run, solve.run, refine.run, interpret.run, evaluate.run),
                                       strict=True))


@dataclass
class RunReport:
    metrics: dict
    stages: list[StageReport] = field(default_factory=list)
    trajectories: list[Trajectory] = field(default_factory=list)
    file_reads: dict[str, int] = field(default_factory=dict)  # stage file -> times read
    records_read: dict[str, int] = field(default_factory=dict)  # stage file -> records parsed from it
    # model -> where its adaptive in-flight limit settled (llm/client.py Pace.summary)
    concurrency: dict[str, dict[str, int]] = field(default_factory=dict)


def task_for(config: RunConfig) -> Task:
    spec = config.spec
    other = config.other_formalism  # its own formulate prompt: <the task's prompt>-<formalism>
    prompt = config.method_prompt or (f"{spec.prompt}-{other}" if other else spec.prompt)
    return Task(dataset=spec.key, name=spec.title, split=config.split, solver=config.solver,
                answer_space=spec.answer_space, closed_world=spec.closed_world, timeout=spec.timeout,
                prompt=prompt,
                definition=spec.digest() if config.task is not None else None)


def problems_for(config: RunConfig) -> list[Problem]:
    """The run's problems, all read (for a small set; a run takes them a chunk at a time: problem_set)."""
    return list(problem_set(config))


def problem_set(config: RunConfig) -> ProblemSet:
    problems = index_problems(config.spec, config.split, config.data_dir)
    # The loader has checked ids (unique, printable), fields and answers row by row.
    if config.subset:  # LogicBench: a logic type or logic type/pattern, checked by RunConfig
        from ..data.logicbench import in_subset

        problems = problems.keep(lambda identifier: in_subset(identifier, config.subset or ""))
    if config.ids is not None:
        wanted = set(config.ids)
        unknown = sorted(wanted - set(problems.ids))
        if unknown:
            raise DataError(f"no problem {unknown[0]!r} in {config.spec.key}/{config.split}")
        problems = problems.keep(wanted.__contains__)
    if config.exclude_ids is not None:
        unwanted = set(config.exclude_ids)
        unknown = sorted(unwanted - set(problems.ids))
        if unknown:
            raise DataError(f"no problem {unknown[0]!r} in {config.spec.key}/{config.split} (--exclude-ids)")
        problems = problems.keep(lambda identifier: identifier not in unwanted)
    return problems.first(config.limit) if config.limit else problems


def _check(config: RunConfig, stages: list[str], problems: ProblemSet, prompts: PromptSet, task: Task) -> None:
    """Everything that can fail before the first file is written fails here."""
    if "formulate" in stages:
        if config.programs is None and config.model is None:
            raise UsageError("formulate needs --programs FILE (replay) or --model NAME (an LLM writes the programs)")
        if config.programs is not None:
            _check_replayed_formalism(config, prompts)
            known = index_programs(config.programs)
            _check_written(config, known, task)
            if len(known) and not any(identifier in known for identifier in problems.ids):
                raise DataError(f"{config.programs} has no program for any {task.name}/{task.split} problem "
                                "(is it the right dataset?)")
        else:
            _check_prompt(config, prompts, task)
    if _asks_model(config, stages):
        api_key(config.base_url)  # no key and no local endpoint: say so before the lock and run.json
    if "solve" in stages or "refine" in stages:
        get_solver(task.solver).check()
        if config.executor == "ray":  # a cluster that cannot be joined: one line before the lock and run.json
            from ..runtime.ray_executor import connect

            connect(config.ray_address, config.ray_connect_timeout)
    if config.constrain and task.solver not in LANGUAGES and {"formulate", "refine"} & set(stages):
        raise UsageError(f"--constrain: logicpipe has no grammar for the {task.solver} formalism (it has "
                         f"{', '.join(LANGUAGES)}); run without --constrain")
    batched = "--batch" if config.batch else "--batch-export" if config.batch_export is not None else None
    if batched and config.constrain and phased(task.solver) and {"formulate", "refine"} & set(stages):
        raise UsageError(f"{batched}: constrained decoding in phases (--constrain on {task.solver}) needs each "
                         "phase's reply before the next request; run it without a batch")
    if "refine" in stages and config.refine_with:
        prompts.refine(task.prompt)
        for prompt_id in SEMANTIC if config.refine == "semantic" else ():
            prompts.get(prompt_id)
    if config.backup == "cot" and "interpret" in stages:
        prompts.get("cot")
    prompts.check_overrides(_templates(config, stages, task))


def _check_written(config: RunConfig, programs: Programs | WrittenPrograms, task: Task) -> None:
    """A program a person wrote for no problem of the task is a typo (a released file covers a split,
    and --limit or --ids leave some of it out): say where, against every id of the split."""
    if isinstance(programs, WrittenPrograms):
        every = set(index_problems(config.spec, config.split, config.data_dir).ids)
        unknown = programs.unknown(every)
        if unknown is not None:
            raise DataError(f"{unknown} in {task.name}/{task.split}")


def _fits(config: RunConfig, prompts: PromptSet) -> list[str]:
    """The formalisms the task takes (as `logicpipe list` shows them): its own, and each with a prompt for it."""
    spec = config.spec
    return [name for name in solver_names() if name == spec.solver or prompts.has(f"{spec.prompt}-{name}")]


def _check_replayed_formalism(config: RunConfig, prompts: PromptSet) -> None:
    """A replay's --formalism is the formalism its programs are run as: one the task does not take would
    run them through the wrong solver (MCQA's ASP programs parsed as FOL) and report 0% executed."""
    other = config.other_formalism
    if other is not None and other not in (fits := _fits(config, prompts)):
        raise UsageError(f"--formalism {other}: {config.spec.key} takes {', '.join(fits)} only; its programs "
                         f"would be run as {other}")


def _check_prompt(config: RunConfig, prompts: PromptSet, task: Task) -> None:
    """The formulate prompt; for --formalism, a missing one is answered with the formalisms that have one."""
    other = config.other_formalism
    if other is None or prompts.has(task.prompt):
        prompts.get(task.prompt)
        return
    raise UsageError(f"--formalism {other}: no prompt '{task.prompt}' for {config.spec.key}; the formalisms with a "
                     f"prompt for it: {', '.join(_fits(config, prompts))} (or write {task.prompt}.txt into a --prompts "
                     "folder)")


def _templates(config: RunConfig, stages: list[str], task: Task) -> list[str]:
    """The templates the stages read (a --prompts folder must override at least one of them)."""
    used: list[str] = [mode for mode in ("standard", "cot") if mode in stages]  # a baseline
    if "chain" in stages:  # a chain of prompted steps: each step's template
        from .chain import prompt_ids

        used += prompt_ids(config)
    if "formulate" in stages and config.programs is None:
        used.append(task.prompt)
    if "refine" in stages and config.refine_with:
        used += ["refine", f"guide-{task.solver}", *(SEMANTIC if config.refine == "semantic" else ())]
    if config.backup == "cot" and "interpret" in stages:
        used.append("cot")
    return used


def _asks_model(config: RunConfig, stages: list[str]) -> bool:
    """Whether the stages certainly ask a model (error refinement asks only for programs that fail)."""
    return (("formulate" in stages and config.programs is None)
            or ("refine" in stages and config.refine == "semantic" and config.refine_with is not None)
            or ("interpret" in stages and config.backup == "cot"))


def open_context(config: RunConfig, stages: list[str], progress: Progress = quiet,
                 task: Task | None = None, gate: Gate | None = None) -> tuple[RunContext, ProblemSet]:
    task = task or task_for(config)
    problems = problem_set(config)
    prompts = PromptSet(config.prompts)
    _check(config, stages, problems, prompts, task)
    from ..llm.batchapi import OUTLIVES_OVERWRITE

    folder = RunFolder(config.out / task.dataset, overwrite=config.overwrite,
                       allowed_errors=config.error_budget(len(problems)), keep=OUTLIVES_OVERWRITE)
    ctx = RunContext(config, task, folder, prompts, folder.budget, progress, gate=gate)
    return ctx, problems


def run_stages(config: RunConfig, stages: list[str], progress: Progress = quiet,
               gate: Gate | None = None, keep: bool = False) -> RunReport:
    """Run the named stages (in pipeline order) on the dataset the config names; `gate`, if given,
    decides which model requests may be sent (a spending limit); `keep` returns every trajectory in
    the report (memory grows with the problems then: for small sets)."""
    unknown = [s for s in stages if s not in PIPELINE]
    if unknown:
        raise UsageError(f"unknown stage {unknown[0]!r}; choose from {', '.join(PIPELINE)}")
    ctx, problems = open_context(config, stages, progress, gate=gate)
    ctx.warm = config.workers if "solve" in stages else 0
    if config.out.exists() and not config.out.is_dir():
        raise UsageError(f"--out {config.out} is a file, not a directory")
    _need_upstream(ctx, stages)
    if config.overwrite and "formulate" not in stages:
        raise UsageError("--overwrite starts a run afresh: give it to `run` or `formulate`, not to a later stage")

    def prepare(identity: dict) -> None:
        answered = identity["stages"].get("interpret")
        if answered and "interpret" not in stages:  # metrics name the backup interpret used, not a default
            ctx.config = config.model_copy(update={"backup": answered["backup"], "seed": answered["seed"]})

    def work(trajectories: list[Trajectory], identity: dict) -> list[StageReport]:
        reports: list[StageReport] = []
        names = [s for s in PIPELINE if s in stages]
        if names[:2] == ["formulate", "solve"] and config.programs is None:
            # A model writes the programs: solve each one as it arrives.
            reports += solve.overlapped(ctx, trajectories, 0, formulate.run)
            names = names[2:]
        for name in names:
            reports += PIPELINE[name](ctx, trajectories)
        return reports

    return _hold(ctx, problems, stages, work, keep, prepare, skip=not keep)


def _batch_gate(ctx: RunContext) -> Gate:
    """--batch-export (and --batch-import, read into the cache first): the requests the cache cannot
    answer go to the file, and the run stops between requests (llm/batchfile.py)."""
    from ..llm.batchfile import BatchExport, import_replies

    config = ctx.config
    assert config.batch_export is not None
    imported = None
    if config.batch_import is not None:
        imported = import_replies(config.batch_import, config.batch_export, config.model or "", config.llm_cache,
                                  config.num_samples)
    return BatchExport(config.batch_export, config.base_url, config.llm_cache, imported, config.batch_import)


def _batch_api(ctx: RunContext) -> Gate:
    """--batch: the requests the cache cannot answer go through the provider's batch API, their batch ids
    kept in the dataset folder, and the run goes on once they are back (llm/batchapi.py)."""
    from ..llm.batchapi import BatchAPI

    config = ctx.config
    shown = ctx.progress  # the command's own display, over the whole run (not a chunk's)
    return BatchAPI(ctx.store.path, config.base_url, config.llm_cache, config.num_samples,
                    batch_requests=config.batch_requests, timeout=config.batch_timeout, poll=config.batch_poll,
                    request_timeout=config.llm_timeout, retries=config.max_retries,
                    progress=lambda ended, created: shown("batches", ended, created))


def _hold(ctx: RunContext, problems: ProblemSet, identity: list[str],
          work: Callable[[list[Trajectory], dict], list[StageReport]], keep: bool = False,
          prepare: Callable[[dict], None] | None = None, skip: bool = False) -> RunReport:
    """Run `work` while holding the dataset folder: its lock, --overwrite, the identity of the stages
    named, the trajectories rebuilt from its files, and those files closed afterwards.

    The problems go through in chunks of CHUNK: each chunk's problems are read and its trajectories
    rebuilt, taken through every stage and dropped before the next, so memory is bounded by a chunk, not
    by the run (the problems are held as ids, each stage file as an index of ids). The files are put in
    input order once, at the end. With `skip` (the pipeline's stages), a chunk noted finished by an
    earlier run (chunks.py) is skipped: its records stay unparsed, its noted tally is added. `keep`
    keeps every trajectory for the report (a caller that reads them, on a small problem set). A chunk's
    solver calls, of its solve and refinement rounds, go to one executor (RunContext.executor), whose
    workers start as the chunk begins when `ctx.warm` says so."""
    if ctx.config.model and not ctx.config.batch:
        from ..llm.batchapi import refuse_unread

        refuse_unread(ctx.store.path)
    with ctx.store:
        if ctx.gate is None and ctx.config.capped:
            # --max-cost, --max-tokens-total: the spending cap, its ledger in this folder (kept by
            # --overwrite: starting the records afresh is no refund).
            from ..llm.budget import Budget

            ctx.gate = Budget(ctx.config, folder=ctx.store.path)
        if ctx.gate is None and ctx.config.batch_export is not None:
            ctx.gate = _batch_gate(ctx)
        if ctx.gate is None and ctx.config.batch:
            ctx.gate = _batch_api(ctx)
        recorded = check_identity(ctx, identity)
        if prepare is not None:
            prepare(recorded)
        starts = range(0, len(problems), CHUNK) if len(problems) else range(1)
        if len(starts) > 1:
            ctx.store.defer()
        log = ChunkLog(ctx.store, recorded)
        reports: dict[str, StageReport] = {}
        kept: list[Trajectory] = []
        shown, total = ctx.progress, ctx.tally
        ctx.progress = progress = _RunProgress(shown, len(starts))
        try:
            for start in starts:
                ids = problems.ids[start:start + CHUNK]
                key = chunk_key(ids, problems.answers[start:start + CHUNK])
                note = log.skippable(ctx.store, key, ids, identity) if skip else None
                if note is not None:  # not even its problems are read
                    total = _skip(ctx, log, note, ids, identity, reports, total)
                    progress.next_chunk()
                    continue
                if ctx.warm:
                    ctx.executor().warm(min(ctx.warm, len(ids)))
                chunk = problems.take(start, start + CHUNK)
                files, ctx.tally = ctx.store.watch(), None
                trajectories = load_trajectories(ctx.store, chunk)
                done = work(trajectories, recorded)
                ctx.close_executor()
                for report in done:
                    _add(reports, report)
                tally = ctx.tally.state() if ctx.tally is not None else None
                if tally is not None:
                    total = (total or Tally(ctx.task.solver)).add(tally)
                if skip:
                    log.note(ctx.store, key, ids, identity, files, done, tally, finished(trajectories))
                if keep:
                    kept += trajectories
                del trajectories, chunk  # before the next chunk is read: one chunk in memory at a time
                progress.next_chunk()
        finally:
            ctx.close_executor()
            log.close()
            close = getattr(ctx.gate, "close", None)  # --batch's client
            if close is not None:
                close()
        ctx.progress, ctx.tally = shown, total
        ctx.store.finish_files()
        evaluate.conclude(ctx)
        ended = getattr(ctx.gate, "finished", None)  # --batch-export: a run with nothing left to ask
        if ended is not None:
            ended()
    return RunReport(ctx.metrics, list(reports.values()), kept, dict(ctx.store.reads), ctx.store.parsed(),
                     {model: pace.summary() for model, pace in ctx.paces.items()})


def _skip(ctx: RunContext, log: ChunkLog, note: dict, ids: list[str], stages: list[str],
          reports: dict[str, StageReport], total: Tally | None) -> Tally | None:
    """A finished chunk, taken as noted."""
    for report in log.skip(ctx.store, note, ids, stages):
        _add(reports, report)
        ctx.progress(report.name, report.total, report.total)
    if "evaluate" in stages and note["tally"] is not None:
        total = (total or Tally(ctx.task.solver)).add(note["tally"])
    return total


class _RunProgress:
    """The stages report progress within a chunk; shown over the whole run: what earlier chunks did,
    and this chunk's total for each chunk left."""

    def __init__(self, shown: Progress, chunks: int):
        self.shown, self.left = shown, chunks
        self.earlier: Counter[str] = Counter()
        self.now: dict[str, tuple[int, int]] = {}

    def __call__(self, stage: str, done: int, total: int) -> None:
        self.now[stage] = (done, total)
        self.shown(stage, self.earlier[f"{stage} done"] + done, self.earlier[f"{stage} total"] + total * self.left)

    def next_chunk(self) -> None:
        for stage, (done, total) in self.now.items():
            self.earlier[f"{stage} done"] += done
            self.earlier[f"{stage} total"] += total
        self.now, self.left = {}, self.left - 1


def _add(reports: dict[str, StageReport], report: StageReport) -> None:
    """One report per stage over all chunks."""
    then = reports.get(report.name)
    if then is None:
        reports[report.name] = report
        return
    then.total += report.total
    then.new += report.new
    then.seconds += report.seconds
    then.note = report.note or then.note


def _need_upstream(ctx: RunContext, stages: list[str]) -> None:
    """A stage run on its own needs the one before it to have run."""
    first = next(s for s in PIPELINE if s in stages)
    before = {"solve": "formulate", "refine": "solve", "interpret": "solve", "evaluate": "interpret"}.get(first)
    if before is not None and not ctx.store.exists(before):
        raise UsageError(f"{ctx.store.stage_path(before)} not found: run the {before} stage first")


def run(config: RunConfig, progress: Progress = quiet) -> RunReport:
    return run_stages(config, list(PIPELINE), progress)


def baseline_folder(config: RunConfig, mode: str) -> str:
    """The folder under OUT a baseline writes its dataset folder in: baseline-<method> for a method's
    (`baseline-cot` for cot), else baseline-<mode>."""
    return f"baseline-{method_name(config.method) if config.method else mode}"


def baseline_dir(config: RunConfig, mode: str) -> Path:
    """A baseline's dataset folder: OUT/baseline-<method or mode>/<dataset>."""
    return config.out / baseline_folder(config, mode) / config.spec.key


def baseline(config: RunConfig, mode: str, progress: Progress = quiet, gate: Gate | None = None) -> RunReport:
    """The paper's Standard or CoT row: the model answers directly, scored by the same evaluator; or
    (mode "chain") a method's chain of prompted steps (chain.py), whose steps the `--method` spec names.
    Files go to OUT/baseline-MODE/<dataset>/, or OUT/baseline-METHOD/<dataset>/ for a method's
    (`--method`: `baseline-cot` for cot) (interpret.jsonl holds the answers)."""
    if mode not in ("standard", "cot", "chain"):
        raise UsageError(f"unknown baseline mode '{mode}'; choose standard or cot")
    if not config.model:
        raise UsageError("baselines need --model")
    if mode == "chain":
        from . import chain

        chain.chain_method(config)  # a chain without --method: one line, before any folder is made
    config = config.model_copy(update={"out": config.out / baseline_folder(config, mode), "backup": "none",
                                       "programs": None})
    ctx, problems = open_context(config, [mode], progress, gate=gate)
    api_key(config.base_url)
    if mode == "chain":
        chain.resolve(ctx)  # every step's template, checked before anything is written
        return _hold(ctx, problems, [mode],
                     lambda trajectories, _identity: [*chain.run(ctx, trajectories), *evaluate.run(ctx, trajectories)])
    ctx.prompts.get(mode)
    return _hold(ctx, problems, [mode],
                 lambda trajectories, _identity: [_answer(ctx, trajectories, mode), *evaluate.run(ctx, trajectories)])


def _answer(ctx: RunContext, trajectories: list[Trajectory], mode: str) -> StageReport:
    start = time.monotonic()
    stage = ctx.store.file("interpret", InterpretRecord)
    for trajectory in trajectories:
        trajectory.interpreted = stage.done.get(trajectory.id)
    todo = [t for t in trajectories if t.interpreted is None or t.interpreted.retry()]
    by_id = {t.id: t for t in todo}
    written = 0

    def answered(pid: str, answer: interpret.Answer) -> None:  # written as it arrives: a stop keeps it
        nonlocal written
        record = InterpretRecord(id=pid, predicted=answer.choice, executed=answer.choice is not None,
                                 final=answer.choice, error=answer.error, usage=answer.usage, votes=answer.votes)
        stage.write(record)
        by_id[pid].interpreted = record
        written += 1
        ctx.progress(mode, written, len(todo))

    interpret.ask(ctx, [t.problem for t in todo], mode, answered, ctx.config.num_samples)
    stage.finish([t.id for t in trajectories])
    return StageReport(mode, len(trajectories), len(todo), time.monotonic() - start)
