"""The default executor: the local isolated worker pool, unchanged."""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from ..solvers import get_solver
from .executor import Finished
from .pool import Fetch, SolverCall, WorkerPool, fixed


class LocalExecutor:
    def __init__(self, target: str, workers: int, memory_mb: int, preload: list[str] | None = None):
        self.pool = WorkerPool(target, workers, memory_mb, preload)

    def check(self, solver: str) -> None:
        get_solver(solver).check()

    def map(self, tasks: Iterable[SolverCall]) -> Iterator[Finished]:
        return self.stream(fixed(tasks))

    def stream(self, fetch: Fetch) -> Iterator[Finished]:
        for outcome in self.pool.stream(fetch):
            yield Finished(outcome)

    def close(self) -> None:
        self.pool.close()

    def __enter__(self) -> LocalExecutor:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
