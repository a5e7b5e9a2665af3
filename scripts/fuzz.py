"""Run mutated programs of every language through the worker pool, as a run would, and print per
language how they ended and every problem found (uncaught exceptions, records that do not read back,
calls over their bound). Exits 1 if there was any problem.

usage: python scripts/fuzz.py [--count 10000] [--seed 2] [--languages lp,fol,csp,smt] [--workers 2]
"""

from __future__ import annotations

import argparse
import sys

from logicpipe.testing.fuzz import LANGUAGES, check


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--count", type=int, default=10_000)
    parser.add_argument("--seed", type=int, default=2)
    parser.add_argument("--languages", default=",".join(LANGUAGES))
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--timeout", type=float, default=3.0, help="solver seconds per program")
    args = parser.parse_args()
    found = 0
    print(f"{'language':<9}{'programs':>9}{'seconds':>9}{'problems':>9}  outcomes")
    for language in args.languages.split(","):
        report = check(language, args.count, args.seed, args.workers, args.timeout)
        outcomes = ", ".join(f"{k} {v}" for k, v in report.outcomes.most_common())
        print(f"{language:<9}{args.count:>9}{report.seconds:>9.1f}{len(report.problems):>9}  {outcomes}", flush=True)
        for problem in report.problems[:20]:
            print(f"    {problem}")
        found += len(report.problems)
    sys.exit(1 if found else 0)


if __name__ == "__main__":
    main()
