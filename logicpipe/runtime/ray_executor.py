"""Solver calls as Ray tasks, one CPU each. A task hands its call to a one-process isolation pool on the
worker, so the time and memory bounds of the local pool hold on every node and a hang or crash in a
solver kills only that call. The driver collects outcomes as they finish; only it writes stage files."""

from __future__ import annotations

import logging
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from ..core.errors import PrerequisiteError, UsageError
from .executor import Finished, check_solver
from .pool import Fetch, Outcome, SolverCall, WorkerPool, fixed

INSTALL = "pip install 'logicpipe[ray]'"
# A call whose Ray worker or node dies is run again this many times, then recorded as crashed.
RETRIES = 2
LOOPBACK_SWITCH = "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"
# Seconds that joining a cluster may take before the run stops with one line (--ray-connect-timeout).
CONNECT_TIMEOUT = 30.0
# Outcomes fetched per wait: large enough that the driver keeps up with many nodes.
BATCH = 64

# One isolation pool per Ray worker process, kept between tasks so each call pays no process start.
_pools: dict[tuple[str, int], WorkerPool] = {}


def import_ray() -> Any:
    try:
        import ray
    except ImportError:
        raise PrerequisiteError(f"--executor ray needs Ray: {INSTALL}") from None
    return ray


def run_call(target: str, memory_mb: int, task: SolverCall) -> tuple[Outcome, str]:
    """On a Ray worker: run one call in the worker's isolation pool; return its outcome and the node."""
    import ray

    pool = _pools.get((target, memory_mb))
    if pool is None:
        pool = _pools[(target, memory_mb)] = WorkerPool(target, 1, memory_mb)
    outcome = next(iter(pool.map([task])))
    return outcome, ray.get_runtime_context().get_node_id()


def connect(address: str | None, timeout: float = CONNECT_TIMEOUT) -> Any:
    """Join the cluster at `address` (or RAY_ADDRESS), else start a one-machine Ray on 127.0.0.1. Joining
    ends within `timeout` seconds, in one UsageError naming the address when it cannot be reached."""
    address = address or os.environ.get("RAY_ADDRESS") or None
    if address is None:
        # Ray swaps 127.0.0.1 for the machine's outside address and listens there unless this switch
        # (read when ray is imported) is off; a one-machine Ray needs no outside address.
        os.environ.setdefault(LOOPBACK_SWITCH, "0")
    ray = import_ray()
    if ray.is_initialized():
        return ray
    quiet = {"include_dashboard": False, "log_to_driver": False, "logging_level": logging.WARNING}
    if address is None:
        ray.init(address="local", _node_ip_address="127.0.0.1", **quiet)
        return ray
    deadline = time.monotonic() + timeout
    if address not in ("auto", "local"):  # else Ray finds (or starts) the cluster on this machine itself
        _reachable(address, deadline, timeout)
        _answers(address, deadline, timeout)
    _bounded(lambda: ray.init(address=address, **quiet), address, deadline, timeout)
    return ray


def _unreachable(address: str, why: str) -> UsageError:
    return UsageError(f"cannot join the Ray cluster at {address}: {why}; check that its head is running "
                      "(`ray start --head` prints its address) and that this machine can reach that "
                      "host and port (--ray-address, RAY_ADDRESS)")


def _reachable(address: str, deadline: float, timeout: float) -> None:
    """A plain TCP connect first: an address where nothing listens, or a host that never answers, is
    told apart in seconds, before Ray's own connect (which retries for minutes) is started."""
    host, _, port = address.removeprefix("ray://").rpartition(":")
    if not host or not port.isdigit():
        raise UsageError(f"--ray-address {address!r} is not host:port, e.g. 127.0.0.1:6379")
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=max(0.1, deadline - time.monotonic())).close()
    except TimeoutError:
        raise _unreachable(address, f"no answer within {timeout:g} s (--ray-connect-timeout)") from None
    except OSError as exc:
        raise _unreachable(address, exc.strerror or str(exc)) from None


# Ray's own client, asked for the cluster's id in a child process: Ray logs a dozen lines to stderr while
# it retries (from C++, before any log level of ours applies), and the child's are shown only on request.
_ASK = "import sys\nfrom ray._raylet import GcsClient\nGcsClient(address=sys.argv[1]).cluster_id\n"


def _answers(address: str, deadline: float, timeout: float) -> None:
    """Whether a Ray cluster answers at `address`, asked by a child process killed at the deadline;
    LOGICPIPE_DEBUG=1 shows what Ray logged while it tried."""
    if address.startswith("ray://"):
        return  # a Ray Client server, which ray.init alone speaks to
    shown = bool(os.environ.get("LOGICPIPE_DEBUG"))
    try:
        asked = subprocess.run([sys.executable, "-c", _ASK, address], stdin=subprocess.DEVNULL,
                               stdout=subprocess.DEVNULL, stderr=None if shown else subprocess.PIPE,
                               text=True, timeout=max(0.1, deadline - time.monotonic()))
    except subprocess.TimeoutExpired:
        raise _unreachable(address, f"no Ray cluster answered within {timeout:g} s (--ray-connect-timeout)") from None
    if asked.returncode != 0:
        lines = [line for line in (asked.stderr or "").splitlines() if line.strip()]
        raise _unreachable(address, f"no Ray cluster answered ({lines[-1].strip() if lines else 'no reason given'})")


def _bounded(init: Callable[[], object], address: str, deadline: float, timeout: float) -> None:
    """ray.init takes no deadline (it retries its connect for minutes), so it runs in a daemon thread
    that this one stops waiting for at the deadline; the process then ends with the error."""
    failure: list[BaseException] = []

    def attempt() -> None:
        try:
            init()
        except BaseException as exc:  # noqa: BLE001 - handed to the waiting thread
            failure.append(exc)

    thread = threading.Thread(target=attempt, name="ray-connect", daemon=True)
    thread.start()
    thread.join(max(0.0, deadline - time.monotonic()))
    if thread.is_alive():
        raise _unreachable(address, f"no Ray cluster answered within {timeout:g} s (--ray-connect-timeout)")
    if failure:
        first = (str(failure[0]).strip().splitlines() or [type(failure[0]).__name__])[0]
        raise _unreachable(address, f"{type(failure[0]).__name__}: {first}")


class RayExecutor:
    def __init__(self, target: str, memory_mb: int, address: str | None = None, retries: int = RETRIES,
                 connect_timeout: float = CONNECT_TIMEOUT):
        self.ray = connect(address, connect_timeout)
        self.target, self.memory_mb, self.retries = target, memory_mb, retries
        # SPREAD: Ray's default policy fills the driver's node first and spills over late, so on 2 nodes of
        # 1 CPU, 32 calls of 0.25 s split 2:1 and ran 1.6x faster than on 1 node; spread evenly, 1.95x.
        self.remote = self.ray.remote(num_cpus=1, max_retries=retries, retry_exceptions=True,
                                      scheduling_strategy="SPREAD")(run_call)
        self._pending: dict[Any, tuple[SolverCall, float]] = {}

    def check(self, solver: str) -> None:
        """Check the solver once on every node with CPUs; name each node where it is missing."""
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        checker = self.ray.remote(num_cpus=0)(check_solver)
        nodes = [n for n in self.ray.nodes() if n["Alive"] and n["Resources"].get("CPU", 0) > 0]
        refs = [checker.options(scheduling_strategy=NodeAffinitySchedulingStrategy(n["NodeID"], soft=False))
                .remote(solver) for n in nodes]
        problems = [f"node {n['NodeID']} ({n['NodeManagerAddress']}): {why}"
                    for n, why in zip(nodes, self.ray.get(refs)) if why is not None]
        if problems:
            raise PrerequisiteError(f"solver '{solver}' cannot run on {len(problems)} of {len(nodes)} Ray "
                                    f"nodes; install it there: " + "; ".join(problems))

    def warm(self, count: int) -> None:
        """Nothing to do: the cluster's workers are running."""

    def map(self, tasks: Iterable[SolverCall]) -> Iterator[Finished]:
        return self.stream(fixed(tasks))

    def stream(self, fetch: Fetch) -> Iterator[Finished]:
        open_ = True
        while open_ or self._pending:
            if open_:
                arrived = fetch(0.0 if self._pending else None)
                if arrived is None:
                    open_ = False
                for task in arrived or []:
                    self._pending[self.remote.remote(self.target, self.memory_mb, task)] = (task, time.monotonic())
            if not self._pending:
                continue
            waiting = list(self._pending)
            ready, _ = self.ray.wait(waiting, num_returns=min(BATCH, len(waiting)), timeout=0.05 if open_ else 0.2)
            for ref in ready:
                task, submitted = self._pending.pop(ref)
                try:
                    outcome, node = self.ray.get(ref)
                except self.ray.exceptions.RayError as exc:
                    message = f"Ray worker failed {self.retries + 1} times: {_first_line(exc)}"
                    yield Finished(Outcome(task.key, "crashed", message=message,
                                           seconds=time.monotonic() - submitted))
                    continue
                yield Finished(outcome, node)

    def close(self) -> None:
        # Calls still queued or running when the driver stops (Ctrl-C, an error) are not left on the cluster.
        for ref in self._pending:
            self.ray.cancel(ref, force=True)
        self._pending.clear()

    def __enter__(self) -> RayExecutor:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _first_line(exc: BaseException) -> str:
    cause = getattr(exc, "cause", None)  # a RayTaskError wraps what the task raised
    if isinstance(cause, BaseException):
        return f"{type(cause).__name__}: {cause}".splitlines()[0]
    lines = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {lines[0] if lines else ''}"
