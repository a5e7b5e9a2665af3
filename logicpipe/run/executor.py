"""The executor interface: run isolated tasks somewhere, yield each outcome and the node that ran it."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Protocol

from .pool import Fetch, Outcome, SolverCall


@dataclass
class Finished:
    outcome: Outcome
    node: str | None = None  # the cluster node that ran the call; None for the local pool


class Executor(Protocol):
    def check(self, solver: str) -> None:
        """Raise PrerequisiteError when the solver cannot run where the calls will run."""

    def map(self, tasks: Iterable[SolverCall]) -> Iterator[Finished]:
        """One Finished per task, in completion order; every task bounded in time and memory."""

    def stream(self, fetch: Fetch) -> Iterator[Finished]:
        """The same for tasks that keep arriving through `fetch` (see pool.WorkerPool.stream)."""

    def close(self) -> None: ...

    def __enter__(self) -> Executor: ...

    def __exit__(self, *exc: object) -> None: ...
