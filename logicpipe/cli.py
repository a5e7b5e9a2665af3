"""Thin typer layer: parse options into a RunConfig, call the library, render with rich."""

from __future__ import annotations

import sys
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
from .report import render_explanation, render_summary

app = typer.Typer(add_completion=False, no_args_is_help=True, pretty_exceptions_enable=False,
                  help="Logic-LM style batch reasoning: formulate -> solve -> interpret -> evaluate.")
console = Console(stderr=True)

DatasetOpt = typer.Option(..., "--dataset", "-d", help="folio, prontoqa, proofwriter, logicaldeduction, ar-lsat")
SplitOpt = typer.Option("dev", "--split", help="dev, test or train (as the dataset has them)")
OutOpt = typer.Option(Path("results/run"), "--out", "-o", help="run directory; stage files go to OUT/<dataset>/")
DataDirOpt = typer.Option(None, "--data-dir", help="Logic-LM data folder (else $LOGICPIPE_DATA, else download)")
LimitOpt = typer.Option(None, "--limit", "-n", help="only the first N problems")
WorkersOpt = typer.Option(1, "--workers", "-w", help="solver worker processes")
ProgramsOpt = typer.Option(None, "--programs", help="replay a Logic-LM raw_logic_programs JSON file")
BackupOpt = typer.Option("random", "--backup", help="answer for problems with no executed program: random|none")
SeedOpt = typer.Option(0, "--seed", help="seed for the random backup")
TimeoutOpt = typer.Option(None, "--timeout", help="seconds per solver call (default: per dataset)")
MemoryOpt = typer.Option(2048, "--memory-mb", help="memory bound per solver worker, MB")


def _config(**values) -> RunConfig:
    try:
        return RunConfig(**values)
    except ValidationError as exc:
        first = exc.errors()[0]
        raise LogicPipeError(f"invalid option --{'.'.join(map(str, first['loc'])).replace('_', '-')}: {first['msg']}") from None


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
    else:
        console.print(f"{name}: {result.total} records ({result.new} new) in {result.seconds:.1f}s "
                      f"-> {config.stage_file(name)}")


def _common(dataset, split, out, data_dir, limit, workers, programs, backup, seed, timeout, memory_mb) -> RunConfig:
    return _config(dataset=dataset, split=split, out=out, data_dir=data_dir, limit=limit, workers=workers,
                   programs=programs, backup=backup, seed=seed, timeout=timeout, memory_mb=memory_mb)


def _make_stage_command(name: str, doc: str):
    def command(dataset: str = DatasetOpt, split: str = SplitOpt, out: Path = OutOpt,
                data_dir: Optional[Path] = DataDirOpt, limit: Optional[int] = LimitOpt, workers: int = WorkersOpt,
                programs: Optional[Path] = ProgramsOpt, backup: str = BackupOpt, seed: int = SeedOpt,
                timeout: Optional[float] = TimeoutOpt, memory_mb: int = MemoryOpt) -> None:
        _stage(name, _common(dataset, split, out, data_dir, limit, workers, programs, backup, seed, timeout, memory_mb))

    command.__doc__ = doc
    app.command(name)(command)


_make_stage_command("formulate", "Write one program per problem (replayed with --programs).")
_make_stage_command("solve", "Parse and execute each program with the dataset's solver.")
_make_stage_command("interpret", "Map solver verdicts to option letters; back up what did not execute.")
_make_stage_command("evaluate", "Score against gold answers; write evaluate.jsonl and metrics.json.")


@app.command()
def run(dataset: str = DatasetOpt, split: str = SplitOpt, out: Path = OutOpt,
        data_dir: Optional[Path] = DataDirOpt, limit: Optional[int] = LimitOpt, workers: int = WorkersOpt,
        programs: Optional[Path] = ProgramsOpt, backup: str = BackupOpt, seed: int = SeedOpt,
        timeout: Optional[float] = TimeoutOpt, memory_mb: int = MemoryOpt) -> None:
    """All stages in order; resumes whatever an earlier run left."""
    config = _common(dataset, split, out, data_dir, limit, workers, programs, backup, seed, timeout, memory_mb)
    bar, update = _progress()
    with bar:
        report = pipeline.run(config, update)
    render_summary(console, report.metrics, report.stages)
    console.print(f"metrics: {config.stage_dir / 'metrics.json'}")


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
              data_dir: Optional[Path] = DataDirOpt, workers: int = typer.Option(2, "--workers", "-w")) -> None:
    """Replay every released Logic-LM program file; write table3/table2 (.md, .csv, .json) and accuracy.png."""
    from .reproduce import reproduce as reproduce_all

    bar, update = _progress()
    with bar:
        result = reproduce_all(out, data_dir, workers, update)
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
    except KeyboardInterrupt:
        _fail("interrupted; finished records are kept, re-run to resume")
        sys.exit(130)


if __name__ == "__main__":
    main()
