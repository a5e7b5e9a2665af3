"""A real model end to end: SmolLM2-135M-Instruct on a local llama.cpp server (started here, 2 threads),
`logicpipe run` on the real-model tests' problems (ten per formalism) or N per dataset, with and
without --constrain, at the settings those tests use (logicpipe/testing/llamacpp.py: SETTINGS,
settings(constrain)). Needs `bash scripts/llm-setup.sh`.

Per formalism and mode it prints:
  parse %    programs that parsed, over every program the model wrote (formulated and refined)
  cut        replies that used all of max_tokens (cut off, so they rarely parse)
  Exe_Rate   problems whose final program ran, before and after refinement
  tok/s      completion tokens over the run's wall time (prompt processing and solving included)
  s/problem  the run's wall time per problem
The baseline, measured first in the same run, is the server alone: one unconstrained chat completion
of max_tokens tokens, its completion tokens over its wall time.

usage: python scripts/benchmark_real.py [--data-dir DIR] [--problems N] [--datasets prontoqa,...]
"""

from __future__ import annotations

import argparse
import json
import re
import tempfile
import time
from collections import Counter
from pathlib import Path

from logicpipe.stages import RunConfig, run_stages
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
    parser.add_argument("--problems", type=int, default=None, help="per dataset (default: as the tests)")
    parser.add_argument("--datasets", default=",".join(PROBLEMS))
    args = parser.parse_args()
    reason = missing()
    model = smollm2_gguf()
    if reason is not None or model is None:
        raise SystemExit(f"error: {reason}")
    with tempfile.TemporaryDirectory() as scratch, LlamaServer(model, log=Path(scratch) / "server.log") as server:
        baseline(server.url)
        shown = ", ".join(f"{k}={v}" for k, v in SETTINGS.items())
        count = args.problems or ", ".join(f"{k} {v}" for k, v in PROBLEMS.items())
        print(f"\nproblems per dataset: {count}; {shown} (free runs: max_tokens={settings(False)['max_tokens']}; "
              "constrained runs: backup=random)")
        print(f"{'dataset':<17}{'mode':<12}{'parse %':>9}{'cut':>5}{'Exe before':>12}{'Exe after':>11}"
              f"{'tok/s':>8}{'s/problem':>11}")
        failures: Counter[str] = Counter()
        for dataset in args.datasets.split(","):
            for constrain in (False, True):
                row(dataset, constrain, args, server.url, Path(scratch), failures)
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


def row(dataset: str, constrain: bool, args: argparse.Namespace, url: str, scratch: Path,
        failures: Counter[str]) -> None:
    mode = "constrained" if constrain else "free"
    out = scratch / f"{dataset}-{mode}"
    config = RunConfig(dataset=dataset, out=out, data_dir=args.data_dir, limit=args.problems or PROBLEMS[dataset],
                       model=ALIAS, base_url=url, llm_cache=out / "cache.sqlite", constrain=constrain,
                       **settings(constrain))
    start = time.perf_counter()
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
    print(f"{dataset:<17}{mode:<12}{100 * parsed / max(programs, 1):>8.1f}%{cut:>5}{before:>11.1f}%"
          f"{metrics['exe_rate']:>10.1f}%{tokens / wall:>8.1f}{wall / metrics['total']:>11.2f}", flush=True)


def _shape(message: str) -> str:
    """A parse error without its line number and quoted program text, so that like errors count together."""
    return re.sub(r"'[^']*'|\"[^\"]*\"|\d+", "_", message)[:90]


if __name__ == "__main__":
    main()
