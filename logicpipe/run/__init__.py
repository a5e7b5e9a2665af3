"""Where solver calls run: the local worker pool (default) or a Ray cluster; both yield the same outcomes."""

from __future__ import annotations

from .executor import Executor, Finished
from .local import LocalExecutor


def make_executor(kind: str, target: str, workers: int, memory_mb: int, address: str | None = None,
                  preload: list[str] | None = None) -> Executor:
    """The executor a run's options name; Ray is imported only when it is asked for. `preload`: modules
    the local pool's fork server imports once for all workers."""
    if kind == "ray":
        from .ray_executor import RayExecutor

        return RayExecutor(target, memory_mb, address)
    return LocalExecutor(target, workers, memory_mb, preload)


__all__ = ["Executor", "Finished", "LocalExecutor", "make_executor"]
