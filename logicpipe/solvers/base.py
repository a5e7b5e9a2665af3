"""The interface every solver module implements, and the shared answer mapping."""

from __future__ import annotations

import importlib.util
import re
from dataclasses import dataclass
from typing import Any, Protocol

from ..core.errors import PrerequisiteError


@dataclass(frozen=True)
class Rule:
    """A named leniency of a parser (a solver's `rules`): what it accepts beyond the documented grammar, and
    whether Logic-LM's own code for that language reads it the same way (`--strict` refuses those it does
    not: its parser rejects them, or gives them another meaning)."""

    says: str
    logic_lm: bool


@dataclass
class Limits:
    seconds: float = 10.0
    memory_mb: int = 2048


@dataclass
class SolverResult:
    """What a solver concluded. `verdict` is an option letter (CSP, SMT) or True/False/Unknown (LP, FOL);
    None with `no_answer` set means the program ran but decided nothing."""

    verdict: str | None
    explanation: dict[str, Any] | None = None
    no_answer: str | None = None


class Solver(Protocol):
    name: str
    formalism: str

    def check(self) -> None:
        """Raise PrerequisiteError when a binary or package the solver needs is missing. Cheap: the
        command runs it before it writes anything, and needs no solver library itself (a package is
        looked for, not imported: `installed`). A solver may also define `load()`, which imports what
        `execute` needs (raising PrerequisiteError when it cannot): each worker of the local pool runs it
        once before its first call (solvers.loaded_solver), so no call's time bound pays for the import."""

    def parse(self, text: str) -> Any:
        """Parse program text into a typed program; raise ProgramParseError with line and reason."""

    def execute(self, program: Any, limits: Limits) -> SolverResult:
        """Run a parsed program within the limits; raise ProgramExecutionError or SolverTimeout."""


def installed(module: str, missing: str) -> None:
    """PrerequisiteError(`missing`) when no package `module` is installed; it is not imported."""
    if importlib.util.find_spec(module) is None:
        raise PrerequisiteError(missing)


_OPTION = re.compile(r"^\s*\(?([A-Z])\)\s*(.*)$")
_TRUTH = {"true": "True", "false": "False", "unknown": "Unknown", "uncertain": "Unknown"}


def option_letters(options: list[str]) -> dict[str, str]:
    """{'A': 'True', ...} from Logic-LM option strings such as 'A) True'."""
    out = {}
    for index, option in enumerate(options):
        match = _OPTION.match(option)
        if match:
            out[match.group(1)] = match.group(2).strip()
        else:
            out[chr(ord("A") + index)] = option.strip()
    return out


def map_answer(verdict: str | None, options: list[str], closed_world: bool = False) -> str | None:
    """Map a solver verdict onto an option letter. Closed-world datasets (ProntoQA) read an unproved
    statement as False, as Logic-LM's code does."""
    if verdict is None:
        return None
    letters = option_letters(options)
    if verdict in letters:
        return verdict
    truth = _TRUTH.get(verdict.lower())
    if truth is None:
        return None
    if truth == "Unknown" and closed_world:
        truth = "False"
    for letter, text in letters.items():
        if _TRUTH.get(text.strip().rstrip(".").lower()) == truth:
            return letter
    return None
