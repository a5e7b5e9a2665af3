"""Solvers: one module per formalism behind one interface (base.Solver), found by name among the
installed entry points (registry.py) and loaded on first use."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..core.errors import LogicPipeError, PrerequisiteError, ProgramParseError
from ..core.jsonl import LONE_SURROGATE
from ..core.records import ErrorCategory, StageError, stage_error
from . import registry
from .base import Limits, Solver, SolverResult, map_answer

__all__ = ["Limits", "Solver", "SolverOutcome", "SolverResult", "execute_task", "get_solver", "map_answer"]

def get_solver(name: str) -> Solver:
    """A new instance of the solver registered as `name`; UsageError for an unknown name, PrerequisiteError
    (one line naming the plugin) for one that cannot be loaded or made."""
    entry = registry.find(name)
    cls = entry.load()
    try:
        solver: Solver = cls()
    except Exception as exc:  # noqa: BLE001 - a plugin's constructor failing is that plugin's: one line
        raise PrerequisiteError(f"solver plugin '{name}' ({entry.package}) cannot be made: "
                                f"{type(exc).__name__}: {exc}") from None
    return solver


@dataclass
class SolverOutcome:
    """What a worker sends back for one program: a verdict, or a typed error; and the explanation."""

    verdict: str | None = None
    explanation: dict[str, Any] | None = None
    error: StageError | None = None


def execute_task(payload: dict[str, Any]) -> SolverOutcome:
    """Worker entry point: parse and run one program, turning every expected failure into data."""
    solver = get_solver(payload["solver"])
    limits = Limits(**payload.get("limits", {}))
    text = payload["program"]
    invalid = LONE_SURROGATE.search(text)
    if invalid is not None:  # no parser or solver can encode it; say where it is instead of failing there
        line = text.count("\n", 0, invalid.start()) + 1
        column = invalid.start() - text.rfind("\n", 0, invalid.start())
        return SolverOutcome(error=stage_error(ProgramParseError("the text is not valid Unicode (a lone surrogate)",
                                                                 line, column)))
    try:
        program = solver.parse(text)
    except RecursionError:
        return SolverOutcome(error=StageError(category=ErrorCategory.parse, message="program nests too deeply to parse"))
    except LogicPipeError as exc:
        return SolverOutcome(error=stage_error(exc))
    try:
        result = solver.execute(program, limits)
    except (LogicPipeError, RecursionError) as exc:
        return SolverOutcome(error=stage_error(exc))
    if result.verdict is None:
        message = result.no_answer or "the program decided no option"
        return SolverOutcome(explanation=result.explanation,
                             error=StageError(category=ErrorCategory.no_answer, message=message))
    return SolverOutcome(verdict=result.verdict, explanation=result.explanation)
