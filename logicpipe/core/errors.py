"""One small rooted exception hierarchy. Components raise; stage boundaries turn these into records."""

from __future__ import annotations

import difflib
from enum import Enum


def did_you_mean(word: str, choices: list[str]) -> str:
    """" (did you mean 'x'?)" for the choice closest to a misspelt word, or "" when none is close."""
    close = difflib.get_close_matches(word, choices, n=1)
    return f" (did you mean '{close[0]}'?)" if close else ""


class LogicPipeError(Exception):
    """Root of every error logicpipe raises on purpose."""


class UsageError(LogicPipeError):
    """Bad input from the user (unknown dataset, bad option, malformed file). Shown as one line."""


class DataError(UsageError):
    """A data file is missing, corrupt or of the wrong shape."""


class PrerequisiteError(LogicPipeError):
    """A required binary or package is missing; the message carries the install command."""


class _Located(LogicPipeError):
    """An error in an LLM-written program, with where it is: `line N, column C: reason in 'text'`."""

    def __init__(self, message: str, line: int | None = None, column: int | None = None, text: str | None = None):
        self.reason = message
        self.line = line
        self.column = column
        self.text = text
        where = ""
        if line is not None:
            where = f"line {line}" + (f", column {column}" if column is not None else "") + ": "
        shown = f" in {text.strip()!r}" if text else ""
        super().__init__(f"{where}{message}{shown}")


class ProgramParseError(_Located):
    """An LLM-written program does not follow its grammar (what the grammars in llm/grammars reject)."""


class ProgramExecutionError(LogicPipeError):
    """A parsed program failed while the solver ran it (type error, unknown symbol, solver error)."""


class ProgramCheckError(_Located, ProgramExecutionError):
    """A well-formed program that uses a name it never declared, declares one twice, or gives a value its
    solver cannot take (an empty domain). No context-free grammar can rule these out, so they are no
    parse errors: like Logic-LM, whose solvers meet them as a NameError when they run the program, they
    count as execution errors."""


class SolverTimeout(LogicPipeError):
    """The solver ran past its time bound."""


class LLMError(LogicPipeError):
    """A model request that failed for good: retries ran out, or the endpoint refused it.

    `transient`: the failure may go away on a later run (outage, rate limit, malformed reply), so the
    record is redone then. `fatal`: no request of this run can succeed (bad key, unknown model), so the
    run stops at once.
    """

    def __init__(self, message: str, transient: bool = False, fatal: bool = False):
        super().__init__(message)
        self.transient = transient
        self.fatal = fatal
        # What the replies received before it failed used (the earlier phases of a phased request).
        self.prompt_tokens = 0
        self.completion_tokens = 0


class RunStopped(LogicPipeError):
    """A run stopped on purpose before its end (a fatal model error, the error budget spent)."""


class BudgetSpent(RunStopped):
    """A spending cap (a gate: --max-calls, --max-cost, --max-tokens-total) held model requests back:
    the run stops between requests, with what arrived written."""


class Paused(BudgetSpent):
    """An expected stop: the run wrote the requests it holds for another program to run (--batch-export),
    and goes on when re-run with their replies. Said as what it is, not as an error (exit status 4)."""


class ErrorCategory(str, Enum):
    parse = "parse"
    execution = "execution"
    timeout = "timeout"
    no_answer = "no_answer"
    llm = "llm"
    no_program = "no_program"


def classify(exc: BaseException) -> tuple[ErrorCategory, str, bool]:
    """The one mapping from an exception to an error's category, message and transience (records.py
    makes it a StageError; a solver worker, which loads no records, sends it as it is)."""
    if isinstance(exc, ProgramParseError):
        return ErrorCategory.parse, str(exc), False
    if isinstance(exc, SolverTimeout):
        return ErrorCategory.timeout, str(exc), False
    if isinstance(exc, RecursionError):
        return ErrorCategory.execution, "program nests too deeply to run", False
    if isinstance(exc, MemoryError):
        return ErrorCategory.execution, "memory limit exceeded", False
    if isinstance(exc, LLMError):
        return ErrorCategory.llm, str(exc), exc.transient
    if isinstance(exc, LogicPipeError):
        return ErrorCategory.execution, str(exc), False
    return ErrorCategory.execution, f"{type(exc).__name__}: {exc}", False
