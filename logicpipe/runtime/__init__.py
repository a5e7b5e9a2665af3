"""Where solver calls run: the local worker pool (default) or a Ray cluster; both yield the same outcomes.

The executors are loaded on first use: they import the solvers (and with them pydantic and the
records), while `logicpipe.runtime.pool` alone must stay light, because the command line starts the fork
server from it before anything else is imported (logicpipe/__main__.py)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..core.lazy import lazy_names

if TYPE_CHECKING:
    from .executor import Executor, Finished
    from .local import LocalExecutor

_LAZY = {"Executor": "executor", "Finished": "executor", "LocalExecutor": "local"}


def make_executor(kind: str, target: str, workers: int, memory_mb: int, address: str | None = None,
                  preload: list[str] | None = None, connect_timeout: float = 30.0) -> Executor:
    """The executor a run's options name; Ray is imported only when it is asked for. `preload`: modules
    the local pool's fork server imports once for all workers; `connect_timeout`: seconds to join a Ray
    cluster."""
    if kind == "ray":
        from .ray_executor import RayExecutor

        return RayExecutor(target, memory_mb, address, connect_timeout=connect_timeout)
    from .local import LocalExecutor

    return LocalExecutor(target, workers, memory_mb, preload)

__getattr__ = lazy_names(__name__, _LAZY)


__all__ = ["Executor", "Finished", "LocalExecutor", "make_executor"]
