"""Time the solve stage on every released gpt-4 program file: the solver alone, in this process, in
a loop (the floor), then the same tasks through the worker pool at 1 and 2 workers, whose workers have
started. Prints problems/second and pool time / floor time per dataset, and checks the pool returned
what the solver did in-process.

usage: python scripts/benchmark.py [--data-dir DIR] [--datasets ld,folio,...] [--workers 1,2] [--limit N]
                                  [--rounds 2]
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from shared_data import use_shared_data

from logicpipe.data import DatasetSpec, get_dataset, resolve_file
from logicpipe.data.loaders import data_root
from logicpipe.runtime.pool import SolverCall, WorkerPool
from logicpipe.solvers import SolverOutcome, execute_task, loaded_solver, pyexpr

TARGET = "logicpipe.solvers:execute_task"
MEMORY_MB = 2048


def released(data_dir: Path | None, wanted: str | None, model: str) -> list[tuple[DatasetSpec, Path]]:
    if wanted:
        specs = [get_dataset(name) for name in wanted.split(",")]
        return [(s, resolve_file(f"programs/{s.name}_dev_{model}.json", data_dir)) for s in specs]
    root = data_root(data_dir)
    if root is None:
        raise SystemExit("give --data-dir or set LOGICPIPE_DATA to the Logic-LM data directory")
    files = sorted((root / "programs").glob(f"*_dev_{model}.json"))
    return [(get_dataset(f.name.split("_dev_")[0]), f) for f in files]


def tasks_for(spec: DatasetSpec, path: Path, limit: int | None) -> list[SolverCall]:
    """One task per problem with a program, exactly as the solve stage builds them."""
    tasks = []
    for record in json.loads(path.read_text())[:limit]:
        programs = record.get("raw_logic_programs") or []
        if programs and programs[0]:
            payload = {"solver": spec.solver, "program": programs[0],
                       "limits": {"seconds": spec.timeout, "memory_mb": MEMORY_MB}}
            tasks.append(SolverCall(record["id"], payload, spec.timeout * 1.5 + 5))
    return tasks


def floor(tasks: list[SolverCall]) -> tuple[float, dict[str, object]]:
    results: dict[str, object] = {}
    # Each pool's worker starts with no expression parsed; so does each round of the floor.
    pyexpr._PARSED.clear()
    start = time.perf_counter()
    for task in tasks:
        try:
            results[task.key] = execute_task(task.payload)
        except Exception:  # noqa: BLE001 - as in a worker: a solver's stray exception is an error outcome
            results[task.key] = "error"
    return time.perf_counter() - start, results


def pooled(tasks: list[SolverCall], workers: int) -> tuple[float, dict[str, object]]:
    with WorkerPool(TARGET, workers, MEMORY_MB) as pool:
        # The workers start (and load their solver) on a first call each, untimed: start-up is shown
        # apart, and a row is the per-problem cost.
        list(pool.map(tasks[:workers]))
        start = time.perf_counter()
        results = {o.key: o.value if o.status == "ok" else o.status for o in pool.map(tasks)}
        seconds = time.perf_counter() - start
    return seconds, results


def verdicts(results: dict[str, object]) -> dict[str, object]:
    # Explanations may hold timings; the verdict or error category is what must agree.
    return {key: _verdict(value) for key, value in results.items()}


def _verdict(value: object) -> object:
    if isinstance(value, SolverOutcome):
        return value.verdict or (value.error.category.value if value.error else "?")
    return value


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--data-dir", type=Path, default=None)
    parser.add_argument("--datasets", default=None, help="default: every released file for --model")
    parser.add_argument("--workers", default="1,2")
    parser.add_argument("--model", default="gpt-4")
    parser.add_argument("--limit", type=int, default=None, help="first N problems of each file")
    parser.add_argument("--rounds", type=int, default=2, help="report the best of this many rounds")
    args = parser.parse_args()
    use_shared_data()  # a fresh shell finds ../shared/logic-lm as `make` does
    counts = [int(w) for w in args.workers.split(",")]
    work = [(spec, tasks_for(spec, path, args.limit)) for spec, path in released(args.data_dir, args.datasets, args.model)]
    start = time.perf_counter()
    with WorkerPool(TARGET, 1, MEMORY_MB) as pool:
        list(pool.map(work[0][1][:1]))
    # Paid once per process (the fork server outlives pools), so it is shown apart, not in any row; a
    # pool's own workers start on an untimed first call (pooled).
    print(f"fork server start-up and first task: {time.perf_counter() - start:.2f} s")
    print(f"{'dataset':<18}{'solver':>7}{'problems':>9}{'floor p/s':>11}"
          + "".join(f"{f'{n}w p/s':>9}{f'{n}w/floor':>10}" for n in counts) + f"{'agree':>7}")
    for spec, tasks in work:
        loaded_solver(spec.solver)  # imports the solver's library, so the floor does not pay for it
        # Best of several rounds, each timing the floor and every pool size in turn, so a burst of
        # load from elsewhere on the machine cannot make one column look better than another.
        best: dict[str, float] = {}
        agree = True
        for _ in range(args.rounds):
            floor_s, expected = floor(tasks)
            best["floor"] = min(best.get("floor", floor_s), floor_s)
            for n in counts:
                seconds, got = pooled(tasks, n)
                best[f"{n}w"] = min(best.get(f"{n}w", seconds), seconds)
                agree = agree and verdicts(got) == verdicts(expected)
        row = f"{spec.key:<18}{spec.solver:>7}{len(tasks):>9}{len(tasks) / best['floor']:>11.1f}"
        for n in counts:
            row += f"{len(tasks) / best[f'{n}w']:>9.1f}{best[f'{n}w'] / best['floor']:>9.2f}x"
        print(row + f"{'yes' if agree else 'NO':>7}", flush=True)


if __name__ == "__main__":
    main()
