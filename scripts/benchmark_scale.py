"""How a replay scales with the number of problems (issue 30).

For each size, a generated task (three-object ordering puzzles in the constraint formalism, each with
its own names, so no two programs are the same text) and a programs file are replayed through every
stage with `logicpipe run --task ... --programs ...`, as a user would run them. Printed per size:
seconds per problem (the run's wall time over its problems), the peak RSS of the run's own process,
and the times of `evaluate`, `failures` and `view` on the finished run. The smallest size is the
baseline the others are compared with, in the same run. Then the largest run is killed at about 90%
of its solve stage and resumed: the resume's wall time against the full run's shows it redoes only
what was missing.

usage: python scripts/benchmark_scale.py [--sizes 1000,10000] [--large] [--million] [--workers 2]
       --large adds 100,000 problems; --million adds 1,000,000 (about 1 GB of generated files).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from logicpipe.testing.puzzles import generate

ROOT = Path(__file__).resolve().parent.parent

def logicpipe(*args: str) -> list[str]:
    return [sys.executable, "-m", "logicpipe", *args]


def _reap(command: list[str], **kwargs) -> tuple[int, float, float]:
    """Run to the end; (return code, wall seconds, peak RSS MiB of that process alone)."""
    start = time.perf_counter()
    process = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, **kwargs)
    _, status, usage = os.wait4(process.pid, 0)
    process.returncode = os.waitstatus_to_exitcode(status)
    return process.returncode, time.perf_counter() - start, usage.ru_maxrss / 1024


def run_size(size: int, workers: int, scratch: Path) -> dict:
    task, programs = generate(scratch / f"n{size}", size)
    out = scratch / f"run{size}"
    code, wall, peak = _reap(logicpipe("run", "--task", str(task), "--programs", str(programs), "--out", str(out),
                                       "--workers", str(workers)))
    if code != 0:
        raise SystemExit(f"run of {size} problems failed with exit {code}")
    metrics = json.loads((out / "scale" / "metrics.json").read_text())
    row = {"size": size, "wall": wall, "per_problem_ms": 1000 * wall / size, "peak_mib": peak,
           "accuracy": metrics.get("accuracy"), "executed": metrics.get("executed")}
    for name, args in (("evaluate", ["evaluate", "--out", str(out), "--task", str(task)]),
                       ("failures", ["failures", str(out)]),
                       ("view", ["view", str(out), "--out", str(scratch / f"view{size}.html"), "--task", str(task)])):
        code, seconds, _ = _reap(logicpipe(*args))
        row[name] = seconds if code == 0 else float("nan")
    row["view_mib"] = (scratch / f"view{size}.html").stat().st_size / 2**20 if (scratch / f"view{size}.html").exists() else float("nan")
    return row


def kill_and_resume(size: int, workers: int, scratch: Path, full_wall: float) -> dict:
    """Kill a run once its solve stage holds ~90% of the records, resume it, time the resume."""
    task, programs = scratch / f"n{size}" / "scale.yaml", scratch / f"n{size}" / "programs.json"
    out = scratch / f"kill{size}"
    command = logicpipe("run", "--task", str(task), "--programs", str(programs), "--out", str(out),
                        "--workers", str(workers))
    # Its own session, so that the kill takes the solver workers with it, as a machine failure would.
    process = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                               start_new_session=True)
    solve = out / "scale" / "solve.jsonl"
    done = 0
    while process.poll() is None:
        if solve.exists():
            with solve.open("rb") as handle:
                done = sum(chunk.count(b"\n") for chunk in iter(lambda: handle.read(1 << 20), b""))
            if done >= 0.9 * size:
                break
        time.sleep(0.2)
    finished = process.poll() is not None
    if not finished:
        os.killpg(process.pid, signal.SIGKILL)
    process.wait()
    code, wall, peak = _reap(command)
    if code != 0:
        raise SystemExit(f"resumed run of {size} problems failed with exit {code}")
    records = sum(1 for _ in solve.open())
    return {"size": size, "killed_at": done, "resume_wall": wall, "full_wall": full_wall,
            "records": records, "peak_mib": peak, "finished": finished}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="1000,10000", help="problem counts, comma-separated")
    parser.add_argument("--large", action="store_true", help="add 100,000 problems")
    parser.add_argument("--million", action="store_true", help="add 1,000,000 problems")
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",") if s]
    sizes += [100_000] if args.large else []
    sizes += [1_000_000] if args.million else []
    os.environ.setdefault("LOGICPIPE_DATA", "")
    with tempfile.TemporaryDirectory(prefix="logicpipe-scale-") as tmp:
        scratch = Path(tmp)
        rows = [run_size(size, args.workers, scratch) for size in sizes]
        base = rows[0]
        print(f"replay of generated constraint puzzles, --workers {args.workers}; ratio: s/problem over the "
              f"{base['size']:,}-problem run's, measured in this run")
        print(f"{'problems':>10} {'wall s':>8} {'ms/problem':>11} {'ratio':>6} {'peak MiB':>9} "
              f"{'accuracy':>9} {'evaluate s':>11} {'failures s':>11} {'view s':>7} {'view MiB':>9}")
        for row in rows:
            print(f"{row['size']:>10,} {row['wall']:>8.1f} {row['per_problem_ms']:>11.2f} "
                  f"{row['per_problem_ms'] / base['per_problem_ms']:>6.2f} {row['peak_mib']:>9.0f} "
                  f"{row['accuracy']:>9.3f} {row['evaluate']:>11.2f} {row['failures']:>11.2f} "
                  f"{row['view']:>7.2f} {row['view_mib']:>9.1f}")
        last = rows[-1]
        resumed = kill_and_resume(last["size"], args.workers, scratch, last["wall"])
        if resumed["finished"]:
            print(f"\nthe {resumed['size']:,}-problem run finished before it could be killed at 90%: "
                  "no resume figure (use a larger size)")
            return
        print(f"\nkilled at {resumed['killed_at']:,} of {resumed['size']:,} solve records; resume took "
              f"{resumed['resume_wall']:.1f} s against {resumed['full_wall']:.1f} s for the whole run; "
              f"{resumed['records']:,} solve records after it (peak {resumed['peak_mib']:.0f} MiB)")


if __name__ == "__main__":
    main()
