"""Solvers: one module per formalism behind one interface (base.Solver), found by name among the
installed entry points (registry.py) and loaded on first use.

What a solver worker imports: nothing here loads pydantic or the record models (the solve stage makes
a worker's Failure a StageError), so the fork server that starts workers is ready in a third of the time."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..core.errors import ErrorCategory, LogicPipeError, PrerequisiteError, ProgramParseError, classify
from . import registry
from .base import Limits, Solver, SolverResult, map_answer

__all__ = ["Failure", "Limits", "Solver", "SolverOutcome", "SolverResult", "execute_task", "get_solver", "lenient",
           "loaded_solver", "map_answer", "solver_rules", "strict_refusal"]

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


def solver_rules(name: str) -> dict[str, Any]:
    """The named leniencies of the solver registered as `name` (its `rules`: name -> Rule); {} for a
    solver that names none or cannot be loaded here."""
    try:
        return dict(getattr(get_solver(name), "rules", {}))
    except LogicPipeError:
        return {}


def loaded_solver(name: str) -> Solver:
    """The solver registered as `name`, checked and with its libraries loaded (Solver.load, where it
    has one): what a worker does before its first call, so that no call's time bound pays for them."""
    solver = get_solver(name)
    solver.check()
    load = getattr(solver, "load", None)
    if load is not None:
        load()
    return solver


@dataclass(frozen=True)
class Failure:
    """Why a program has no verdict: the category and message of its record's StageError."""

    category: ErrorCategory
    message: str

    @classmethod
    def of(cls, exc: BaseException) -> Failure:
        category, message, _transient = classify(exc)
        return cls(category, message)


@dataclass
class SolverOutcome:
    """What a worker sends back for one program: a verdict, or a typed error; and the explanation."""

    verdict: str | None = None
    explanation: dict[str, Any] | None = None
    error: Failure | None = None
    # Each leniency the program needed (the solver's `rules`) -> where: "line 4, column 7".
    lenient: dict[str, str] | None = None


def execute_task(payload: dict[str, Any]) -> SolverOutcome:
    """Worker entry point: parse and run one program, turning every expected failure into data."""
    solver = get_solver(payload["solver"])
    limits = Limits(**payload.get("limits", {}))
    text = payload["program"]
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as invalid:  # a lone surrogate: no parser or solver can encode it; say where
        line = text.count("\n", 0, invalid.start) + 1
        column = invalid.start - text.rfind("\n", 0, invalid.start)
        return SolverOutcome(error=Failure.of(ProgramParseError("the text is not valid Unicode (a lone surrogate)",
                                                                line, column)))
    try:
        program = solver.parse(text)
    except RecursionError:
        return SolverOutcome(error=Failure(ErrorCategory.parse, "program nests too deeply to parse"))
    except LogicPipeError as exc:
        return SolverOutcome(error=Failure.of(exc))
    found = lenient(program)
    if payload.get("strict"):
        refused = strict_refusal(solver, program)
        if refused is not None:
            return SolverOutcome(error=Failure.of(refused))
    try:
        result = solver.execute(program, limits)
    except (LogicPipeError, RecursionError) as exc:
        return SolverOutcome(error=Failure.of(exc), lenient=found)
    if result.verdict is None:
        message = result.no_answer or "the program decided no option"
        return SolverOutcome(explanation=result.explanation, error=Failure(ErrorCategory.no_answer, message),
                             lenient=found)
    return SolverOutcome(verdict=result.verdict, explanation=result.explanation, lenient=found)


def _where(line: int | None, column: int | None) -> str:
    return "program" if line is None else f"line {line}" + (f", column {column}" if column is not None else "")


def lenient(program: Any) -> dict[str, str] | None:
    """The leniencies a parsed program needed (its `lenient`: rule -> (line, column)), where each was first
    needed; None when it needed none or its solver names none."""
    found = getattr(program, "lenient", None)
    return {rule: _where(*at) for rule, at in found.items()} or None if found else None


def strict_refusal(solver: Solver, program: Any) -> ProgramParseError | None:
    """Under --strict, the parse error for the first leniency (in program order) that Logic-LM's own parser
    does not accept, naming the rule; None when the program keeps to Logic-LM's grammar."""
    rules = getattr(solver, "rules", {})
    found = getattr(program, "lenient", None) or {}
    refused = sorted(((at[0] or 0, at[1] or 0), rule) for rule, at in found.items()
                     if rule in rules and not rules[rule].logic_lm)
    if not refused:
        return None
    (line, column), rule = refused[0]
    return ProgramParseError(f"{rules[rule].says} is outside Logic-LM's grammar (--strict refuses the rule "
                             f"'{rule}')", line or None, column or None)
