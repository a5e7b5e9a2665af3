"""Formulate 200 problems against a local OpenAI-compatible server with a fixed 200 ms latency, at
concurrency 1, 8 and 32; print wall time next to the ideal N x latency / concurrency.

usage: python scripts/benchmark_llm.py [--data-dir DIR] [--problems 200] [--latency 0.2] [--concurrency 1,8,32]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from logicpipe.data import resolve_file
from logicpipe.stages import RunConfig, problems_for, run_stages
from logicpipe.testing import FakeOpenAI, ScriptedReplies


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--data-dir", type=Path, default=None)
    parser.add_argument("--problems", type=int, default=200)
    parser.add_argument("--latency", type=float, default=0.2)
    parser.add_argument("--concurrency", default="1,8,32")
    args = parser.parse_args()
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


if __name__ == "__main__":
    main()
