"""What every stage receives: the run's options, its task, prompts, files and error budget."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

from ..core.errors import LLMError, RunStopped
from ..core.task import Task
from ..core.trajectory import Trajectory
from ..llm import Completion, Request
from ..prompts import PromptSet
from .config import RunConfig
from .store import Store

Progress = Callable[[str, int, int], None]


def quiet(stage: str, done: int, total: int) -> None:
    return None


@dataclass
class StageReport:
    name: str
    total: int
    new: int
    seconds: float
    note: str = ""


class ModelErrors(RunStopped):
    """The error budget stopped a run; `last` is the model error that did it (a caller with options of
    its own, like `logicpipe optimize`, words the stop in them)."""

    def __init__(self, message: str, last: LLMError):
        super().__init__(message)
        self.last = last


class ErrorBudget:
    """Model errors a run tolerates before it stops: a fatal one (bad key, unknown model) stops it at
    once, others once there are more than `allowed`."""

    def __init__(self, allowed: int):
        self.allowed = allowed
        self.spent = 0

    def check(self, error: LLMError) -> None:
        if error.fatal:
            raise ModelErrors(f"stopped at the first fatal model error ({error}); finished records are kept", error)
        self.spent += 1
        if self.spent > self.allowed:
            raise ModelErrors(f"stopped after {self.spent} model errors, over the budget of {self.allowed} "
                              f"(--max-errors); last: {error}; finished records are kept, re-run to resume", error)


class Gate(Protocol):
    """A spending limit over a run's model requests (`logicpipe optimize --max-calls/--max-cost`)."""

    def admit(self, model: str, requests: list[Request]) -> list[Request]:
        """The requests that may be sent now (those already cached cost nothing); if fewer than all,
        the sender stops the run once they are back."""
        ...

    def charge(self, result: Completion | LLMError) -> None:
        ...


@dataclass
class RunContext:
    config: RunConfig
    task: Task
    store: Store
    prompts: PromptSet
    budget: ErrorBudget
    progress: Progress = quiet
    metrics: dict = field(default_factory=dict)  # set by evaluate
    # Set while the solver overlaps the model: called with each trajectory once its new program is written.
    on_program: Callable[[Trajectory], None] | None = None
    gate: Gate | None = None


Stage = Callable[[RunContext, "list[Trajectory]"], "list[StageReport]"]
