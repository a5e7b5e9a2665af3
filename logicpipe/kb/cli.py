"""`logicpipe kb ...`: a thin typer layer over logicpipe.kb's Python API."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Optional

import typer

from ..errors import UsageError
from .base import KnowledgeBase, Percept, parse_percept, read_percepts
from .prolog import Limits
from .render import dot, mermaid, text_result

kb_app = typer.Typer(no_args_is_help=True, help="Answer questions from, and check answers against, a Prolog KB.")

_FORMATS = ("text", "json", "dot", "mermaid")


def _limits(depth: int, inferences: int, seconds: float, memory_mb: int, max_solutions: int) -> Limits:
    if min(depth, inferences, memory_mb, max_solutions) < 1 or seconds <= 0:
        raise UsageError("--depth, --inferences, --time, --memory-mb and --max-solutions must be positive")
    return Limits(depth, inferences, seconds, memory_mb, max_solutions)


def _percepts(percept: list[str], percepts_file: Optional[Path]) -> list[Percept]:
    found = read_percepts(percepts_file) if percepts_file else []
    return found + [parse_percept(p) for p in percept]


_DEPTH = typer.Option(200, "--depth", help="most nested KB calls per proof")
_INFERENCES = typer.Option(2_000_000, "--inferences", help="most logical inferences per proof")
_TIME = typer.Option(5.0, "--time", help="seconds per proof")
_MEMORY = typer.Option(512, "--memory-mb", help="Prolog stack MB per proof")
_SOLUTIONS = typer.Option(10, "--max-solutions", help="solutions reported per goal")
_PERCEPT = typer.Option([], "--percept", help="real-time value name=value, asserted as name(value)")
_PERCEPTS_FILE = typer.Option(None, "--percepts", help="file of name=value lines")


@kb_app.command()
def check(kb: list[Path] = typer.Argument(..., help="KB files (or folders of .pl files)")) -> None:
    """Load the KB in an isolated SWI-Prolog; report errors with file:line and list the predicates."""
    failed = False
    for path in kb:
        with KnowledgeBase(path) as base:
            for message in base.messages:
                typer.echo(str(message), err=True)
            failed = failed or bool(base.errors)
            for predicate in sorted(base.predicates, key=lambda p: (p.name, p.arity)):
                kind = " (dynamic)" if predicate.dynamic else ""
                typer.echo(f"{predicate.signature:<28} {predicate.clauses:>5} clauses  {predicate.file}{kind}")
    if failed:
        sys.exit(1)  # typer.Exit's code is lost under main()'s standalone_mode=False


@kb_app.command()
def prove(kb: Path = typer.Argument(..., help="KB file or folder"),
          goals: list[str] = typer.Argument(..., help="goals such as 'ancestor(tom, X)'"),
          format: str = typer.Option("text", "--format", "-f", help="text, json, dot or mermaid"),
          depth: int = _DEPTH, inferences: int = _INFERENCES, time: float = _TIME, memory_mb: int = _MEMORY,
          max_solutions: int = _SOLUTIONS, percept: list[str] = _PERCEPT,
          percepts: Optional[Path] = _PERCEPTS_FILE) -> None:
    """Backward-chain each goal through the KB; print bindings and goal trees. Exit 1 if one fails."""
    if format not in _FORMATS:
        raise UsageError(f"--format must be one of {', '.join(_FORMATS)}")
    limits = _limits(depth, inferences, time, memory_mb, max_solutions)
    with KnowledgeBase(kb, limits, _percepts(percept, percepts)) as base:
        base.require_clean()
        terms = [base.check(goal) for goal in goals]  # every goal is checked before any runs
        results = [base.prove_term(term) for term in terms]
    if format == "json":
        for result in results:
            typer.echo(json.dumps(result, ensure_ascii=False))
    elif format == "dot":
        typer.echo(dot(results))
    elif format == "mermaid":
        typer.echo(mermaid(results))
    else:
        typer.echo("\n\n".join(text_result(r) for r in results))
    if not all(r["proved"] for r in results):
        sys.exit(1)
