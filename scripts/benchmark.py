"""Time the solve stage on the released gpt-4 programs at 1 and 2 workers; print problems/second.

usage: python scripts/benchmark.py [--data-dir DIR] [--datasets ld,prontoqa,...] [--workers 1,2]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from logicpipe.data import get_dataset, resolve_file
from logicpipe.stages import RunConfig, problems_for, run_stages


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--data-dir", type=Path, default=None)
    parser.add_argument("--datasets", default="logicaldeduction,prontoqa,proofwriter,folio,ar-lsat")
    parser.add_argument("--workers", default="1,2")
    parser.add_argument("--model", default="gpt-4")
    args = parser.parse_args()
    print(f"{'dataset':<18}{'workers':>8}{'problems':>10}{'seconds':>10}{'problems/s':>12}")
    for name in args.datasets.split(","):
        spec = get_dataset(name)
        programs = resolve_file(f"programs/{spec.name}_dev_{args.model}.json", args.data_dir)
        for workers in [int(w) for w in args.workers.split(",")]:
            with tempfile.TemporaryDirectory() as out:
                config = RunConfig(dataset=spec.key, out=Path(out), data_dir=args.data_dir, workers=workers,
                                   programs=programs)
                problems = problems_for(config)
                run_stages(config, ["formulate"])
                start = time.perf_counter()
                run_stages(config, ["solve"])
                seconds = time.perf_counter() - start
            print(f"{spec.key:<18}{workers:>8}{len(problems):>10}{seconds:>10.2f}{len(problems) / seconds:>12.1f}")


if __name__ == "__main__":
    main()
