"""The executor interface: run isolated tasks somewhere, yield each outcome and the node that ran it."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Protocol

from ..core.errors import LogicPipeError
from .pool import Fetch, Outcome, SolverCall


@dataclass
class Finished:
    outcome: Outcome
    node: str | None = None  # the cluster node that ran the call; None for the local pool


class Executor(Protocol):
    def check(self, solver: str) -> None:
        """Raise PrerequisiteError when the solver cannot run where the calls will run."""

    def warm(self, count: int) -> None:
        """Make ready to run `count` calls at once now, before they come (where that takes time)."""

    def map(self, tasks: Iterable[SolverCall]) -> Iterator[Finished]:
        """One Finished per task, in completion order; every task bounded in time and memory."""

    def stream(self, fetch: Fetch) -> Iterator[Finished]:
        """The same for tasks that keep arriving through `fetch` (see pool.WorkerPool.stream)."""

    def close(self) -> None: ...

    def __enter__(self) -> Executor: ...

    def __exit__(self, *exc: object) -> None: ...


def check_solver(solver: str) -> str | None:
    """Where calls run (a Ray node, a new worker of the local pool): why the solver cannot run there,
    or None when it can. Its libraries are loaded here too (Solver.check says why)."""
    from ..solvers import loaded_solver

    try:
        loaded_solver(solver)
    except LogicPipeError as exc:
        return str(exc)
    except Exception as exc:  # noqa: BLE001 - a missing package shows as ImportError; report it, do not crash
        return f"{type(exc).__name__}: {exc}"
    return None
