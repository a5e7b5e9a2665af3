"""Ray's cost and gain. Two parts:

sizes: throughput of the local pool and of Ray on one node with 2 CPUs, over solver calls of growing
size; Ray's overhead per call, and the call size from which Ray stops costing more than it saves. A CSP
program whose domain has SIZE values costs time that grows with SIZE. Both executors run the same calls
with 2 slots (2 local workers; Ray on 127.0.0.1 with num_cpus=2), so on one node Ray can only add
overhead.

nodes: the same work on a Ray cluster of 1 node and of 2 nodes (1 CPU each), every node in its own
network namespace (logicpipe/testing/netns.py; needs root), the driver in the head's namespace joining
by address as `--ray-address` does. Two kinds of call: a fixed latency (logicpipe/testing/latency.py: a
call that waits, as on a remote service; not bounded by this machine's cores) and a CSP call of fixed
CPU cost (bounded by the cores the nodes share here: on separate machines each node brings its own).
Prints calls per second per configuration and the speed-up per node.

usage: python scripts/benchmark_ray.py [--part sizes|nodes|all] [--sizes 100,3000,10000,30000] [--calls 12]
       [--node-calls 40] [--latency 0.25] [--cpu-size 60000]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

from logicpipe.runtime import LocalExecutor
from logicpipe.runtime.pool import SolverCall
from logicpipe.runtime.ray_executor import LOOPBACK_SWITCH, RayExecutor

TARGET = "logicpipe.solvers:execute_task"
WAIT = "logicpipe.testing.latency:wait"
SLOTS = 2
ROOT = Path(__file__).resolve().parent.parent


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


def sizes(args: argparse.Namespace) -> None:
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


def calls(kind: str, count: int, latency: float, cpu_size: int) -> list[SolverCall]:
    if kind == "latency":
        return [SolverCall(f"w{i}", {"seconds": latency}, 600) for i in range(count)]
    return [SolverCall(f"c{i}", {"solver": "csp", "program": program(cpu_size), "limits": {"seconds": 600}}, 900)
            for i in range(count)]


def drive(args: argparse.Namespace) -> None:
    """Inside the head's namespace: join the cluster, warm every node, time the calls; print JSON."""
    results = {}
    for kind, target in (("latency", WAIT), ("cpu", TARGET)):
        with RayExecutor(target, 2048, address=args.drive) as executor:
            list(executor.map(calls(kind, 4, 0.5, 10)))  # start a worker and its pool on each node
            start = time.monotonic()
            finished = list(executor.map(calls(kind, args.node_calls, args.latency, args.cpu_size)))
            seconds = time.monotonic() - start
        failed = [f.outcome for f in finished if f.outcome.status != "ok"]
        if failed:
            raise SystemExit(f"{kind}: {len(failed)} calls failed, first: {failed[0]}")
        split = sorted(Counter(f.node for f in finished).values(), reverse=True)
        results[kind] = {"seconds": seconds, "split": "/".join(map(str, split))}
    print(json.dumps(results))


def nodes(args: argparse.Namespace) -> None:
    from logicpipe.testing import netns

    why = netns.unavailable()
    if why is not None:
        print(f"nodes: skipped, {why}")
        return
    measured: dict[int, dict] = {}
    for count in (1, 2):
        with netns.Cluster(nodes=count, num_cpus=1) as cluster:
            argv = cluster.command(0, sys.executable, str(Path(__file__).resolve()), "--drive", cluster.head_address,
                                   "--node-calls", str(args.node_calls), "--latency", str(args.latency),
                                   "--cpu-size", str(args.cpu_size))
            done = subprocess.run(argv, cwd=ROOT, env=cluster.env, capture_output=True, text=True, timeout=900)
            if done.returncode != 0:
                raise SystemExit(f"the driver on {count} node(s) failed: {done.stderr.strip()[-2000:]}")
            measured[count] = json.loads(done.stdout.strip().splitlines()[-1])
    print(f"{args.node_calls} calls per configuration, 1 CPU per node; latency calls wait {args.latency} s, "
          f"cpu calls are CSP size {args.cpu_size}")
    print(f"{'kind':<9}{'nodes':>6}{'calls/node':>11}{'seconds':>9}{'calls/s':>9}{'speed-up':>10}{'per node':>10}")
    for kind in ("latency", "cpu"):
        one = measured[1][kind]["seconds"]
        for count in (1, 2):
            row = measured[count][kind]
            gain = one / row["seconds"]
            print(f"{kind:<9}{count:>6}{row['split']:>11}{row['seconds']:>9.2f}{args.node_calls / row['seconds']:>9.2f}"
                  f"{gain:>9.2f}x{gain / count:>9.2f}x")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--part", choices=("sizes", "nodes", "all"), default="all")
    parser.add_argument("--sizes", default="100,3000,10000,30000")
    parser.add_argument("--calls", type=int, default=12)
    parser.add_argument("--node-calls", type=int, default=40)
    parser.add_argument("--latency", type=float, default=0.25)
    parser.add_argument("--cpu-size", type=int, default=60000)
    parser.add_argument("--drive", metavar="ADDRESS", help=argparse.SUPPRESS)  # the nodes part's driver
    args = parser.parse_args()
    if args.drive:
        drive(args)
        return
    if args.part in ("sizes", "all"):
        sizes(args)
    if args.part in ("nodes", "all"):
        nodes(args)


if __name__ == "__main__":
    main()
