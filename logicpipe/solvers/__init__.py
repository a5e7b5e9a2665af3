"""Solver registry: one module per formalism, found by name, loaded lazily."""

from __future__ import annotations

import difflib
import importlib
from typing import Any

from ..errors import (
    ProgramExecutionError,
    ProgramParseError,
    SolverTimeout,
    UsageError,
)
from .base import Limits, Solver, SolverResult, map_answer

__all__ = ["Limits", "Solver", "SolverResult", "available", "execute_task", "get_solver", "map_answer"]

_REGISTRY = {
    "csp": "logicpipe.solvers.csp:CSPSolver",
    "lp": "logicpipe.solvers.lp:LPSolver",
    "fol": "logicpipe.solvers.fol:FOLSolver",
    "smt": "logicpipe.solvers.smt:SMTSolver",
}


def available() -> list[str]:
    return list(_REGISTRY)


def get_solver(name: str) -> Solver:
    target = _REGISTRY.get(name)
    if target is None:
        close = difflib.get_close_matches(name, list(_REGISTRY), n=1)
        hint = f" (did you mean '{close[0]}'?)" if close else ""
        raise UsageError(f"unknown solver '{name}'{hint}; choose from {', '.join(_REGISTRY)}")
    module, _, cls = target.partition(":")
    return getattr(importlib.import_module(module), cls)()


def execute_task(payload: dict[str, Any]) -> dict[str, Any]:
    """Worker entry point: parse and run one program, turning every expected failure into data."""
    solver = get_solver(payload["solver"])
    limits = Limits(**payload.get("limits", {}))
    try:
        program = solver.parse(payload["program"])
    except ProgramParseError as exc:
        return {"error": ("parse", str(exc))}
    except RecursionError:
        return {"error": ("parse", "program nests too deeply to parse")}
    try:
        result = solver.execute(program, limits)
    except SolverTimeout as exc:
        return {"error": ("timeout", str(exc))}
    except ProgramExecutionError as exc:
        return {"error": ("execution", str(exc))}
    if result.verdict is None:
        return {"error": ("no_answer", result.no_answer or "the program decided no option"),
                "explanation": result.explanation}
    return {"verdict": result.verdict, "explanation": result.explanation}
