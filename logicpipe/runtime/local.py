"""The default executor: the local isolated worker pool, unchanged."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from functools import partial

from ..solvers import get_solver
from .executor import Finished, check_solver
from .pool import Fetch, SolverCall, WorkerPool, fixed


class LocalExecutor:
    def __init__(self, target: str, workers: int, memory_mb: int, preload: list[str] | None = None):
        self.pool = WorkerPool(target, workers, memory_mb, preload)

    def check(self, solver: str) -> None:
        """Here, then in each worker under its limits before it takes a call (a memory bound too small to
        load the solver shows there): the pool stops, naming why, when workers cannot start."""
        get_solver(solver).check()
        self.pool.setup = partial(check_solver, solver)

    def warm(self, count: int) -> None:
        self.pool.start(count)

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
