"""Run solver calls in a pool of worker processes, each call bounded in time and memory.

A call that overruns its deadline has its whole process group killed and the worker replaced, so one
bad program can neither hang nor take down a run. Workers start from a fork server (not from the
possibly threaded parent) that has the target's module preloaded. Each worker holds a few tasks
ahead so it never waits for the parent between tasks; a task's clock starts when the worker reports
starting it. Workers die with the parent (a lifeline pipe and the parent-death signal) and hold
themselves to a CPU-time limit per task, so none outlives a killed run.

The fork server imports from the parent's sys.path, never from the working directory, so workers run
the parent's package, and a worker never runs the parent's main module (a script, stdin, a notebook):
the target and setup are found by module name. A worker that cannot start (its target does not import, its setup check fails)
is no failure of the calls it held: they go to another worker, and when several in a row cannot start,
the pool stops with one PrerequisiteError that says why.
"""

from __future__ import annotations

import ctypes
import importlib
import math
import multiprocessing
import multiprocessing.context
import multiprocessing.forkserver
import multiprocessing.popen_forkserver
import multiprocessing.spawn
import os
import pickle
import resource
import signal
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from multiprocessing import resource_tracker
from multiprocessing.connection import Connection, wait
from typing import Any, Literal

from ..core.errors import PrerequisiteError

Status = Literal["ok", "error", "timeout", "crashed"]

# Tasks held by one worker at a time: the one it runs and the next, already in its pipe.
_DEPTH = 2
# A payload bigger than this is sent only to an idle worker: a full pipe would block the parent,
# which must stay free to enforce deadlines.
_AHEAD_BYTES = 32 * 1024
# CPU seconds a task may use beyond its wall-clock bound before the kernel stops the worker (SIGXCPU).
_CPU_SLACK = 5.0
_PR_SET_PDEATHSIG = 1
# How often a streaming pool looks for newly arrived tasks while its workers are busy.
_POLL = 0.02
# Workers that fail to start, one after another with none starting between, before the pool gives up.
_START_TRIES = 3
# Seconds a new worker has to import its target and pass its setup check; the calls it holds are not
# charged for that time (their clocks start when it is ready).
_START_SECONDS = 120.0
_SERVER_LOCK = threading.Lock()
_LAUNCH_LOCK = threading.Lock()


@dataclass
class SolverCall:
    key: str
    payload: dict[str, Any]
    timeout: float


Fetch = Callable[[float | None], "list[SolverCall] | None"]
# Run once in each new worker, under its limits, before it takes a call: why it cannot run calls, or None.
Setup = Callable[[], "str | None"]


def fixed(tasks: Iterable[SolverCall]) -> Fetch:
    """A Fetch that hands over `tasks` at once, then says there are no more."""
    given = list(tasks)

    def fetch(timeout: float | None) -> list[SolverCall] | None:
        if not given:
            return None
        ready = list(given)
        given.clear()
        return ready

    return fetch


@dataclass
class Outcome:
    key: str
    status: Status
    value: Any = None
    message: str = ""
    seconds: float = 0.0


# What crosses the pipes.
@dataclass
class Ready:
    """The worker imported its target and passed its setup check."""


@dataclass
class Broken:
    reason: str  # why the worker cannot run calls


@dataclass
class Job:
    key: str
    payload: dict[str, Any]
    cpu_seconds: float


@dataclass
class Started:
    key: str


@dataclass
class Finished:
    key: str
    ok: bool
    value: Any  # the target's result when ok, else the error message
    seconds: float


def _resolve(target: str) -> Callable[[dict[str, Any]], Any]:
    module, _, name = target.partition(":")
    func: Callable[[dict[str, Any]], Any] = getattr(importlib.import_module(module), name)
    return func


def _die_with_parent(lifeline: Connection) -> None:
    """Two guards, so a killed run leaves no worker behind: the kernel kills this process when its
    parent, the fork server (which exits when the pool's process dies), goes; and a thread kills the
    worker's whole process group, solver subprocesses included, when the pool's end of the lifeline
    closes, which happens however the pool's process ends, even before the first guard was armed."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    except (OSError, AttributeError):
        pass  # not Linux: the lifeline alone

    def watch() -> None:
        try:
            lifeline.poll(None)  # returns at EOF: nothing is ever written
        finally:
            os.killpg(os.getpid(), signal.SIGKILL)

    threading.Thread(target=watch, daemon=True).start()


_cpu_soft: int | None = None  # the soft CPU limit this worker last set


def _limit_cpu(seconds: float) -> None:
    global _cpu_soft
    used = sum(resource.getrusage(resource.RUSAGE_SELF)[:2])
    soft = math.ceil(used + seconds)
    if soft == _cpu_soft:
        return  # already the limit (it moves by whole seconds; most tasks take milliseconds): two system calls saved
    _, hard = resource.getrlimit(resource.RLIMIT_CPU)
    if hard != resource.RLIM_INFINITY:
        soft = min(soft, hard)
    # Only the soft limit moves: an unprivileged process could never raise a lowered hard limit.
    resource.setrlimit(resource.RLIMIT_CPU, (soft, hard))
    _cpu_soft = soft


def _worker_main(conn: Connection, lifeline: Connection, target: str, memory_mb: int, setup: Setup | None) -> None:
    os.setsid()
    # The bound first: a thread's first allocation makes glibc reserve a 64 MB arena, which, made before
    # the bound, could take a small bound's room (then any allocation fails, at a place that depends on
    # timing); made under it, it falls back to the main arena.
    if memory_mb > 0:
        limit = memory_mb * 1024 * 1024
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    _die_with_parent(lifeline)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))  # SIGXCPU would otherwise dump core
    try:
        func = _resolve(target)
        reason = setup() if setup is not None else None
    except BaseException as exc:  # noqa: BLE001 - the boundary: why this worker cannot start, told to the pool
        reason = f"{type(exc).__name__}: {exc}"
    if reason is not None:
        conn.send(Broken(reason))
        return
    conn.send(Ready())
    while True:
        # A job already waiting starts the moment the one before it finished, which is when the pool
        # restarted its clock (on Finished, or Ready); only a job the worker waited for says Started.
        # Half the messages, for the many calls of a few milliseconds.
        waited = not conn.poll()
        try:
            job: Job | None = pickle.loads(conn.recv_bytes())
        except EOFError:
            return
        if job is None:
            return
        if waited:
            conn.send(Started(job.key))
        _limit_cpu(job.cpu_seconds)
        start = time.perf_counter()
        try:
            value = func(job.payload)
            finished = Finished(job.key, True, value, time.perf_counter() - start)
        except MemoryError:
            finished = Finished(job.key, False, f"memory limit of {memory_mb} MB exceeded",
                                time.perf_counter() - start)
        except BaseException as exc:  # noqa: BLE001 - the boundary: every failure becomes a message
            finished = Finished(job.key, False, f"{type(exc).__name__}: {exc}", time.perf_counter() - start)
        conn.send(finished)


@dataclass
class _Sent:
    task: SolverCall
    data: bytes  # the pickled Job


@dataclass
class _Worker:
    process: Any
    conn: Connection
    queue: deque[_Sent]
    clock: float = 0.0  # when the task at the head of the queue started (or became the head)
    ready: bool = False  # it said Ready: it imported its target and passed the setup check


class WorkerPool:
    """`target` is "module:function"; the function takes a payload dict and returns picklable data.

    `preload` names modules the fork server imports once for all workers (default: the target's);
    `setup` runs in each new worker before it takes a call (a solver's prerequisites, checked there)."""

    def __init__(self, target: str, workers: int = 1, memory_mb: int = 2048, preload: list[str] | None = None,
                 setup: Setup | None = None):
        self.target = target
        self.size = max(1, workers)
        self.memory_mb = memory_mb
        self.setup = setup
        self._ctx = multiprocessing.get_context("forkserver")
        _set_preload(preload or [target.partition(":")[0]])
        self._failed_starts = 0  # workers that could not start since one last did
        self._workers: list[_Worker] = []
        self._lifeline: tuple[Connection, Connection] | None = None  # (workers' end, the pool's end)

    @property
    def pids(self) -> list[int]:
        return [w.process.pid for w in self._workers]

    def _spawn(self) -> _Worker:
        if self._lifeline is None:
            self._lifeline = self._ctx.Pipe(duplex=False)
        parent, child = self._ctx.Pipe()
        process = _WorkerProcess(target=_worker_main, daemon=True,
                                 args=(child, self._lifeline[0], self.target, self.memory_mb, self.setup))
        _start_server()
        process.start()
        child.close()
        return _Worker(process, parent, deque())

    def _kill(self, worker: _Worker) -> None:
        try:
            os.killpg(worker.process.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            worker.process.kill()
        worker.process.join(5)
        worker.conn.close()

    def start(self, count: int) -> None:
        """Start workers for `count` calls now (up to the pool's size), so that they have loaded their
        solver by the time the calls come; a worker that cannot start says so when it is given one."""
        while len(self._workers) < min(self.size, count):
            self._workers.append(self._spawn())

    def map(self, tasks: Iterable[SolverCall]) -> Iterator[Outcome]:
        """Yield one Outcome per task, in completion order."""
        return self.stream(fixed(tasks))

    def stream(self, fetch: Fetch) -> Iterator[Outcome]:
        """Yield one Outcome per task while tasks keep arriving: `fetch(timeout)` returns the tasks that
        became ready (waiting up to `timeout` seconds, or for ever when None; [] if none yet), or None
        once no more will come. Workers never wait for the parent while it has tasks to give."""
        pending: deque[_Sent] = deque()
        open_ = True
        while True:
            busy = [w for w in self._workers if w.queue]
            if open_:
                wait_for = None if not (pending or busy) else 0.0
                ready = fetch(wait_for)
                if ready is None:
                    open_ = False
                else:
                    pending.extend(_Sent(t, pickle.dumps(Job(t.key, t.payload, t.timeout + _CPU_SLACK)))
                                   for t in ready)
            if not pending and not busy:
                if open_:
                    continue
                return
            while len(self._workers) < min(self.size, len(pending) + len(busy)):
                self._workers.append(self._spawn())
            for worker in self._workers:
                self._feed(worker, pending)
            busy = [w for w in self._workers if w.queue]
            if not busy:  # every send failed (workers died): they are replaced on the next pass
                continue
            next_deadline = min(w.clock + self._allowed(w) for w in busy)
            timeout = max(0.0, next_deadline - time.monotonic())
            if open_:  # look for newly arrived tasks now and then
                timeout = min(timeout, _POLL)
            ready_conns = wait([w.conn for w in busy], timeout=timeout)
            for index, worker in enumerate(list(self._workers)):
                if worker.queue:
                    yield from self._collect(index, worker, worker.conn in ready_conns, pending)

    def _feed(self, worker: _Worker, pending: deque[_Sent]) -> None:
        if pending and not worker.queue and not worker.process.is_alive():
            # Killed from outside while idle: nothing of its own to report, a fresh worker takes over.
            worker = self._replace(self._workers.index(worker), pending)
        while pending and len(worker.queue) < _DEPTH:
            if worker.queue and len(pending[0].data) > _AHEAD_BYTES:
                return
            sent = pending.popleft()
            try:
                worker.conn.send_bytes(sent.data)
            except OSError:  # it died mid-task; _collect reports that from the closed pipe
                pending.appendleft(sent)
                return
            if not worker.queue:
                worker.clock = time.monotonic()
            worker.queue.append(sent)

    def _collect(self, index: int, worker: _Worker, ready: bool, pending: deque[_Sent]) -> Iterator[Outcome]:
        """Outcomes of what this worker has to say; a dead or overdue worker is replaced and the tasks
        queued behind its current one go back to the front of `pending`."""
        try:
            while ready and worker.queue and worker.conn.poll():
                message = worker.conn.recv()
                head = worker.queue[0].task
                if isinstance(message, Ready):
                    worker.ready, worker.clock, self._failed_starts = True, time.monotonic(), 0
                elif isinstance(message, Broken):
                    self._not_started(index, pending, message.reason)
                    return
                elif isinstance(message, Started) and message.key == head.key:
                    worker.clock = time.monotonic()
                elif isinstance(message, Finished) and message.key == head.key:
                    worker.queue.popleft()
                    worker.clock = time.monotonic()
                    if message.ok:
                        yield Outcome(head.key, "ok", value=message.value, seconds=message.seconds)
                    else:
                        yield Outcome(head.key, "error", message=message.value, seconds=message.seconds)
        except (EOFError, OSError):
            if not worker.ready:
                self._not_started(index, pending, None)
                return
            head = worker.queue.popleft().task
            elapsed = time.monotonic() - worker.clock
            self._replace(index, pending)
            code = worker.process.exitcode  # known now: _replace reaped it
            if code == -signal.SIGXCPU:
                limit = head.timeout + _CPU_SLACK
                yield Outcome(head.key, "timeout", message=f"CPU time limit of {limit:g} s exceeded", seconds=elapsed)
            else:
                yield Outcome(head.key, "crashed", message=_death(code), seconds=elapsed)
            return
        if worker.queue:
            head = worker.queue[0].task
            elapsed = time.monotonic() - worker.clock
            if elapsed >= self._allowed(worker) and not worker.ready:
                self._not_started(index, pending, f"a solver worker did not start within {_START_SECONDS:g} s")
            elif elapsed >= head.timeout:
                worker.queue.popleft()
                self._replace(index, pending)
                yield Outcome(head.key, "timeout", message=f"no result within {head.timeout:g} s", seconds=elapsed)

    @staticmethod
    def _allowed(worker: _Worker) -> float:
        """Seconds from the worker's clock to its deadline: its head task's bound once it is ready."""
        return worker.queue[0].task.timeout if worker.ready else _START_SECONDS

    def _not_started(self, index: int, pending: deque[_Sent], reason: str | None) -> None:
        """The worker at `index` could not start, so the calls it held are not to blame: they go back to
        `pending` for a fresh worker. When _START_TRIES in a row could not, none will: PrerequisiteError
        naming the reason (None: the worker died before it could say; the exit code says how)."""
        worker = self._workers[index]
        self._kill(worker)
        if reason is None:
            reason = (f"{_death(worker.process.exitcode)} before it ran any program; its error is printed "
                      "above")
        self._failed_starts += 1
        if self._failed_starts >= _START_TRIES:
            raise PrerequisiteError(f"solver workers cannot start: {reason}")
        pending.extendleft(reversed(worker.queue))
        self._workers[index] = self._spawn()

    def _replace(self, index: int, pending: deque[_Sent]) -> _Worker:
        """Kill the worker at `index` and start a fresh one; the tasks it still held go back to the
        front of `pending`."""
        worker = self._workers[index]
        self._kill(worker)
        pending.extendleft(reversed(worker.queue))
        self._workers[index] = self._spawn()
        return self._workers[index]

    def close(self) -> None:
        for worker in self._workers:
            try:
                worker.conn.send_bytes(pickle.dumps(None))
            except OSError:
                pass
        for worker in self._workers:
            worker.process.join(2)
            if worker.process.is_alive():
                self._kill(worker)
        self._workers = []
        if self._lifeline is not None:
            for end in self._lifeline:
                end.close()
            self._lifeline = None

    def __enter__(self) -> WorkerPool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


_PREPARATION = multiprocessing.spawn.get_preparation_data


def _without_main(name: str) -> dict[str, Any]:
    data: dict[str, Any] = _PREPARATION(name)
    data.pop("init_main_from_path", None)
    data.pop("init_main_from_name", None)
    return data


class _Popen(multiprocessing.popen_forkserver.Popen):
    """Python makes each new process run the parent's main module first (as `__mp_main__`), so that
    functions defined there unpickle. A worker needs none of it: its target and setup are found by
    module name. Run, the main module would re-run a user's script (a run inside every worker, where
    the script has no `if __name__ == "__main__":`), and a script fed on stdin or `python -c` cannot
    be re-run at all (`<stdin>` is no file): every worker would die on start. So the parent leaves the
    main module out of what it sends, for this pool's workers only, while it launches one."""

    def _launch(self, process_obj: Any) -> None:
        with _LAUNCH_LOCK:
            multiprocessing.spawn.get_preparation_data = _without_main
            try:
                super()._launch(process_obj)  # type: ignore[misc]
            finally:
                multiprocessing.spawn.get_preparation_data = _PREPARATION


class _WorkerProcess(multiprocessing.context.ForkServerProcess):
    @staticmethod
    def _Popen(process_obj: Any) -> Any:
        return _Popen(process_obj)


def start_early(preload: list[str]) -> None:
    """Start this process's fork server now, importing `preload`, so that it loads them while this
    process goes on (the command line: its own imports, reading the data) and the first pool finds it
    ready. A later pool's preload then has no effect: the server is already running. The `logicpipe`
    command's start, which calls this, runs no resource tracker (_no_resource_tracker says why)."""
    _set_preload(preload)
    _no_resource_tracker()
    _start_server()


def _no_resource_tracker() -> None:
    """Python starts a fork server together with a resource tracker: a third Python process (some 40 ms
    of CPU, while the command and the fork server load on two cores) that unlinks the named semaphores
    and shared memory a crashed process leaves. The pool shares only pipes, so the tracker would watch
    nothing; it is pointed at /dev/null instead of started, which it takes as running. Through private
    names of multiprocessing (3.10-3.13): where they differ, the tracker starts as before. A solver
    plugin that makes semaphores in a worker has them removed as usual when it ends, not after a kill."""
    tracker = getattr(resource_tracker, "_resource_tracker", None)
    if tracker is not None and getattr(tracker, "_fd", 0) is None and hasattr(tracker, "_check_alive"):
        tracker._fd = os.open(os.devnull, os.O_WRONLY)


def _set_preload(modules: list[str]) -> None:
    """Takes effect when this process starts its fork server, i.e. for its first pool; the server then
    lives as long as the process. The main module is not among them, and no worker runs it (_Popen
    says why). Before
    Python 3.11 the server cannot be kept off the working directory (no PYTHONSAFEPATH), so it preloads
    nothing there: each worker then imports from the parent's path, more slowly."""
    wanted = modules if sys.version_info >= (3, 11) else []
    multiprocessing.get_context("forkserver").set_forkserver_preload(wanted)


def _start_server() -> None:
    """Start this process's fork server if it is not running, importing from the parent's sys.path.
    Python starts it with `-c`, which puts the working directory first on its path: a folder there
    named like a package (a `logicpipe/` checkout, a `z3/` folder) would replace the parent's package
    in every worker. PYTHONSAFEPATH keeps the working directory off; PYTHONPATH gives the parent's path.
    The variables are set only while the server starts (it keeps them; its workers inherit them)."""
    if sys.version_info < (3, 11):
        return
    with _SERVER_LOCK:
        wanted = {"PYTHONSAFEPATH": "1", "PYTHONPATH": os.pathsep.join(os.path.abspath(p) for p in sys.path)}
        saved = {key: os.environ.get(key) for key in wanted}
        os.environ.update(wanted)
        try:
            multiprocessing.forkserver.ensure_running()
        finally:
            for key, value in saved.items():
                if value is None:
                    os.environ.pop(key, None)
                else:
                    os.environ[key] = value


def _death(exitcode: int | None) -> str:
    if exitcode is not None and exitcode < 0:
        try:
            name = signal.Signals(-exitcode).name
        except ValueError:
            name = str(-exitcode)
        return f"solver process died ({name}); likely out of memory or a native crash"
    return f"solver process exited unexpectedly (exit code {exitcode})"
