"""What every stage receives: the run's options, its task, prompts, files and error budget."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ..core.task import Task
from ..core.trajectory import Trajectory
from ..llm.gate import Gate
from ..prompts import PromptSet
from ..runtime.folder import ErrorBudget, RunFolder
from .config import RunConfig
from .metrics import Tally

if TYPE_CHECKING:
    from ..llm.client import Pace
    from ..runtime import Executor

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


@dataclass
class RunContext:
    config: RunConfig
    task: Task
    store: RunFolder  # the run's folder: its lock, identity and stage files
    prompts: PromptSet
    budget: ErrorBudget
    progress: Progress = quiet
    metrics: dict = field(default_factory=dict)  # set by evaluate once the run ends
    tally: Tally | None = None  # evaluate's figures, added up chunk by chunk
    # Set while the solver overlaps the model: called with each trajectory once its new program is written.
    on_program: Callable[[Trajectory], None] | None = None
    gate: Gate | None = None
    # The adaptive in-flight limit per model (llm/client.py Pace), kept across the run's clients: a
    # refinement round starts where formulate's limit settled; the summary says where each settled.
    paces: dict[str, Pace] = field(default_factory=dict)
    # Solver workers to start as each chunk begins (the stages solve), so that they are ready by the
    # time its programs are: they start while the chunk's records are read and its programs replayed.
    warm: int = 0
    _executor: Executor | None = None

    def executor(self) -> Executor:
        """Where this chunk's solver calls run: one executor (pool of workers, or Ray connection) for
        its solve and refinement rounds, made and checked on first use, closed when the chunk ends."""
        if self._executor is None:
            from ..runtime import make_executor
            from ..solvers import registry

            config = self.config
            executor = make_executor(config.executor, "logicpipe.solvers:execute_task", config.workers,
                                     config.memory_mb, config.ray_address,
                                     preload=[registry.find(self.task.solver).module],
                                     connect_timeout=config.ray_connect_timeout)
            try:
                executor.check(self.task.solver)
            except BaseException:
                executor.close()
                raise
            self._executor = executor
        return self._executor

    def close_executor(self) -> None:
        executor, self._executor = self._executor, None
        if executor is not None:
            executor.close()


Stage = Callable[[RunContext, "list[Trajectory]"], "list[StageReport]"]
