"""A real model end to end: SmolLM2-135M-Instruct on a local llama.cpp server (started here, 2 threads),
`logicpipe run` on the real-model tests' problems (ten per formalism) or N per dataset, with and
without --constrain, at the settings those tests use (logicpipe/testing/llamacpp.py: SETTINGS,
settings(constrain)). Needs `bash scripts/llm-setup.sh`.

Per dataset and mode (free: unconstrained; one-phase: --constrain with each language's decoding grammar
in one request, as before phases; constrained: --constrain, CSP and SMT written in phases,
llm/declared.py) it prints:
  parse %    programs that parsed, over every program the model wrote (formulated and refined)
  cut        replies that used all of max_tokens (cut off, so they rarely parse)
  Exe_Rate   problems whose final program ran, before and after refinement
  Exe_Acc    accuracy over the problems whose program ran
  accuracy   over all problems (a backup answers the rest), with its 95% Wilson interval
  random     the accuracy of a uniform guess among each problem's options (its expectation)
  tok/s      completion tokens over the run's wall time (prompt processing and solving included)
  s/problem  the run's wall time per problem
The baseline, measured first in the same run, is the server alone: one unconstrained chat completion
of max_tokens tokens, its completion tokens over its wall time.

usage: python scripts/benchmark_real.py [--data-dir DIR] [--problems N] [--datasets prontoqa,...]
       [--modes free,one-phase,constrained]
"""

from __future__ import annotations

import argparse
import json
import math
import re
import tempfile
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from shared_data import use_shared_data

from logicpipe.data import get_dataset
from logicpipe.llm.constrain import Constraint, grammar_for
from logicpipe.llm.declared import phased
from logicpipe.stages import RunConfig, formulate, problems_for, refine, run_stages
from logicpipe.testing.llamacpp import (
    ALIAS,
    PROBLEMS,
    SETTINGS,
    LlamaServer,
    missing,
    parse_counts,
    settings,
    smollm2_gguf,
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data-dir", type=Path, default=None)
    parser.add_argument("--problems", type=int, default=20, help="per dataset (default: 20)")
    parser.add_argument("--datasets", default=",".join(PROBLEMS))
    parser.add_argument("--modes", default="free,one-phase,constrained")
    args = parser.parse_args()
    use_shared_data()  # a fresh shell finds ../shared/logic-lm as `make` does
    reason = missing()
    model = smollm2_gguf()
    if reason is not None or model is None:
        raise SystemExit(f"error: {reason}")
    with tempfile.TemporaryDirectory() as scratch, LlamaServer(model, log=Path(scratch) / "server.log") as server:
        baseline(server.url)
        shown = ", ".join(f"{k}={v}" for k, v in SETTINGS.items())
        print(f"\nproblems per dataset: {args.problems}; {shown} (free runs: max_tokens="
              f"{settings(False)['max_tokens']}; constrained runs: backup=random)")
        print(f"{'dataset':<17}{'mode':<12}{'parse %':>8}{'cut':>4}{'Exe before':>11}{'Exe_Rate':>9}{'Exe_Acc':>8}"
              f"{'accuracy [95% CI]':>22}{'random':>8}{'tok/s':>7}{'s/problem':>10}")
        failures: Counter[str] = Counter()
        modes = args.modes.split(",")
        for dataset in args.datasets.split(","):
            for mode in ("free", "one-phase", "constrained"):
                if mode in modes and (mode != "one-phase" or phased(get_dataset(dataset).solver)):
                    row(dataset, mode, args, server.url, Path(scratch), failures)
        print("\nparse errors of constrained programs, most common first (numbers and quoted text elided):")
        for message, count in failures.most_common(12):
            print(f"{count:>5}  {message}")


def baseline(url: str) -> None:
    import openai

    client = openai.OpenAI(base_url=url, api_key="not-needed")
    start = time.perf_counter()
    reply = client.chat.completions.create(
        model=ALIAS, temperature=0.0, max_tokens=int(str(SETTINGS["max_tokens"])),
        messages=[{"role": "user", "content": "Write a long story about a logician and a robot."}])
    wall = time.perf_counter() - start
    tokens = reply.usage.completion_tokens if reply.usage else 0
    print(f"baseline, the server alone: {tokens} completion tokens in {wall:.2f} s = {tokens / wall:.1f} tok/s")


def row(dataset: str, mode: str, args: argparse.Namespace, url: str, scratch: Path,
        failures: Counter[str]) -> None:
    constrain = mode != "free"
    out = scratch / f"{dataset}-{mode}"
    config = RunConfig(dataset=dataset, out=out, data_dir=args.data_dir, limit=args.problems,
                       model=ALIAS, base_url=url, llm_cache=out / "cache.sqlite", constrain=constrain,
                       **settings(constrain))
    start = time.perf_counter()
    with one_phase(mode == "one-phase"):
        report = run_stages(config, ["formulate", "solve", "refine", "interpret", "evaluate"])
    wall = time.perf_counter() - start
    stage_dir = out / config.spec.key
    parsed, programs = parse_counts(stage_dir)
    cut = sum(1 for path in stage_dir.glob("*.jsonl") if path.name.startswith(("formulate", "refine"))
              for line in path.read_text().splitlines()
              if (json.loads(line).get("usage") or {}).get("completion_tokens") == config.max_tokens)
    if constrain:
        for path in stage_dir.glob("solve*.jsonl"):
            for line in path.read_text().splitlines():
                error = json.loads(line).get("error") or {}
                if error.get("category") == "parse":
                    failures[f"{dataset}: {_shape(error['message'])}"] += 1
    metrics = report.metrics
    before = metrics.get("exe_rate_before_refinement", metrics["exe_rate"])
    tokens = metrics.get("tokens", {}).get("completion_tokens", 0)
    low, high = wilson(metrics["correct"], metrics["total"])
    problems = problems_for(config)
    guess = 100 * sum(1 / len(p.options) for p in problems) / len(problems)
    accuracy = f"{metrics['accuracy']:.1f} [{low:.1f}, {high:.1f}]"
    print(f"{dataset:<17}{mode:<12}{100 * parsed / max(programs, 1):>7.1f}%{cut:>4}{before:>10.1f}%"
          f"{metrics['exe_rate']:>8.1f}%{metrics['exe_acc']:>8.1f}{accuracy:>22}{guess:>8.1f}{tokens / wall:>7.1f}"
          f"{wall / metrics['total']:>10.2f}", flush=True)


@contextmanager
def one_phase(on: bool) -> Iterator[None]:
    """--constrain as it was before phases: each language's whole decoding grammar in one request."""
    saved = formulate.constraint_for, refine.constraint_for
    if on:
        formulate.constraint_for = refine.constraint_for = lambda solver, tokens: Constraint(grammar_for(solver, tokens))
    try:
        yield
    finally:
        formulate.constraint_for, refine.constraint_for = saved


def wilson(correct: int, total: int, z: float = 1.96) -> tuple[float, float]:
    """The Wilson score interval of a proportion, in percent (95% at the default z): unlike the normal
    approximation it stays inside [0, 100] at the small counts and extreme rates measured here."""
    if total == 0:
        return 0.0, 100.0
    rate = correct / total
    centre = (rate + z * z / (2 * total)) / (1 + z * z / total)
    half = z * math.sqrt(rate * (1 - rate) / total + z * z / (4 * total * total)) / (1 + z * z / total)
    return 100 * max(0.0, centre - half), 100 * min(1.0, centre + half)


def _shape(message: str) -> str:
    """A parse error without its line number and quoted program text, so that like errors count together."""
    return re.sub(r"'[^']*'|\"[^\"]*\"|\d+", "_", message)[:90]


if __name__ == "__main__":
    main()
