"""Throughput of the local pool and of Ray on one node with 2 CPUs, over solver calls of growing size;
Ray's overhead per call, and the call size from which Ray stops costing more than it saves.

A CSP program whose domain has SIZE values costs time that grows with SIZE. Both executors run the same
calls with 2 slots (2 local workers; Ray on 127.0.0.1 with num_cpus=2), so on one node Ray can only
add overhead. Adding a second equal node halves the time per call and adds the overhead, so Ray pays
from the size where its overhead per call is below the call's own time.

usage: python scripts/benchmark_ray.py [--sizes 100,3000,10000,30000] [--calls 12]
"""

from __future__ import annotations

import argparse
import os
import time

from logicpipe.run import LocalExecutor
from logicpipe.run.pool import SolverCall
from logicpipe.run.ray_executor import LOOPBACK_SWITCH, RayExecutor

TARGET = "logicpipe.solvers:execute_task"
SLOTS = 2


def program(size: int) -> str:
    return f"Variables:\nx [IN] range(0, {size})\nConstraints:\nx > {size - 2}\nQuery:\nA) x == {size - 1}\nB) x == 0\n"


def timed(executor, size: int, calls: int) -> float:
    tasks = [SolverCall(f"c{i}", {"solver": "csp", "program": program(size), "limits": {"seconds": 600}}, 900)
             for i in range(calls)]
    start = time.monotonic()
    verdicts = {f.outcome.value.verdict for f in executor.map(tasks) if f.outcome.status == "ok"}
    seconds = time.monotonic() - start
    if verdicts != {"A"}:
        raise SystemExit(f"size {size}: expected every call to answer A, got {verdicts}")
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", default="100,3000,10000,30000")
    parser.add_argument("--calls", type=int, default=12)
    args = parser.parse_args()
    os.environ.setdefault(LOOPBACK_SWITCH, "0")
    import ray

    ray.init(address="local", num_cpus=SLOTS, include_dashboard=False, _node_ip_address="127.0.0.1",
             log_to_driver=False)
    with LocalExecutor(TARGET, SLOTS, 2048) as local, RayExecutor(TARGET, 2048) as remote:
        timed(local, 10, SLOTS)  # start the processes of both before measuring
        timed(remote, 10, SLOTS)
        print(f"{'size':>8}{'s/call':>9}{'local calls/s':>15}{'ray calls/s':>13}{'ray overhead/call':>19}  2 nodes of Ray")
        pays_from: tuple[int, float] | None = None
        for size in [int(s) for s in args.sizes.split(",")]:
            local_s, ray_s = timed(local, size, args.calls), timed(remote, size, args.calls)
            per_call = local_s * SLOTS / args.calls  # one call's own time
            overhead = (ray_s - local_s) * SLOTS / args.calls
            pays = overhead < per_call
            if pays and pays_from is None:
                pays_from = (size, per_call)
            print(f"{size:>8}{per_call:>9.3f}{args.calls / local_s:>15.2f}{args.calls / ray_s:>13.2f}"
                  f"{overhead:>18.3f}s  {'faster' if pays else 'slower'} than the local pool")
    ray.shutdown()
    if pays_from is None:
        print("Ray's overhead exceeded the call time at every size: keep the local executor for such calls")
    else:
        print(f"Ray stops costing more than it saves from size {pays_from[0]} (calls of {pays_from[1]:.3f} s)")


if __name__ == "__main__":
    main()
