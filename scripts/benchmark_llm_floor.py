"""The model-bound run (issue 41): `logicpipe run` of ProntoQA's dev set against an independent
OpenAI-compatible server (its own process on 127.0.0.1) that answers each formulate request with the
released gpt-4 program after a fixed delay; --max-rounds 0, 2 solver workers. Printed side by side per
setting: the floor ceil(N / in-flight) x latency, the run's wall time (the whole command, start-up
included), floor / wall (1.0: the run is as fast as the server lets it be; the goal is at least 0.85 at
2 s and 64 in flight), and requests a second. With --rate-limit N the server answers 429 beyond N
requests in flight, and the limit the run's adaptive concurrency settled at is printed too.

To measure another checkout (the code before a change), run this file with PYTHONPATH=that checkout:
the run then imports its logicpipe (the server is always this checkout's, so both runs face the same one).

usage: python scripts/benchmark_llm_floor.py [--problems 500] [--latency 2,0] [--concurrency 64]
                                             [--workers 2] [--repeat 1] [--rate-limit N]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from shared_data import use_shared_data

ROOT = Path(__file__).resolve().parent.parent

SERVER = """
import sys, threading
from logicpipe.data import resolve_file
from logicpipe.testing import FakeOpenAI, ScriptedReplies
replies = ScriptedReplies.from_logic_lm(resolve_file("programs/ProntoQA_dev_gpt-4.json", None))
extra = {"max_in_flight": int(sys.argv[2])} if int(sys.argv[2]) else {}
with FakeOpenAI(replies, latency=float(sys.argv[1]), **extra) as fake:
    print(fake.url, flush=True)
    sys.stdin.read()
"""


def serve(latency: float, rate_limit: int) -> tuple[subprocess.Popen, str]:
    # The server is always this checkout's (the run may be another's, through PYTHONPATH).
    server = subprocess.Popen([sys.executable, "-c", SERVER, str(latency), str(rate_limit)], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True, env={**os.environ, "PYTHONPATH": str(ROOT)},
                              cwd=ROOT)
    assert server.stdout is not None
    return server, server.stdout.readline().strip()


def one_run(url: str, args: argparse.Namespace, concurrency: int, out: Path) -> tuple[float, str]:
    command = [sys.executable, "-m", "logicpipe", "run", "-d", "prontoqa", "-n", str(args.problems),
               "--model", "scripted", "--base-url", url, "--max-rounds", "0", "-w", str(args.workers),
               "--max-concurrency", str(concurrency), "--out", str(out), "--llm-cache", str(out / "cache.sqlite")]
    start = time.perf_counter()
    # Run from the run's folder: `python -m` puts the working folder first on sys.path, before PYTHONPATH.
    done = subprocess.run(command, capture_output=True, text=True, cwd=out,
                          env={**os.environ, "OPENAI_API_KEY": "x"})
    wall = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"the run failed ({done.returncode}): {done.stderr[-2000:]}")
    metrics = json.loads((out / "prontoqa" / "metrics.json").read_text())
    failed = metrics["failures"].get("llm", 0)
    if failed:
        print(f"  {failed} problems failed for the model")
    settled = re.search(r"settled at (\d+) of --max-concurrency \d+ \(lowest (\d+)\) after (\d+)", done.stdout)
    return wall, (f"{settled[1]} (low {settled[2]}, {settled[3]}x)" if settled else "-")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--problems", type=int, default=500)
    parser.add_argument("--latency", default="2,0")
    parser.add_argument("--concurrency", default="64")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--repeat", type=int, default=1, help="runs per setting; the fastest is shown")
    parser.add_argument("--rate-limit", type=int, default=0, help="the server answers 429 beyond this many in flight")
    args = parser.parse_args()
    use_shared_data()
    with tempfile.TemporaryDirectory() as where:
        measured = subprocess.run([sys.executable, "-c", "import logicpipe; print(logicpipe.__file__)"], cwd=where,
                                  capture_output=True, text=True).stdout.strip()
    print(f"ProntoQA dev, {args.problems} problems, --max-rounds 0, {args.workers} workers, "
          f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs; the run's code: {measured}")
    print(f"{'latency s':>10}{'in flight':>10}{'floor s':>9}{'wall s':>9}{'floor/wall':>11}{'req/s':>8}"
          f"{'settled':>22}")
    for latency in [float(x) for x in args.latency.split(",")]:
        server, url = serve(latency, args.rate_limit)
        try:
            for concurrency in [int(c) for c in args.concurrency.split(",")]:
                limit = min(concurrency, args.rate_limit) if args.rate_limit else concurrency
                floor = math.ceil(args.problems / limit) * latency
                best, settled = math.inf, "-"
                for _ in range(args.repeat):
                    with tempfile.TemporaryDirectory() as out:
                        wall, settled = one_run(url, args, concurrency, Path(out))
                    best = min(best, wall)
                ratio = f"{floor / best:.2f}" if floor else "-"
                print(f"{latency:>10g}{concurrency:>10}{floor:>9.2f}{best:>9.2f}{ratio:>11}"
                      f"{args.problems / best:>8.0f}{settled:>22}", flush=True)
        finally:
            assert server.stdin is not None
            server.stdin.close()
            server.wait(timeout=30)


if __name__ == "__main__":
    main()
