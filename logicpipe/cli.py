"""Thin typer layer: parse options into a RunConfig, call the library, render with rich."""

from __future__ import annotations

import copy
import inspect
import os
import sys
import threading
import typing
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path
from typing import TYPE_CHECKING, Optional

import typer
from pydantic import ValidationError
from rich.console import Console
from typer.exceptions import TyperException

from . import __version__
from .core.errors import (
    DataError,
    LogicPipeError,
    Paused,
    PrerequisiteError,
    RunStopped,
    UsageError,
    did_you_mean,
)
from .core.words import counted
from .kb.cli import kb_app
from .stages.config import STAGES, RunConfig, invalid_options
from .typer_app import App

if TYPE_CHECKING:
    from .stages import Progress as StageProgress

# What a command runs is imported in its body: parsing a command line loads only the options, so that
# `logicpipe list` or `--help` start at once and a run's solver fork server is not kept waiting.

app = App(add_completion=False, no_args_is_help=True, pretty_exceptions_enable=False,
          help="Logic-LM style batch reasoning: formulate -> solve -> refine -> interpret -> evaluate.")
# Progress and notes go to stderr; summaries and tables to stdout, so `logicpipe run ... > out.txt` keeps them.
# Notes are never wrapped: a path cut over two lines can't be copied or matched.
console = Console(stderr=True, soft_wrap=True)
app.add_typer(kb_app, name="kb")
# Piped or redirected output (grep, a file) is never wrapped at rich's default of 80 columns: lines
# stay whole and tables are as wide as their contents (up to _PIPED_WIDTH).
_PIPED_WIDTH = 250
stdout = Console(soft_wrap=True)
# The papers `reproduce --paper` replays: Logic-LM's released programs, or LINC's released generations.
PAPERS = ("logic-lm", "linc")
if not stdout.is_terminal:
    stdout = Console(soft_wrap=True, width=_PIPED_WIDTH)


# Options that several commands take, each declared once (typer reads these, never changes them).
DATASET = typer.Option("", "--dataset", "-d", show_default=False,
                       help="built-in dataset: folio, prontoqa, proofwriter, logicaldeduction, ar-lsat, logicbench-bqa, logicbench-mcqa")
TASK = typer.Option(None, "--task", "-t", help="task file (YAML or JSON) describing your own dataset, instead of --dataset")
DATA_DIR = typer.Option(None, "--data-dir", help="Logic-LM data folder (else $LOGICPIPE_DATA, else download)")
WORKERS = typer.Option(1, "--workers", "-w", help="solver worker processes")
BASE_URL = typer.Option(None, "--base-url", envvar="OPENAI_BASE_URL",
                        help="OpenAI-compatible endpoint, e.g. http://localhost:8000/v1")
MAX_CONCURRENCY = typer.Option(8, "--max-concurrency", help="model requests in flight at once")
LLM_TIMEOUT = typer.Option(120.0, "--llm-timeout", help="seconds per model request")
MAX_RETRIES = typer.Option(5, "--max-retries", help="retries per model request")
PRICE_PROMPT = typer.Option(None, "--price-prompt", help="price per million prompt tokens")
PRICE_COMPLETION = typer.Option(None, "--price-completion", help="price per million completion tokens")
MAX_COST = typer.Option(None, "--max-cost", help="send no new model request once this much was spent (needs the prices); counted over the runs into the same folder, so a re-run with a higher cap finishes what this one left")
MAX_TOKENS_TOTAL = typer.Option(None, "--max-tokens-total", help="send no new model request once this many tokens (prompt and completion) were used; counted as --max-cost is")


def _version(value: bool) -> None:
    if value:
        print(f"logicpipe {__version__}")
        raise typer.Exit()


@app.callback()
def _main(version: bool = typer.Option(False, "--version", callback=_version, is_eager=True,
                                       help="print the version and exit")) -> None:
    """Logic-LM style batch reasoning: formulate -> solve -> refine -> interpret -> evaluate."""


def _options(
    dataset: str = DATASET,
    task: Optional[Path] = TASK,
    formalism: Optional[str] = typer.Option(None, "--formalism", "-f", help="run the dataset through another installed solver's formalism (e.g. asp; `logicpipe list` shows them), with its own prompt <dataset>-<formalism>"),
    split: str = typer.Option("", "--split", show_default=False, help="split to run (default: the task's first, dev for the built-ins)"),
    out: Path = typer.Option(Path("results/run"), "--out", "-o", help="run directory; files go to OUT/<dataset or task name>/"),
    data_dir: Optional[Path] = DATA_DIR,
    limit: Optional[int] = typer.Option(None, "--limit", "-n", help="only the first N problems"),
    workers: int = WORKERS,
    programs: Optional[Path] = typer.Option(None, "--programs", help="replay programs: Logic-LM's JSON file, a JSONL file of {id, program}, a folder of <id>.<ext> files, or `gold`: the dataset's own annotations (FOLIO dev)"),
    backup: str = typer.Option("random", "--backup", help="answer when no program executed: random|cot|none"),
    seed: int = typer.Option(0, "--seed", help="seed for the random backup"),
    timeout: Optional[float] = typer.Option(None, "--timeout", help="seconds per solver call (default: per dataset)"),
    memory_mb: int = typer.Option(2048, "--memory-mb", help="memory bound per solver worker, MB"),
    strict: bool = typer.Option(False, "--strict", help="accept only what Logic-LM's own code reads the same way: a program that needs one of logicpipe's named leniencies that it does not (docs/tasks.md) is a parse error naming the rule"),
    executor: str = typer.Option("local", "--executor", help="where solver calls run: local (worker processes) or ray (a Ray cluster)"),
    ray_address: Optional[str] = typer.Option(None, "--ray-address", envvar="RAY_ADDRESS", help="Ray cluster to join, e.g. 10.0.0.1:6379 (default: start Ray on this machine)"),
    ray_connect_timeout: float = typer.Option(30.0, "--ray-connect-timeout", help="seconds to join the --ray-address cluster before the run stops"),
    model: Optional[str] = typer.Option(None, "--model", "-m", help="model that writes programs (OpenAI-compatible)"),
    base_url: Optional[str] = BASE_URL,
    max_concurrency: int = MAX_CONCURRENCY,
    num_samples: int = typer.Option(1, "--num-samples", help="programs per problem; >1 votes over executed ones"),
    epochs: int = typer.Option(1, "--epochs", help="run N times with distinct sampling seeds (needs --temperature above 0): epoch 1 into OUT, epoch k into OUT/epoch-k; reports the mean accuracy with its standard error clustered by problem"),
    temperature: float = typer.Option(0.0, "--temperature", help="sampling temperature of the model"),
    max_tokens: int = typer.Option(2048, "--max-tokens", help="most tokens the model may write per reply"),
    max_rounds: int = typer.Option(3, "--max-rounds", help="self-refinement rounds (0: none)"),
    refine_model: Optional[str] = typer.Option(None, "--refine-model", help="model for refinement (default: --model)"),
    refine: str = typer.Option("error", "--refine", help="error: repair programs that fail; semantic: also revise those that execute, keeping a revision only if the model judges it more faithful (Logic-LM++)"),
    llm_timeout: float = LLM_TIMEOUT,
    max_retries: int = MAX_RETRIES,
    price_prompt: Optional[float] = PRICE_PROMPT,
    price_completion: Optional[float] = PRICE_COMPLETION,
    max_cost: Optional[float] = MAX_COST,
    max_tokens_total: Optional[int] = MAX_TOKENS_TOTAL,
    llm_cache: Optional[Path] = typer.Option(None, "--llm-cache", help="SQLite cache of model replies"),
    batch_export: Optional[Path] = typer.Option(None, "--batch-export", help="send no request the cache cannot answer: write it to this file in the OpenAI batch format (what vllm run-batch -i reads) and stop"),
    batch_import: Optional[Path] = typer.Option(None, "--batch-import", help="first read this output of the --batch-export file (vllm run-batch -o) into the reply cache"),
    batch: bool = typer.Option(False, "--batch", help="send the requests the cache cannot answer through the provider's batch API (/v1/files, /v1/batches: about half the price), a batch per round, and wait for them; their ids go to OUT/<dataset>/batches.json, so a re-run resumes them"),
    batch_requests: int = typer.Option(50_000, "--batch-size", help="most requests in one --batch batch (at most 50000, the OpenAI API's limit; a file also stays under 200 MB)"),
    batch_timeout: float = typer.Option(86400.0, "--batch-timeout", help="seconds a command waits for its --batch batches before it stops (a re-run resumes them)"),
    batch_poll: float = typer.Option(30.0, "--batch-poll", help="most seconds between two looks at a running --batch batch"),
    batch_discount: float = typer.Option(0.5, "--batch-discount", help="what a batch request costs against one sent alone: metrics show a --batch or --batch-export run's cost at that price too"),
    constrain: bool = typer.Option(False, "--constrain", help="send the solver language's grammar with each formulate and refine request (grammar-constrained decoding)"),
    constrain_format: str = typer.Option("gbnf", "--constrain-format", help="how the grammar is sent: gbnf ('grammar' field, llama.cpp) or vllm ('guided_grammar' field)"),
    overwrite: bool = typer.Option(False, "--overwrite", help="discard what an earlier run wrote in OUT/<dataset>/ and start afresh"),
    max_errors: str = typer.Option("10%", "--max-errors", help="model errors a run tolerates before it stops: a count or a percentage of the problems"),
    prompts: Optional[str] = typer.Option(None, "--prompts", help="folder of prompt templates that replace the shipped ones of the same name, or the bare word logic-lm: Logic-LM's own prompts (downloaded once, pinned by sha256; ./logic-lm is a folder)"),
    ids: Optional[Path] = typer.Option(None, "--ids", help="only the problems whose ids this file lists, one a line (e.g. an optimisation's OUT/splits/test.txt)"),
    exclude_ids: Optional[Path] = typer.Option(None, "--exclude-ids", help="all problems but those whose ids this file lists, one a line"),
    subset: Optional[str] = typer.Option(None, "--subset", help="LogicBench: only a logic type (nm_logic) or a logic type/pattern (nm_logic/default_reasoning_default)"),
) -> RunConfig:
    values = dict(locals())  # the options, before the import below adds a name
    from .prompts import prompts_option

    values["prompts"] = prompts_option(prompts)
    values["ids"], values["exclude_ids"] = _id_file(ids, "--ids"), _id_file(exclude_ids, "--exclude-ids")
    try:
        return RunConfig(**values)
    except ValidationError as exc:
        raise invalid_options(exc) from None


def _id_file(path: Path | None, option: str) -> list[str] | None:
    """The ids a file lists, one a line (blank lines and surrounding spaces ignored)."""
    if path is None:
        return None
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise LogicPipeError(f"{option} {path}: cannot read it ({exc.__class__.__name__}: "
                             f"{getattr(exc, 'strerror', None) or exc})") from None
    return [line.strip() for line in text.splitlines() if line.strip()]


# Which options each command shows; the others keep their defaults.
_WHERE = {"dataset", "task", "formalism", "split", "out", "data_dir", "limit", "overwrite", "ids", "exclude_ids",
          "subset"}
_SOLVER = {"workers", "timeout", "memory_mb", "strict", "executor", "ray_address", "ray_connect_timeout"}
_LLM = {"model", "base_url", "max_concurrency", "temperature", "max_tokens", "llm_timeout", "max_retries",
        "price_prompt", "price_completion", "max_cost", "max_tokens_total", "llm_cache", "max_errors", "prompts",
        "batch_export", "batch_import", "batch", "batch_requests", "batch_timeout", "batch_poll", "batch_discount"}
_USES = {
    "formulate": _WHERE | _LLM | {"programs", "num_samples", "constrain", "constrain_format"},
    "solve": _WHERE | _SOLVER,
    "refine": _WHERE | _SOLVER | _LLM | {"max_rounds", "refine_model", "refine", "constrain", "constrain_format"},
    "interpret": _WHERE | _LLM | {"backup", "seed"},  # the model answers by chain of thought for --backup cot
    "evaluate": _WHERE,  # metrics.json names the backup interpret used, from run.json
    # The model answers directly: no program, no formalism; --num-samples K votes over K answers (self-consistency).
    "baseline": (_WHERE - {"formalism"}) | _LLM | {"epochs", "num_samples"},
    "audit": (_WHERE - {"formalism"}) | _SOLVER,  # the gold programs' replay: no model, FOL only
    # One run per formalism: every run option but the one formalism and a replay file (of one formalism).
    "compare": (_WHERE - {"formalism"}) | _SOLVER | _LLM | {"num_samples", "epochs", "constrain", "constrain_format", "max_rounds",
                                                         "refine_model", "refine", "backup", "seed"},
}


# Where a command uses an option otherwise than `run` does, its own help.
_HELP = {"baseline": {"model": "model that answers each question directly (OpenAI-compatible)",
                      "num_samples": "answers sampled per problem; >1 takes the most common option among those "
                                     "that name one (self-consistency; needs --temperature above 0)"}}


# The run options as typer reads them, resolved once for every command that takes some (their string
# annotations evaluated: a few milliseconds a command, on the start of each).
_HINTS = typing.get_type_hints(_options)
_EVERY = [p.replace(annotation=_HINTS[p.name]) for p in inspect.signature(_options).parameters.values()]


def _command(name: str, extra: list[inspect.Parameter] | None = None):
    """Register `func(config, **extra)` as a command taking the run options it uses (all for `run`)."""
    def register(func):
        uses = _USES.get(name)
        shown = [p for p in _EVERY if uses is None or p.name in uses]
        defaults = {p.name: p.default.default for p in _EVERY if p not in shown}
        for option, text in _HELP.get(name, {}).items():
            at = next(i for i, p in enumerate(shown) if p.name == option)
            info = copy.copy(shown[at].default)
            info.help = text
            shown[at] = shown[at].replace(default=info)

        def command(**values):
            extras = {p.name: values.pop(p.name) for p in extra or []}
            if extras.get("method"):  # its settings stand in for options left at their defaults (--epochs checks them)
                values = _method_defaults(values, extras["method"], shown)
            return func(_options(**defaults, **values), **extras)

        parameters = shown + (extra or [])
        command.__signature__ = inspect.Signature(parameters)
        command.__doc__ = func.__doc__
        app.command(name)(command)
        return func

    return register


def _progress() -> tuple[AbstractContextManager, StageProgress]:
    if not console.is_terminal:  # nothing would be drawn: rich's progress display is not even loaded
        return nullcontext(), _no_progress
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TaskID, TextColumn, TimeElapsedColumn

    bar = Progress(TextColumn("[bold]{task.description:<10}"), BarColumn(), MofNCompleteColumn(),
                   TimeElapsedColumn(), console=console, transient=False)
    tasks: dict[str, TaskID] = {}

    def update(stage: str, done: int, total: int) -> None:
        if stage not in tasks:
            tasks[stage] = bar.add_task(stage, total=total)
        bar.update(tasks[stage], completed=done, total=total)

    return bar, update


def _no_progress(stage: str, done: int, total: int) -> None:
    return None


def _report(stages: list[str], config: RunConfig) -> None:
    from .report.render import render_summary
    from .stages import run_stages

    if config.epochs > 1:
        return _epochs(config, lambda each, update: run_stages(each, stages, update))
    bar, update = _progress()
    with bar:
        report = run_stages(config, stages, update)
    for stage in report.stages:
        if stage.note:
            stdout.print(stage.note)
    _concurrency(report.concurrency)
    if report.metrics:
        render_summary(stdout, report.metrics, report.stages)
        stdout.print(f"metrics: {config.stage_dir / 'metrics.json'}")
        return
    for stage in report.stages:
        stdout.print(f"{stage.name}: {stage.total} records ({stage.new} new) in {stage.seconds:.1f}s")


def _epochs(config: RunConfig, run_one, where=None) -> None:
    """--epochs N: each epoch's run in turn, a line each, then the figures over the epochs."""
    from .report.render import rate, render_epochs
    from .stages.epochs import run_epochs

    bar, update = _progress()
    with bar:
        reports, summary = run_epochs(config, lambda each: run_one(each, update),
                                      *([where] if where is not None else []))
    for number, (report, folder) in enumerate(zip(reports, summary["folders"]), start=1):
        metrics = report.metrics
        stdout.print(f"epoch {number}: accuracy {rate(metrics, 'accuracy', metrics.get('total'))}; {folder}",
                     markup=False, highlight=False, soft_wrap=True)
    render_epochs(stdout, summary)


def _concurrency(paces: dict[str, dict[str, int]]) -> None:
    """Where each model's in-flight limit settled, when the server made it move (429, 503, timeouts)."""
    for model, pace in paces.items():
        if pace["overloads"]:
            stdout.print(f"model requests in flight ({model}): settled at {pace['settled']} of --max-concurrency "
                         f"{pace['ceiling']} (lowest {pace['lowest']}) after {pace['overloads']} rate limits, "
                         "overloads or timeouts", markup=False, highlight=False)


_DOCS = {"formulate": "Write one program per problem (replayed with --programs, or by --model).",
         "solve": "Parse and execute each program with the dataset's solver.",
         "refine": "Send failed programs and the solver's error back to the model, up to --max-rounds "
                   "(--refine semantic: also revise programs that execute).",
         "interpret": "Map solver verdicts to option letters; back up what did not execute.",
         "evaluate": "Score against gold answers; write evaluate.jsonl and metrics.json."}
for _name in STAGES:
    def _stage_command(config: RunConfig, _name: str = _name) -> None:
        _report([_name], config)

    _stage_command.__doc__ = _DOCS[_name]
    _command(_name)(_stage_command)


_METHOD = inspect.Parameter("method", inspect.Parameter.KEYWORD_ONLY, annotation=Optional[str],
                            default=typer.Option(None, "--method", help="a published method's settings (`logicpipe methods` lists them), or a method spec file NAME.json"))


def _method_defaults(values: dict, method: str, shown: list[inspect.Parameter]) -> dict:
    """The options with a method's settings in place of those the user left at their defaults, so that the
    options are checked together as the run will have them (`--method cot-sc --epochs 3` samples at the
    method's temperature); one given with another value is refused later, by configure."""
    from .data.methods import load_method

    left = {p.name for p in shown if values.get(p.name) == p.default.default}
    return {**values, **{name: value for name, value in load_method(method).run_options().items() if name in left}}


def _with_method(config: RunConfig, method: str | None, command: str) -> tuple[RunConfig, str | None]:
    """The run options with the method's settings (stages/methods.py), and its baseline mode (None for a
    solver method)."""
    if method is None:
        return config, None
    from .data.methods import load_method
    from .stages.methods import configure

    spec = load_method(method)
    return configure(config, spec, command), spec.baseline


@_command("run", [_METHOD])
def run(config: RunConfig, method: Optional[str] = None) -> None:
    """All stages in order (formulate, solve, refine, interpret, evaluate); resumes what an earlier run left."""
    config, _ = _with_method(config, method, "run")
    _report(list(STAGES), config)


@app.command()
def validate(task: Optional[Path] = typer.Option(None, "--task", "-t", help="task file (YAML or JSON) to check"),
             dataset: str = typer.Option("", "--dataset", "-d", show_default=False, help="or a built-in dataset"),
             split: str = typer.Option("", "--split", show_default=False, help="split to check (default: every split)"),
             data_dir: Optional[Path] = typer.Option(None, "--data-dir", help="Logic-LM data folder, for Logic-LM sources")
             ) -> None:
    """Check a task file and its data without a model: fields present, ids unique, answers in the answer space."""
    from .data import check_problems
    from .data.loaders import no_problems
    from .prompts import PromptSet
    from .solvers import get_solver

    # Reads only: its config names no folder it would write, so none is probed.
    config = RunConfig.model_validate(dict(dataset=dataset, task=task, split=split or "", data_dir=data_dir),
                                      context={"writes": False})
    spec = config.spec
    get_solver(spec.solver)
    PromptSet(config.prompts).get(spec.prompt)
    issues: list[str] = []
    missing: list[str] = []
    for name in [split] if split else spec.splits:
        try:
            problems, found = check_problems(spec, name, data_dir)
        except DataError as exc:  # its file is absent or unreadable: the other splits are still checked
            issues.append(str(exc))
            missing.append(name)
            continue
        issues += found
        if not found and not problems:  # a run refuses it; checking it is no mistake
            print(f"warning: {no_problems(spec, name)}; `logicpipe run` refuses it", file=sys.stderr)
        elif not found:
            stdout.print(f"{spec.key} {name}: {len(problems)} problems, answer space {spec.answer_space}, "
                         f"solver {spec.solver}, prompt {spec.prompt}: ok", markup=False, highlight=False)
    for issue in issues:
        _fail(issue)
    if missing:
        _fail(f"{spec.key}: {len(missing)} of {len(spec.splits) if not split else 1} splits could not be read: "
              f"{', '.join(missing)}")
    if issues:
        sys.exit(2)


_MODE = inspect.Parameter("mode", inspect.Parameter.KEYWORD_ONLY, annotation=str,
                          default=typer.Option("cot", "--mode", help="standard or cot"))


@_command("baseline", [_MODE, _METHOD])
def baseline(config: RunConfig, mode: str, method: Optional[str] = None) -> None:
    """The paper's Standard or CoT baseline with the same client, cache and evaluator."""
    from .report.render import render_baseline_summary
    from .stages import baseline as run_baseline

    config, chosen = _with_method(config, method, "baseline")
    mode = chosen or mode

    if config.epochs > 1:
        from .stages.runner import baseline_dir

        return _epochs(config, lambda each, update: run_baseline(each, mode, update),
                       lambda each: baseline_dir(each, mode))
    bar, update = _progress()
    with bar:
        report = run_baseline(config, mode, update)
    render_baseline_summary(stdout, report.metrics, report.stages, mode)
    _concurrency(report.concurrency)


@_command("audit")
def audit(config: RunConfig) -> None:
    """Replay a dataset's gold programs (FOLIO dev: its own FOL annotations) into OUT/gold/<dataset>/ and list the problems whose gold translation does not parse, proves another label, or is inconsistent (OUT/gold/<dataset>/audit.jsonl)."""
    from rich.table import Table

    from .data.gold import gold_programs
    from .report.gold import audit as audit_run
    from .report.gold import write_audit

    programs = gold_programs(config.spec, config.split or config.spec.splits[0], config.data_dir)
    gold = config.model_copy(update={"programs": programs, "out": config.out / "gold", "backup": "none"})
    _report(list(STAGES), gold)
    flagged, total = audit_run(gold.stage_dir, gold.spec, gold.split or "", gold.data_dir)
    path = write_audit(gold.stage_dir, flagged)
    table = Table("id", "finding", "label", "proved", "why", title="gold programs that cannot be trusted")
    for item in flagged:
        table.add_row(item.id, item.kind.replace("_", " "), item.label or "", item.proved or "", item.reason)
    stdout.print(table)
    counts = {said: sum(1 for f in flagged if f.kind == kind) for kind, said in
              (("does_not_parse", "do not parse"), ("other_label", "prove another label"),
               ("inconsistent", "are inconsistent"), ("does_not_execute", "do not execute"),
               ("no_answer", "prove no option"))}
    stdout.print(f"of {total} gold programs: " + ", ".join(f"{n} {said}" for said, n in counts.items())
                 + f"; listed in {path}")


_FORMALISMS = inspect.Parameter("formalisms", inspect.Parameter.KEYWORD_ONLY, annotation=Optional[str],
                                default=typer.Option(None, "--formalisms", help="the formalisms to compare through "
                                                     "Logic-LM's pipeline, comma-separated (e.g. lp,asp); each runs "
                                                     "into OUT/<formalism>/"))
_METHODS = inspect.Parameter("methods", inspect.Parameter.KEYWORD_ONLY, annotation=Optional[str],
                             default=typer.Option(None, "--methods", help="the methods to compare, comma-separated "
                                                  "(e.g. logic-lm,linc,cot; `logicpipe methods` lists them, or a "
                                                  "spec file NAME.json); each runs into OUT/<method>/ (one without a "
                                                  "solver into OUT/baseline-<method>/)"))


_ALPHA = inspect.Parameter("alpha", inspect.Parameter.KEYWORD_ONLY, annotation=float,
                           default=typer.Option(0.05, "--alpha", min=0.0, max=1.0, help="significance level of the "
                                                "paired comparisons (Holm-adjusted McNemar p below it)"))


@_command("compare", [_METHODS, _FORMALISMS, _ALPHA])
def compare(config: RunConfig, methods: Optional[str] = None, formalisms: Optional[str] = None,
            alpha: float = 0.05) -> None:
    """One dataset through several methods (--methods) or formalisms (--formalisms) with the same model, cache and evaluator: a table of parse rate, Exe_Rate, Exe_Acc and accuracy with 95% intervals, and each pair of columns compared on the same problems."""
    from rich.table import Table

    from .report.compare import (
        PAIR_COLUMNS,
        compare_arms,
        formalism_arms,
        method_arms,
        pair_cells,
        pairs,
        parse_formalisms,
        parse_methods,
        write_table,
    )

    if (methods is None) == (formalisms is None):
        raise UsageError("compare needs --methods (e.g. logic-lm,linc,cot) or --formalisms (e.g. lp,asp), "
                         "one of the two")
    kind = "method" if methods is not None else "formalism"
    try:
        arms = (method_arms(config, parse_methods(methods)) if methods is not None
                else formalism_arms(config, parse_formalisms(formalisms or "")))
    except ValueError as exc:
        raise LogicPipeError(f"invalid option --{kind}s: {exc}") from None
    bar, update = _progress()
    with bar:
        rows = compare_arms(config, arms, update)
    table = Table(title=f"{config.spec.key} by {kind}")
    for column in (kind, "problems", "parse rate", "Exe_Rate", "Exe_Acc", "accuracy"):
        table.add_column(column, no_wrap=True)
    for row in rows:
        table.add_row(*row.cells())
    stdout.print(table, markup=False, highlight=False)
    for row in rows:
        if row.epochs is not None:
            summary = row.epochs
            stdout.print(f"{row.name}: {summary['epochs']} epochs, mean accuracy {summary['mean_accuracy']}% ± "
                         f"{summary['stderr_clustered']} (standard error clustered by problem), right in every epoch "
                         f"or none: {summary['consistent']} of {summary['problems']}; {summary['path']}",
                         markup=False, highlight=False, soft_wrap=True)
    paired = pairs(rows, alpha) if len(rows) > 1 else []
    if paired:
        corrected = f", Holm-corrected over {len(paired)} pairs" if len(paired) > 1 else ""
        table = Table(title=f"paired on the same problems: accuracy A - B, McNemar's exact test{corrected}")
        for column in PAIR_COLUMNS:
            table.add_column(column, no_wrap=True)
        for pair in paired:
            table.add_row(*pair_cells(pair, alpha))
        stdout.print(table, markup=False, highlight=False)
    written = write_table(config.out, config.spec.key, rows, paired, alpha)
    stdout.print(f"table: {written}; runs: {', '.join(str(row.folder) for row in rows)}", markup=False,
                 highlight=False, soft_wrap=True)


@app.command()
def explain(run_dir: Path = typer.Argument(..., help="a run folder, or a folder holding runs at any depth (the --out of run, compare, baseline or a kb batch)"),
            id: str = typer.Option(..., "--id", help="problem id"),
            dataset: Optional[str] = typer.Option(None, "--dataset", "-d", help="dataset, if the run has several"),
            task: Optional[Path] = typer.Option(None, "--task", "-t", help="the task file of a --task run (default: the one run.json names)"),
            data_dir: Optional[Path] = DATA_DIR,
            round_: Optional[int] = typer.Option(None, "--round", help="refinement round to show (default: the round that answered; 0: the first program)")
            ) -> None:
    """Show one problem: question, options, gold, prediction, and how the solver reached its verdict."""
    from .report.explain import explain as gather
    from .report.render import render_explanation

    render_explanation(stdout, gather(run_dir, id, dataset, task, data_dir, round_))


@app.command()
def faithfulness(run_dir: Path = typer.Argument(..., help="a run directory (the --out of a FOL run on a dataset with gold formulas: FOLIO dev)"),
                 dataset: Optional[str] = typer.Option(None, "--dataset", "-d", help="dataset, if the run has several"),
                 data_dir: Optional[Path] = DATA_DIR,
                 workers: int = typer.Option(2, "--workers", "-w", min=1, help="worker processes for the Prover9 and counter-model searches"),
                 seconds: float = typer.Option(1.0, "--seconds", min=0.1, max=60.0, help="limit per Prover9 query and per counter-model search; what it leaves undecided is counted as unknown"),
                 problems: bool = typer.Option(False, "--problems", help="also list every program: which sentences were mistranslated and how"),
                 format: str = typer.Option("table", "--format", help="table or json")) -> None:
    """Hold a FOL run's translations against the gold formulas: premise recall and precision, conclusion equivalence, mistranslated sentences (Prover9 under a name alignment), right-for-the-wrong-reason counts, LogicLLaMA's LE and BLEU; writes RUN/<dataset>/faithfulness.jsonl."""
    if format not in ("table", "json"):
        raise LogicPipeError(f"invalid option --format {format!r}: use table or json")
    from .report.faithful import as_json, write
    from .report.faithful import faithfulness as score_run

    report = score_run(run_dir, dataset, workers, seconds, data_dir)
    path = write(report)
    if format == "json":
        import json

        print(json.dumps(as_json(report), ensure_ascii=False, indent=1))
        return
    from .report.faithful.render import render_faithfulness

    render_faithfulness(stdout, report, problems)
    stdout.print(f"per program: {path}", markup=False, highlight=False, soft_wrap=True)


@app.command()
def view(run_dir: Path = typer.Argument(..., help="a run folder, or a folder holding runs at any depth (the --out of run, compare, baseline or a kb batch)"),
         out: Optional[Path] = typer.Option(None, "--out", "-o", help="HTML file to write (default RUN/report.html)"),
         data_dir: Optional[Path] = typer.Option(None, "--data-dir", help="Logic-LM data folder, for problem texts"),
         task: Optional[Path] = typer.Option(None, "--task", "-t", help="task file of a --task run, for its problem texts (default: the one run.json names)"),
         serve: bool = typer.Option(False, "--serve", help="also serve the page on 127.0.0.1 until Ctrl-C"),
         port: int = typer.Option(0, "--port", help="port for --serve (0: a free one)"),
         limit: int = typer.Option(1000, "--limit", min=0, help="problems per dataset the page holds (0: all); the metrics cover all"),
         offset: int = typer.Option(0, "--offset", min=0, help="first problem (in run order) the page holds")) -> None:
    """Write one self-contained HTML page: metrics, charts, a filterable problem table and drill-downs."""
    from .report.viewer import page_server, url, write_html

    page = write_html(run_dir, out, data_dir, task, limit, offset)
    console.print(f"wrote {page}", markup=False, highlight=False)
    if serve:
        server = page_server(page, port)
        console.print(f"serving {url(server)} (Ctrl-C stops)")
        try:
            server.serve_forever()
        except KeyboardInterrupt:
            pass
        finally:
            server.server_close()


@app.command()
def failures(run_dir: Path = typer.Argument(..., help="a run folder, or a folder holding runs at any depth (the --out of run, compare, baseline or a kb batch)"),
             category: Optional[str] = typer.Option(None, "--category", help="parse, execution, timeout, no_answer, llm or no_program"),
             dataset: Optional[str] = typer.Option(None, "--dataset", "-d", help="only this dataset")) -> None:
    """List failed problems with their one-line errors."""
    from rich.table import Table

    from .report.viewer import failed_problems

    rows = failed_problems(run_dir, category, dataset)
    table = Table(title=f"{counted(len(rows), 'failed problem')} in {run_dir}")
    for column in ("id", "dataset", "category", "message"):
        table.add_column(column, no_wrap=True, overflow="ellipsis")
    for row in rows:
        table.add_row(row["id"], row["dataset"], row["category"], row["message"])
    stdout.print(table, markup=False, highlight=False)  # one line per problem


@app.command()
def status(run_dir: Path = typer.Argument(..., help="a run folder, or a folder holding runs at any depth (the --out of run, compare, baseline or a kb batch)"),
           dataset: Optional[str] = typer.Option(None, "--dataset", "-d", help="only this dataset's folders"),
           refresh: bool = typer.Option(False, "--refresh", help="ask the provider for the status of each batch not read yet (read-only)"),
           base_url: Optional[str] = typer.Option(None, "--base-url", help="the provider's API, for --refresh (default: the one each run recorded, else OPENAI_BASE_URL, else OpenAI's)"),
           llm_timeout: float = typer.Option(30.0, "--llm-timeout", min=0.1, max=3600.0, help="seconds each --refresh request may take"),
           as_json: bool = typer.Option(False, "--json", help="print JSON (one object per run folder) instead of tables")) -> None:
    """Where a run stands: per run folder at or below RUN (at any depth), records per stage, finished or
    not, and its provider batches (--batch) with those still out. Reads only: it can look at a run that
    is going on."""
    from .report import status as report

    refreshing, close = report.provider(base_url, llm_timeout) if refresh else (None, lambda: None)
    try:
        folders = report.run_status(run_dir, dataset, refreshing)
    finally:
        close()
    if as_json:
        import json

        print(json.dumps(report.as_json(folders), indent=1))
        return
    from .report.render import render_status

    render_status(stdout, folders)


@app.command()
def diff(run_a: Path = typer.Argument(..., help="the first run directory (A)"),
         run_b: Path = typer.Argument(..., help="the second run directory (B)"),
         dataset: Optional[str] = typer.Option(None, "--dataset", "-d", help="dataset, if the runs have several"),
         format: str = typer.Option("md", "--format", help="md (tables), json or csv (one row per changed problem)")) -> None:
    """Compare two runs of one dataset problem by problem: the 2x2 table, the accuracy difference with
    its paired bootstrap 95% interval, McNemar's exact p-value, and each problem that changed."""
    from .core.errors import UsageError
    from .report.diff import as_csv, as_json
    from .report.diff import diff as compare_runs

    if format not in ("md", "json", "csv"):
        raise UsageError(f"--format {format!r}: md, json or csv")
    result = compare_runs(run_a, run_b, dataset)
    if format == "json":
        print(as_json(result))
    elif format == "csv":
        sys.stdout.write(as_csv(result))
    else:
        from .report.render import render_diff

        render_diff(stdout, result)


@app.command()
def export(run_dir: Path = typer.Argument(..., help="a run folder, or a folder holding runs at any depth (the --out of run, compare, baseline or a kb batch)"),
           programs: Path = typer.Option(..., "--programs", help="JSON file to write: the final programs in Logic-LM's format"),
           dataset: Optional[str] = typer.Option(None, "--dataset", "-d", help="dataset, if the run has several")) -> None:
    """Write a run's final programs (after refinement) in Logic-LM's format, to share or replay with
    `logicpipe run --programs FILE` (no model needed)."""
    from .report.export import export_programs

    done = export_programs(run_dir, programs, dataset)
    for warning in done.warnings:
        console.print(f"warning: {warning}", markup=False, highlight=False)
    console.print(f"wrote {done.programs} programs of {done.problems} {done.dataset} problems to {done.path}",
                  markup=False, highlight=False)


@app.command()
def reproduce(out: Path = typer.Option(Path("results"), "--out", "-o", help="where tables, chart and runs go"),
              data_dir: Optional[Path] = DATA_DIR,
              workers: int = typer.Option(2, "--workers", "-w", help="solver worker processes"),
              limit: Optional[int] = typer.Option(None, "--limit", "-n", help="only the first N problems per file"),
              model: Optional[str] = typer.Option(None, "--model", "-m", help="also run the Standard and CoT baselines"),
              base_url: Optional[str] = BASE_URL,
              max_concurrency: int = MAX_CONCURRENCY,
              overwrite: bool = typer.Option(False, "--overwrite", help="discard the earlier replays in OUT and start afresh (needed to change --limit)"),
              paper: str = typer.Option("logic-lm", "--paper", help="logic-lm, or linc: replay LINC's released generations from $LOGICPIPE_LINC (else downloaded) into linc.{md,csv,json}")) -> None:
    """Replay every released Logic-LM program file and our own LogicBench programs; write table3, table2 and
    logicbench (.md, .csv, .json) and accuracy.png. With --paper linc, replay LINC's released generations."""
    from .report.reproduce import reproduce as reproduce_all
    from .report.reproduce import unmade

    if paper not in PAPERS:
        raise UsageError(f"unknown paper '{paper}'{did_you_mean(paper, list(PAPERS))}; choose from {', '.join(PAPERS)}")
    if paper == "linc":
        if limit is not None or model is not None:
            raise UsageError("--paper linc replays whole released files: drop --limit and --model")
        from .report.linc import reproduce_linc

        bar, update = _progress()
        with bar:
            done = reproduce_linc(out, data_dir, workers, update, overwrite=overwrite,
                                  label=lambda text: console.print(f"replaying {text}", markup=False, highlight=False))
        stdout.print((out / "linc.md").read_text(), markup=False, highlight=False, soft_wrap=True)
        stdout.print(f"replayed {len(done['rows'])} LINC files in {done['seconds']} s; {len(done['differences'])} samples "
                     f"differ from LINC's own verdict (listed in {out / 'linc-differences.md'})")
        return

    # The dataset is replaced per baseline run; RunConfig's defaults are the run options' defaults.
    llm = RunConfig(dataset="folio", model=model, base_url=base_url, max_concurrency=max_concurrency) if model else None
    bar, update = _progress()

    def label(text: str) -> None:
        console.print(f"replaying {text}", markup=False, highlight=False, soft_wrap=True)

    with bar:
        result = reproduce_all(out, data_dir, workers, update, llm=llm, limit=limit, label=label,
                               overwrite=overwrite)
    for table in ("table3", "table2", "logicbench"):
        if table in result["made"]:
            stdout.print((out / f"{table}.md").read_text(), markup=False, highlight=False, soft_wrap=True)
    for line in unmade(result["missed"]):
        console.print(f"not made: {line}", markup=False, highlight=False, soft_wrap=True)
    stdout.print(f"replayed {len(result['rows'])} program files in {result['seconds']} s; "
                 f"{', '.join(result['made'])} in {out}")


@app.command("methods")
def methods() -> None:
    """List the shipped methods: paper, solver, samples, vote, refinement, what is reproduced here."""
    from rich.table import Table

    from .data.methods import shipped

    table = Table("method", "paper", "solver", "datasets", "samples", "vote", "refinement", "backup", "reproduced here")
    for spec in shipped().values():
        if spec.baseline == "chain":
            solver = f"none (a chain of steps: {' → '.join(step.name for step in spec.steps)})"
        elif spec.baseline is not None:
            solver = f"none ({spec.baseline})"
        else:
            solver = f"{'the task' if spec.solver == 'task' else spec.solver}'s ({spec.syntax} syntax)"
        refinement = "none" if spec.refine == "none" else f"{spec.refine}, {spec.max_rounds} rounds"
        table.add_row(spec.name, f"{spec.title}: {spec.citation}", solver, ", ".join(spec.datasets) or "any",
                      f"{spec.samples} at T={spec.temperature}", spec.vote, refinement, spec.backup, spec.reproduced)
    stdout.print(table)


@app.command("optimize")
def optimize(
    dataset: str = DATASET,
    task: Optional[Path] = TASK,
    data_dir: Optional[Path] = DATA_DIR,
    model: str = typer.Option(..., "--model", "-m", help="model the pipeline runs with (OpenAI-compatible)"),
    optimizer_model: Optional[str] = typer.Option(None, "--optimizer-model", help="model that judges, writes gradients and rewrites prompts (default: --model)"),
    base_url: Optional[str] = BASE_URL,
    train_split: str = typer.Option("train", "--train-split", help="split the minibatches come from (train on a dataset without one, or the --val-split itself: that split is cut in two)"),
    val_split: str = typer.Option("dev", "--val-split", help="held-out split that decides whether a candidate is kept"),
    steps: int = typer.Option(5, "--steps", help="optimisation steps"),
    batch_size: int = typer.Option(4, "--batch-size", help="training problems per step"),
    max_calls: Optional[int] = typer.Option(None, "--max-calls", help="stop once this many model requests were sent (cached replies are free)"),
    max_cost: Optional[float] = typer.Option(None, "--max-cost", help="stop once this much was spent (needs the prices)"),
    price_prompt: Optional[float] = PRICE_PROMPT,
    price_completion: Optional[float] = PRICE_COMPLETION,
    out: Path = typer.Option(Path("results/optimize"), "--out", "-o", help="folder of the optimisation state, prompt sets and report"),
    unsupervised: bool = typer.Option(False, "--unsupervised", help="use no gold answers: the judge sees none and validation counts executed programs"),
    z: float = typer.Option(2.0, "--z", help="a candidate is kept when its paired gain exceeds z standard errors"),
    seed: int = typer.Option(0, "--seed", help="seed for the minibatches"),
    workers: int = WORKERS,
    limit_val: Optional[int] = typer.Option(None, "--limit-val", help="at most this many validation problems"),
    prompts: Optional[str] = typer.Option(None, "--prompts", help="start from this folder of prompt templates (not Logic-LM's prompts: they have no parts to rewrite)"),
    structure: bool = typer.Option(False, "--structure", help="also optimise the structure: samples, refinement rounds, backup, semantic check, solver time limit"),
    max_concurrency: int = MAX_CONCURRENCY,
    llm_timeout: float = LLM_TIMEOUT,
    max_retries: int = MAX_RETRIES,
    llm_cache: Optional[Path] = typer.Option(None, "--llm-cache", help="SQLite cache of model replies (default OUT/llm-cache.sqlite)"),
    test_split: Optional[str] = typer.Option(None, "--test-split", help="split the start and best prompts are scored on at the end (default: a part of --val-split cut off by id hash; never seen while optimising)"),
    limit_test: Optional[int] = typer.Option(None, "--limit-test", help="at most this many test problems"),
    candidates: int = typer.Option(2, "--candidates", help="candidates per step, raced on validation by successive halving (1: no race)"),
    objective: str = typer.Option("accuracy", "--objective", help="accuracy: keep a better candidate, or an equally accurate one with measurably fewer tokens; cost: keep one with measurably fewer tokens that is not worse"),
) -> None:
    """Optimise a dataset's prompts: losses, gradients and rewrites on training minibatches, each candidate
    kept only if it beats the current prompts on held-out validation problems. Re-running resumes."""
    values = dict(locals())  # the options, before the imports below add names
    from .optimize.config import OptimizeConfig
    from .optimize.loop import optimize as run_optimize
    from .optimize.report import write_report
    from .optimize.state import OptimizeState
    from .prompts import prompts_option

    values["supervised"] = not values.pop("unsupervised")
    values["prompts"] = prompts_option(prompts)
    try:
        config = OptimizeConfig(**values)
    except ValidationError as exc:
        raise invalid_options(exc) from None
    try:
        result = run_optimize(config, progress=lambda note: console.print(note, markup=False, highlight=False,
                                                                               soft_wrap=True))
    except (RunStopped, KeyboardInterrupt):
        # A model that failed for good, or Ctrl-C: the steps that finished before it (and the test part,
        # scored on the way out) are reported all the same.
        if OptimizeState(config.out).current() is not None:
            _wrote(write_report(config.out))
        raise
    _render_optimize(result)
    _wrote(write_report(config.out))
    if result.stopped:  # a clean stop, not an error; exit 4, like a budget spent before the start was validated
        console.print(f"stopped early: {result.stopped}; the report is written; re-run the same command "
                      "(with more budget) to go on", markup=False, highlight=False, soft_wrap=True)
        raise typer.Exit(4)


def _wrote(paths: list[Path]) -> None:
    for path in paths:
        stdout.print(f"wrote {path}", markup=False, highlight=False, soft_wrap=True)


def _render_optimize(result) -> None:
    from rich.table import Table

    from .optimize.stats import describe

    decided = {c.step: c for c in result.candidates}
    table = Table(title=f"optimize {result.folder}: {result.splits.get('note', '')}")
    for column in ("step", "val score", "candidate", "status", "paired gain", "calls (cached)", "tokens", "cost"):
        table.add_column(column)
    for step in result.steps:
        candidate = decided.get(step.step)
        what = ""
        if candidate is not None:
            what = (f"{candidate.prompt_id}/{candidate.component}" if candidate.kind == "prompt"
                    else ", ".join(f"{k}={v}" for k, v in candidate.change.items()))
        table.add_row(str(step.step), f"{step.val_score:.3f}" if step.val_score is not None else "-", what,
                      candidate.status if candidate else ("start" if step.step == 0 else "-"),
                      describe(candidate.paired) if candidate and candidate.paired else "-",
                      f"{step.calls} ({step.cached_calls})", str(step.prompt_tokens + step.completion_tokens),
                      f"{step.cost:.4f}" if step.cost is not None else "-")
    stdout.print(table)
    stdout.print(f"best: {result.best_dir} (validation {result.best_score:.3f}, start {result.start_score:.3f})",
                 markup=False, highlight=False, soft_wrap=True)
    test = result.test
    if test is not None and test.paired is not None and test.interval is not None:
        stdout.print(f"test ({test.problems} unseen problems of {test.split}): start {test.start:.3f}, best "
                     f"{test.best:.3f}, paired {describe(test.paired)}, 95% interval {test.interval[0]:+.3f} to "
                     f"{test.interval[1]:+.3f}; reproduce: {test.command}", markup=False, highlight=False,
                     soft_wrap=True)
    elif test is not None:
        stdout.print(f"test: not scored ({test.error})", markup=False, highlight=False, soft_wrap=True)


@app.command("serve-scripted")
def serve_scripted(programs: Optional[Path] = typer.Option(None, "--programs", help="programs as `run --programs` reads them (Logic-LM's JSON, a JSONL file or a folder), served by problem id"),
                   repairs: Optional[Path] = typer.Option(None, "--repairs", help="JSON object: text in a broken program -> the program refinement answers with"),
                   kb_replies: list[Path] = typer.Option([], "--kb-replies", help="JSONL for kb ask (question, goals, answer) and kb validate (answer, claims), e.g. examples/kb/questions.jsonl (repeatable)"),
                   port: int = typer.Option(0, "--port", help="port on 127.0.0.1 (0: a free one)"),
                   max_in_flight: Optional[int] = typer.Option(None, "--max-in-flight", min=1, help="a rate limit: answer 429 to a request that arrives while this many are being answered"),
                   latency: float = typer.Option(0.0, "--latency", min=0.0, max=600.0, help="seconds each reply takes"),
                   batch_delay: float = typer.Option(0.5, "--batch-delay", min=0.0, max=86400.0, help="seconds a batch of the batch API (/v1/batches) takes from created to completed")) -> None:
    """Serve canned model replies on 127.0.0.1 (an OpenAI-compatible endpoint) to dry-run a task with
    `logicpipe run --model scripted --base-url URL` (each problem gets its program from --programs), or
    `logicpipe kb ask`/`kb validate` the same way (goals, answers and claims from --kb-replies)."""

    from .core.errors import UsageError
    from .data.loaders import parse_json, read_text
    from .testing import FakeOpenAI, ScriptedReplies
    from .testing.kb_replies import read_kb_replies

    if latency != latency or batch_delay != batch_delay:  # nan passes typer's range check
        raise UsageError(f"invalid option {'--latency' if latency != latency else '--batch-delay'}: give a number of seconds")
    if programs is None and not kb_replies:
        raise UsageError("give --programs FILE (for run) or --kb-replies FILE (for kb ask and kb validate), or both")
    fixes = parse_json(read_text(repairs), str(repairs)) if repairs is not None else {}
    if not isinstance(fixes, dict) or not all(isinstance(v, str) for v in fixes.values()):
        raise UsageError(f"{repairs}: expected a JSON object of text in a broken program -> repaired program")
    kb = read_kb_replies(kb_replies) if kb_replies else None
    replies = ScriptedReplies.from_logic_lm(programs, repairs=fixes, kb=kb) if programs is not None \
        else ScriptedReplies({}, repairs=fixes, kb=kb)
    try:
        server = FakeOpenAI(replies, latency=latency, port=port, max_in_flight=max_in_flight, batch_delay=batch_delay)
    except OSError as exc:
        raise UsageError(f"cannot serve on 127.0.0.1:{port}: {exc.strerror or exc}") from None
    served = [f"{len(replies.programs)} programs"] if programs is not None else []
    served += [f"{len(kb)} kb replies"] if kb is not None else []
    tries = ["logicpipe run --model scripted --base-url {url} ..."] if programs is not None else []
    tries += ["logicpipe kb ask KB QUESTION --model scripted --base-url {url}"] if kb is not None else []
    with server:
        console.print(f"serving {' and '.join(served)} at {server.url} (Ctrl-C stops); dry-run with: "
                      + "; ".join(t.format(url=server.url) for t in tries), markup=False, highlight=False)
        try:
            threading.Event().wait()
        except KeyboardInterrupt:
            pass
    refused = f", refused {server.rate_limited} over --max-in-flight" if max_in_flight else ""
    batches = f", and {counted(len(server.batches), 'batch')} of the batch API" if server.batches else ""
    console.print(f"answered {len(server.requests)} requests{refused}{batches}", markup=False, highlight=False)


@app.command("list")
def list_() -> None:
    """Datasets and the installed solvers, with the package each comes from (needs no LLM)."""
    from .data import all_datasets
    from .solvers import registry

    for spec in all_datasets():
        stdout.print(f"{spec.key:<18} {spec.name:<18} solver={spec.solver:<4} splits={','.join(spec.splits)}"
                     + _described(spec), markup=False, highlight=False)
    stdout.print("solvers:", markup=False, highlight=False)
    for entry in registry.entries().values():
        try:  # a broken plugin is one line here; the others are still listed
            described = str(getattr(entry.load(), "formalism", ""))
        except PrerequisiteError as exc:
            described = f"cannot be loaded: {exc}"
        origin = "built-in" if entry.builtin else "plugin"
        stdout.print(f"  {entry.name:<8} {origin:<8} {entry.package:<24} {described}", markup=False, highlight=False)
    from .core import jail

    stdout.print("isolation:", markup=False, highlight=False)
    for line in jail.layers_summary():
        stdout.print(f"  {line}", markup=False, highlight=False)


def _described(spec) -> str:
    """Sizes, the formalisms with a shipped prompt, the licence and subsets of a dataset that declares a licence."""
    if not spec.licence:
        return ""
    from .prompts import PromptSet
    from .solvers import registry

    prompts = PromptSet()
    fits = [name for name in registry.names() if name == spec.solver or prompts.has(f"{spec.prompt}-{name}")]
    sizes = ",".join(f"{split}:{count}" for split, count in spec.sizes.items())
    subsets = ""
    if spec.source.format == "logicbench":
        from .data.logicbench import subsets as named

        types = [name for name in named(spec) if "/" not in name]
        subsets = f" subsets={','.join(types)} and {len(named(spec)) - len(types)} <type>/<pattern>"
    return f" problems={sizes} formalisms={','.join(fits)} licence={spec.licence}{subsets}"


def _fail(message: object) -> None:
    # Plain print: one line however wide the message, where rich would wrap it.
    print(f"error: {message}", file=sys.stderr)


_INTERRUPTED = "interrupted; finished records are kept, re-run to resume"


def main(argv: list[str] | None = None) -> None:
    try:
        code = app(args=argv, standalone_mode=False)
        if code == 130:  # typer turns Ctrl-C into a return value when it is not standalone
            _fail(_INTERRUPTED)
            sys.exit(130)
        if isinstance(code, int) and code:  # a command's typer.Exit(code), returned when not standalone
            sys.exit(code)
    except typer.Exit as exc:
        sys.exit(exc.exit_code)
    except typer.Abort:
        _fail(_INTERRUPTED)
        sys.exit(130)
    except TyperException as exc:  # a bad command line (typer's click usage errors derive from it)
        _fail(exc.format_message())
        sys.exit(exc.exit_code)
    except PrerequisiteError as exc:
        _fail(exc)
        sys.exit(3)
    except Paused as exc:  # --batch-export wrote its requests: expected, so no `error:` line
        print(f"paused: {exc}", file=sys.stderr)
        sys.exit(4)
    except RunStopped as exc:
        _fail(exc)
        sys.exit(4)
    except LogicPipeError as exc:
        _fail(exc)
        sys.exit(2)
    except ValidationError as exc:  # a config built by a command other than the run commands
        _fail(invalid_options(exc))
        sys.exit(2)
    except Exception as exc:  # noqa: BLE001 - the last boundary: one line, records already written stay
        if os.environ.get("LOGICPIPE_DEBUG"):
            raise
        _fail(f"internal error: {type(exc).__name__}: {exc} (set LOGICPIPE_DEBUG=1 for the traceback)")
        sys.exit(1)
    except KeyboardInterrupt:
        _fail(_INTERRUPTED)
        sys.exit(130)


if __name__ == "__main__":
    main()
