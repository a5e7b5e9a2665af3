"""ASP against its baseline on the same LogicalDeduction problems: our own ASP programs
(tests/solvers/files/asp_logicaldeduction.json) on clingo, beside Logic-LM's released CSP programs for
the same problems on python-constraint2, in-process (no pool), best of --rounds; and the cost of
reading the solver entry points once per process (solvers/registry.py).

    .venv/bin/python scripts/benchmark_asp.py --data-dir /work/shared/logic-lm
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

from shared_data import use_shared_data

from logicpipe.data.loaders import data_root
from logicpipe.solvers import execute_task

ROOT = Path(__file__).resolve().parent.parent
OWN = ROOT / "tests" / "solvers" / "files" / "asp_logicaldeduction.json"


def timed(solver: str, programs: dict[str, str], rounds: int) -> tuple[float, dict[str, str | None]]:
    best, verdicts = float("inf"), {}
    for _ in range(rounds):
        start = time.perf_counter()
        verdicts = {pid: execute_task({"solver": solver, "program": text}).verdict for pid, text in programs.items()}
        best = min(best, time.perf_counter() - start)
    return best, verdicts


def scan_ms() -> float:
    """A fresh process's first read of the entry points (what start-up pays when a solver is asked for)."""
    code = ("import time, importlib.metadata; from logicpipe.solvers import registry; t = time.perf_counter(); "
            "registry.entries(); print((time.perf_counter() - t) * 1000)")
    return float(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", type=Path, default=None)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    use_shared_data()  # a fresh shell finds ../shared/logic-lm as `make` does
    own = {r["id"]: r["raw_logic_programs"][0] for r in json.loads(OWN.read_text())}
    root = data_root(args.data_dir)
    released = {r["id"]: r["raw_logic_programs"][0] for r in
                json.loads((root / "programs" / "LogicalDeduction_dev_gpt-4.json").read_text()) if r["id"] in own}
    gold = {p["id"]: p["answer"] for p in json.loads((root / "data" / "LogicalDeduction" / "dev.json").read_text())}
    timed("asp", own, 1)  # imports clingo and python-constraint outside the clock
    timed("csp", released, 1)
    asp_s, asp_v = timed("asp", own, args.rounds)
    csp_s, csp_v = timed("csp", released, args.rounds)
    right = sum(asp_v[pid] == gold[pid] for pid in own)
    agree = sum(asp_v[pid] == csp_v[pid] for pid in own)
    print(f"{len(own)} LogicalDeduction problems, best of {args.rounds} rounds, in-process")
    print(f"  asp (clingo, own programs):          {asp_s * 1000 / len(own):7.2f} ms a program, {right}/{len(own)} gold")
    print(f"  baseline csp (released programs):    {csp_s * 1000 / len(own):7.2f} ms a program, "
          f"{agree}/{len(own)} verdicts equal to asp")
    scans = sorted(scan_ms() for _ in range(5))
    print(f"entry points read once per process: {scans[2]:.1f} ms (median of 5 processes)")


if __name__ == "__main__":
    main()
