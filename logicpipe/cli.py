"""Thin typer layer: parse options into a RunConfig, call the library, render with rich."""

from __future__ import annotations

import inspect
import os
import sys
import typing
from pathlib import Path
from typing import Optional

import typer

try:  # recent typer vendors its own click
    from typer._click.exceptions import UsageError as ClickUsageError
except ImportError:  # pragma: no cover - older typer uses click itself
    from click import UsageError as ClickUsageError
from pydantic import ValidationError
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from . import pipeline
from .config import RunConfig
from .errors import LogicPipeError, PrerequisiteError
from .kb.cli import kb_app
from .report import render_explanation, render_summary

app = typer.Typer(add_completion=False, no_args_is_help=True, pretty_exceptions_enable=False,
                  help="Logic-LM style batch reasoning: formulate -> solve -> refine -> interpret -> evaluate.")
console = Console(stderr=True)
app.add_typer(kb_app, name="kb")


def _options(
    dataset: str = typer.Option(..., "--dataset", "-d", help="folio, prontoqa, proofwriter, logicaldeduction, ar-lsat"),
    split: str = typer.Option("dev", "--split", help="dev, test or train (as the dataset has them)"),
    out: Path = typer.Option(Path("results/run"), "--out", "-o", help="run directory; files go to OUT/<dataset>/"),
    data_dir: Optional[Path] = typer.Option(None, "--data-dir", help="Logic-LM data folder (else $LOGICPIPE_DATA, else download)"),
    limit: Optional[int] = typer.Option(None, "--limit", "-n", help="only the first N problems"),
    workers: int = typer.Option(1, "--workers", "-w", help="solver worker processes"),
    programs: Optional[Path] = typer.Option(None, "--programs", help="replay a Logic-LM raw_logic_programs JSON file"),
    backup: str = typer.Option("random", "--backup", help="answer when no program executed: random|cot|none"),
    seed: int = typer.Option(0, "--seed", help="seed for the random backup"),
    timeout: Optional[float] = typer.Option(None, "--timeout", help="seconds per solver call (default: per dataset)"),
    memory_mb: int = typer.Option(2048, "--memory-mb", help="memory bound per solver worker, MB"),
    model: Optional[str] = typer.Option(None, "--model", "-m", help="model that writes programs (OpenAI-compatible)"),
    base_url: Optional[str] = typer.Option(None, "--base-url", envvar="OPENAI_BASE_URL", help="OpenAI-compatible endpoint, e.g. http://localhost:8000/v1"),
    max_concurrency: int = typer.Option(8, "--max-concurrency", help="model requests in flight at once"),
    num_samples: int = typer.Option(1, "--num-samples", help="programs per problem; >1 votes over executed ones"),
    temperature: float = typer.Option(0.0, "--temperature"),
    max_tokens: int = typer.Option(2048, "--max-tokens"),
    max_rounds: int = typer.Option(3, "--max-rounds", help="self-refinement rounds (0: none)"),
    refine_model: Optional[str] = typer.Option(None, "--refine-model", help="model for refinement (default: --model)"),
    llm_timeout: float = typer.Option(120.0, "--llm-timeout", help="seconds per model request"),
    max_retries: int = typer.Option(5, "--max-retries", help="retries per model request"),
    price_prompt: Optional[float] = typer.Option(None, "--price-prompt", help="price per million prompt tokens"),
    price_completion: Optional[float] = typer.Option(None, "--price-completion", help="price per million completion tokens"),
    llm_cache: Optional[Path] = typer.Option(None, "--llm-cache", help="SQLite cache of model replies"),
) -> RunConfig:
    try:
        return RunConfig(**{k: v for k, v in locals().items()})
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(map(str, first["loc"])).replace("_", "-")
        raise LogicPipeError(f"invalid option{' --' + where if where else ''}: {first['msg']}") from None


def _command(name: str, extra: list[inspect.Parameter] | None = None):
    """Register `func(config, **extra)` as a command taking every run option."""
    def register(func):
        def command(**values):
            extras = {p.name: values.pop(p.name) for p in extra or []}
            return func(_options(**values), **extras)

        hints = typing.get_type_hints(_options)
        parameters = [p.replace(annotation=hints[p.name]) for p in inspect.signature(_options).parameters.values()]
        parameters += extra or []
        command.__signature__ = inspect.Signature(parameters)
        command.__doc__ = func.__doc__
        app.command(name)(command)
        return func

    return register


def _progress() -> tuple[Progress, pipeline.Progress]:
    bar = Progress(TextColumn("[bold]{task.description:<10}"), BarColumn(), MofNCompleteColumn(),
                   TimeElapsedColumn(), console=console, transient=False, disable=not console.is_terminal)
    tasks: dict[str, int] = {}

    def update(stage: str, done: int, total: int) -> None:
        if stage not in tasks:
            tasks[stage] = bar.add_task(stage, total=total)
        bar.update(tasks[stage], completed=done, total=total)

    return bar, update


def _stage(name: str, config: RunConfig) -> None:
    problems = pipeline.problems_for(config)
    bar, update = _progress()
    with bar:
        result = getattr(pipeline, name)(config, problems, update)
    if name == "evaluate":
        report, metrics = result
        render_summary(console, metrics, [report])
        return
    for report in result if isinstance(result, list) else [result]:
        console.print(f"{report.name}: {report.total} records ({report.new} new) in {report.seconds:.1f}s")


for _name, _doc in [("formulate", "Write one program per problem (replayed with --programs, or by --model)."),
                    ("solve", "Parse and execute each program with the dataset's solver."),
                    ("refine", "Send failed programs and the solver's error back to the model, up to --max-rounds."),
                    ("interpret", "Map solver verdicts to option letters; back up what did not execute."),
                    ("evaluate", "Score against gold answers; write evaluate.jsonl and metrics.json.")]:
    def _stage_command(config: RunConfig, _name: str = _name) -> None:
        _stage(_name, config)

    _stage_command.__doc__ = _doc
    _command(_name)(_stage_command)


@_command("run")
def run(config: RunConfig) -> None:
    """All stages in order (formulate, solve, refine, interpret, evaluate); resumes what an earlier run left."""
    bar, update = _progress()
    with bar:
        report = pipeline.run(config, update)
    render_summary(console, report.metrics, report.stages)
    console.print(f"metrics: {config.stage_dir / 'metrics.json'}")


_MODE = inspect.Parameter("mode", inspect.Parameter.KEYWORD_ONLY, annotation=str,
                          default=typer.Option("cot", "--mode", help="standard or cot"))


@_command("baseline", [_MODE])
def baseline(config: RunConfig, mode: str) -> None:
    """The paper's Standard or CoT baseline with the same client, cache and evaluator."""
    bar, update = _progress()
    with bar:
        report = pipeline.baseline(config, mode, update)
    render_summary(console, report.metrics, report.stages)


@app.command()
def explain(run_dir: Path = typer.Argument(..., help="a run directory (the --out of a run)"),
            id: str = typer.Option(..., "--id", help="problem id"),
            dataset: Optional[str] = typer.Option(None, "--dataset", "-d", help="dataset, if the run has several")) -> None:
    """Show how the solver reached its answer for one problem (goal tree or proof)."""
    from .explain import find_solve_record

    record = find_solve_record(run_dir, id, dataset)
    render_explanation(Console(), record)


@app.command()
def reproduce(out: Path = typer.Option(Path("results"), "--out", "-o", help="where tables, chart and runs go"),
              data_dir: Optional[Path] = typer.Option(None, "--data-dir"),
              workers: int = typer.Option(2, "--workers", "-w"),
              limit: Optional[int] = typer.Option(None, "--limit", "-n", help="only the first N problems per file"),
              model: Optional[str] = typer.Option(None, "--model", "-m", help="also run the Standard and CoT baselines"),
              base_url: Optional[str] = typer.Option(None, "--base-url", envvar="OPENAI_BASE_URL"),
              max_concurrency: int = typer.Option(8, "--max-concurrency")) -> None:
    """Replay every released Logic-LM program file; write table3/table2 (.md, .csv, .json) and accuracy.png."""
    from .reproduce import reproduce as reproduce_all

    # The dataset is replaced per baseline run; RunConfig's defaults are the run options' defaults.
    llm = RunConfig(dataset="folio", model=model, base_url=base_url, max_concurrency=max_concurrency) if model else None
    bar, update = _progress()
    with bar:
        result = reproduce_all(out, data_dir, workers, update, llm=llm, limit=limit)
    console.print((out / "table3.md").read_text(), markup=False, highlight=False)
    console.print(f"replayed {len(result['rows'])} program files in {result['seconds']} s; "
                  f"tables and chart in {out}")


@app.command("list")
def list_() -> None:
    """Datasets and solvers this version knows (needs no LLM)."""
    from .datasets import all_datasets

    out = Console()
    for spec in all_datasets():
        out.print(f"{spec.key:<18} {spec.name:<18} solver={spec.solver:<4} splits={','.join(spec.splits)}")


def _fail(message: object) -> None:
    # Plain print: one line however wide the message, where rich would wrap it.
    print(f"error: {message}", file=sys.stderr)


def main(argv: list[str] | None = None) -> None:
    try:
        app(args=argv, standalone_mode=False)
    except typer.Exit as exc:
        sys.exit(exc.exit_code)
    except typer.Abort:
        _fail("aborted")
        sys.exit(130)
    except ClickUsageError as exc:
        _fail(exc.format_message())
        sys.exit(2)
    except PrerequisiteError as exc:
        _fail(exc)
        sys.exit(3)
    except LogicPipeError as exc:
        _fail(exc)
        sys.exit(2)
    except Exception as exc:  # noqa: BLE001 - the last boundary: one line, records already written stay
        if os.environ.get("LOGICPIPE_DEBUG"):
            raise
        _fail(f"internal error: {type(exc).__name__}: {exc} (set LOGICPIPE_DEBUG=1 for the traceback)")
        sys.exit(1)
    except KeyboardInterrupt:
        _fail("interrupted; finished records are kept, re-run to resume")
        sys.exit(130)


if __name__ == "__main__":
    main()
