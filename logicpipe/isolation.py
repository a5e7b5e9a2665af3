"""Run solver calls in a pool of worker processes, each call bounded in time and memory.

A call that overruns its deadline has its whole process group killed and the worker replaced, so one
bad program can neither hang nor take down a run. Workers start from a fork server, not from the
(possibly threaded) parent.
"""

from __future__ import annotations

import importlib
import multiprocessing
import os
import resource
import signal
import time
from collections import deque
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from multiprocessing.connection import Connection, wait
from typing import Any


@dataclass
class Task:
    key: str
    payload: dict[str, Any]
    timeout: float


@dataclass
class Outcome:
    key: str
    status: str  # "ok", "error", "timeout" or "crashed"
    value: Any = None
    message: str = ""
    seconds: float = 0.0


def _resolve(target: str):
    module, _, name = target.partition(":")
    return getattr(importlib.import_module(module), name)


def _worker_main(conn: Connection, target: str, memory_mb: int) -> None:
    os.setsid()
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if memory_mb > 0:
        limit = memory_mb * 1024 * 1024
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    func = _resolve(target)
    while True:
        try:
            payload = conn.recv()
        except EOFError:
            return
        if payload is None:
            return
        try:
            conn.send(("ok", func(payload)))
        except MemoryError:
            conn.send(("error", f"memory limit of {memory_mb} MB exceeded"))
        except BaseException as exc:  # noqa: BLE001 - the boundary: every failure becomes a message
            conn.send(("error", f"{type(exc).__name__}: {exc}"))


@dataclass
class _Worker:
    process: Any
    conn: Connection
    task: Task | None = None
    started: float = field(default=0.0)


class WorkerPool:
    """`target` is "module:function"; the function takes a payload dict and returns picklable data."""

    def __init__(self, target: str, workers: int = 1, memory_mb: int = 2048):
        self.target = target
        self.size = max(1, workers)
        self.memory_mb = memory_mb
        self._ctx = multiprocessing.get_context("forkserver")
        self._workers: list[_Worker] = []

    def _spawn(self) -> _Worker:
        parent, child = self._ctx.Pipe()
        process = self._ctx.Process(target=_worker_main, args=(child, self.target, self.memory_mb), daemon=True)
        process.start()
        child.close()
        return _Worker(process, parent)

    def _kill(self, worker: _Worker) -> None:
        try:
            os.killpg(worker.process.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            worker.process.kill()
        worker.process.join(5)
        worker.conn.close()

    def map(self, tasks: Iterable[Task]) -> Iterator[Outcome]:
        """Yield one Outcome per task, in completion order."""
        pending = deque(tasks)
        while len(self._workers) < min(self.size, len(pending)):
            self._workers.append(self._spawn())
        while pending or any(w.task for w in self._workers):
            for worker in self._workers:
                if worker.task is None and pending:
                    worker.task = pending.popleft()
                    worker.started = time.monotonic()
                    worker.conn.send(worker.task.payload)
            busy = [w for w in self._workers if w.task is not None]
            now = time.monotonic()
            next_deadline = min(w.started + w.task.timeout for w in busy)
            ready = wait([w.conn for w in busy], timeout=max(0.0, next_deadline - now))
            now = time.monotonic()
            for index, worker in enumerate(list(self._workers)):
                task = worker.task
                if task is None:
                    continue
                elapsed = now - worker.started
                if worker.conn in ready:
                    try:
                        status, value = worker.conn.recv()
                    except (EOFError, OSError):
                        code = worker.process.exitcode
                        self._replace(index, worker)
                        yield Outcome(task.key, "crashed", message=_death(code), seconds=elapsed)
                        continue
                    worker.task = None
                    if status == "ok":
                        yield Outcome(task.key, "ok", value=value, seconds=elapsed)
                    else:
                        yield Outcome(task.key, "error", message=value, seconds=elapsed)
                elif elapsed >= task.timeout:
                    self._replace(index, worker)
                    yield Outcome(task.key, "timeout", message=f"no result within {task.timeout:g} s", seconds=elapsed)

    def _replace(self, index: int, worker: _Worker) -> None:
        self._kill(worker)
        self._workers[index] = self._spawn()

    def close(self) -> None:
        for worker in self._workers:
            try:
                worker.conn.send(None)
            except OSError:
                pass
        for worker in self._workers:
            worker.process.join(2)
            if worker.process.is_alive():
                self._kill(worker)
        self._workers = []

    def __enter__(self) -> WorkerPool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _death(exitcode: int | None) -> str:
    if exitcode is not None and exitcode < 0:
        try:
            name = signal.Signals(-exitcode).name
        except ValueError:
            name = str(-exitcode)
        return f"solver process died ({name}); likely out of memory or a native crash"
    return f"solver process exited unexpectedly (exit code {exitcode})"
