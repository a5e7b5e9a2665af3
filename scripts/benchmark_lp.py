"""LP solver: the long-lived SWI-Prolog engine against a fresh `swipl` per program, in the same run.

Both paths parse and answer every released program of a file in this process (no worker pool), and
must give identical results; the baseline closes the engine after each program, as the solver did
before the engine was kept. Prints programs/second for each, and the CPU seconds spent in Python.

usage: python scripts/benchmark_lp.py [--data-dir DIR] [--models gpt-4,text-davinci-003]
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from shared_data import use_shared_data

from logicpipe.data import resolve_file
from logicpipe.solvers import SolverOutcome, execute_task, lp_prolog


def _fresh_process_each(payload: dict) -> SolverOutcome:
    try:
        return execute_task(payload)
    finally:
        if lp_prolog._engine is not None:
            lp_prolog._engine.close()
            lp_prolog._engine = None


def _measure(programs: list[str], runner) -> tuple[float, float, list[SolverOutcome]]:
    wall, cpu = time.perf_counter(), time.process_time()
    results = [runner({"solver": "lp", "program": text}) for text in programs]
    return time.perf_counter() - wall, time.process_time() - cpu, results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--data-dir", type=Path, default=None)
    parser.add_argument("--models", default="gpt-4")
    args = parser.parse_args()
    use_shared_data()  # a fresh shell finds ../shared/logic-lm as `make` does
    print(f"{'file':<40}{'programs':>9}{'fresh/s':>9}{'engine/s':>10}{'speed-up':>10}{'py cpu ms':>11}")
    for dataset in ("ProntoQA", "ProofWriter"):
        for model in args.models.split(","):
            name = f"{dataset}_dev_{model}.json"
            records = json.loads(resolve_file(f"programs/{name}", args.data_dir).read_text())
            programs = [(r.get("raw_logic_programs") or [""])[0] for r in records]
            execute_task({"solver": "lp", "program": programs[0]})  # start the engine outside the timing
            engine_s, engine_cpu, engine_results = _measure(programs, execute_task)
            fresh_s, _, fresh_results = _measure(programs, _fresh_process_each)
            if engine_results != fresh_results:
                raise SystemExit(f"{name}: the engine and fresh processes disagree")
            count = len(programs)
            print(f"{name:<40}{count:>9}{count / fresh_s:>9.1f}{count / engine_s:>10.1f}"
                  f"{fresh_s / engine_s:>9.1f}x{1000 * engine_cpu / count:>11.2f}")


if __name__ == "__main__":
    main()
