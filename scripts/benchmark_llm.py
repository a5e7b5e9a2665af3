"""Formulate 200 problems against a local OpenAI-compatible server with a fixed 200 ms latency, at
concurrency 1, 8 and 32; print wall time next to the ideal N x latency / concurrency.

Then the streaming row: formulate and solve a solver-heavy dataset (FOLIO, Prover9) at concurrency 8,
with the solver working on each program as it arrives; its wall time is printed beside the model alone,
the solver alone, their maximum (the goal) and their sum (what running the stages one after the other
costs).

usage: python scripts/benchmark_llm.py [--data-dir DIR] [--problems 200] [--latency 0.2] [--concurrency 1,8,32]
                                       [--stream-dataset folio] [--workers 1]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from shared_data import use_shared_data

from logicpipe.data import resolve_file
from logicpipe.stages import RunConfig, problems_for, run_stages
from logicpipe.testing import FakeOpenAI, ScriptedReplies


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--data-dir", type=Path, default=None)
    parser.add_argument("--problems", type=int, default=200)
    parser.add_argument("--latency", type=float, default=0.2)
    parser.add_argument("--concurrency", default="1,8,32")
    parser.add_argument("--stream-dataset", default="folio")
    parser.add_argument("--workers", type=int, default=1)
    args = parser.parse_args()
    use_shared_data()  # a fresh shell finds ../shared/logic-lm as `make` does
    import openai  # noqa: F401 - imported once here so no timed run pays for it
    replies = ScriptedReplies.from_logic_lm(resolve_file("programs/LogicalDeduction_dev_gpt-4.json", args.data_dir))
    print(f"{'concurrency':>11}{'problems':>10}{'requests':>10}{'wall s':>9}{'ideal s':>9}{'overhead':>10}")
    with FakeOpenAI(replies, latency=args.latency) as fake:
        for concurrency in [int(c) for c in args.concurrency.split(",")]:
            with tempfile.TemporaryDirectory() as out:
                config = RunConfig(dataset="logicaldeduction", out=Path(out), data_dir=args.data_dir,
                                   limit=args.problems, model="bench", base_url=fake.url,
                                   max_concurrency=concurrency, llm_cache=Path(out) / "cache.sqlite")
                problems = problems_for(config)
                sent = len(fake.requests)
                start = time.perf_counter()
                run_stages(config, ["formulate"])
                wall = time.perf_counter() - start
                ideal = len(problems) * args.latency / concurrency
                print(f"{concurrency:>11}{len(problems):>10}{len(fake.requests) - sent:>10}{wall:>9.2f}"
                      f"{ideal:>9.2f}{wall / max(ideal, 1e-9):>9.2f}x")
    streaming_row(args)


def streaming_row(args: argparse.Namespace) -> None:
    from logicpipe.data import get_dataset

    spec = get_dataset(args.stream_dataset)
    programs = resolve_file(f"programs/{spec.name}_dev_gpt-4.json", args.data_dir)
    replies = ScriptedReplies.from_logic_lm(programs)
    print(f"\nstreaming: {spec.key}, {args.problems} problems, {args.latency * 1000:.0f} ms latency, "
          f"concurrency 8, {args.workers} solver worker(s)")
    print(f"{'model alone':>12}{'solver alone':>14}{'max':>8}{'sum':>8}{'streamed':>10}{'vs max':>8}{'vs sum':>8}")
    with FakeOpenAI(replies, latency=args.latency) as fake, tempfile.TemporaryDirectory() as out:
        def config(name: str, **extra: object) -> RunConfig:
            return RunConfig(dataset=spec.key, out=Path(out) / name, data_dir=args.data_dir, limit=args.problems,
                             max_concurrency=8, workers=args.workers, max_rounds=0, **extra)

        llm = {"model": "bench", "base_url": fake.url}
        start = time.perf_counter()
        run_stages(config("model", **llm, llm_cache=Path(out) / "model.sqlite"), ["formulate"])
        model = time.perf_counter() - start
        replayed = config("solver", programs=programs)
        run_stages(replayed, ["formulate"])
        start = time.perf_counter()
        run_stages(replayed, ["solve"])
        solver = time.perf_counter() - start
        start = time.perf_counter()
        run_stages(config("streamed", **llm, llm_cache=Path(out) / "streamed.sqlite"), ["formulate", "solve"])
        streamed = time.perf_counter() - start
    low, high = max(model, solver), model + solver
    print(f"{model:>12.2f}{solver:>14.2f}{low:>8.2f}{high:>8.2f}{streamed:>10.2f}"
          f"{streamed / low:>7.2f}x{streamed / high:>7.2f}x")


if __name__ == "__main__":
    main()
