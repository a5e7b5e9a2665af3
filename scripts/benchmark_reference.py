"""logicpipe against Logic-LM's own solver code, whole commands, one worker, on the same gpt-4 programs.

For each dataset, Logic-LM's `models/logic_inference.py` (its solvers, in its own Python environment)
and `logicpipe run --programs ... --workers 1` replay the released gpt-4 programs of the dev set, each
as a fresh process timed from start to exit, interleaved round by round (the order alternates, so
neither always runs on a warmer machine). Printed per dataset: the median wall time of each, the ratio
reference / logicpipe (above 1: logicpipe is faster), the same for the fastest round of each (on a
machine shared with other work the best round is the least disturbed), and how often the two agree on the answer of a
problem both executed, Logic-LM's solvers serving as an independent oracle for ours.

Both trees are byte-compiled first, so neither pays for compiling its source at every start (a
PYTHONDONTWRITEBYTECODE environment would otherwise make every run do so).

Logic-LM is not part of logicpipe. To set it up beside the project (Python 3.11):

    git clone https://github.com/teacherpeterpan/Logic-LLM /tmp/Logic-LLM
    chmod +x /tmp/Logic-LLM/models/symbolic_solvers/Prover9/bin/*
    python -m venv /tmp/logic-lm-env
    /tmp/logic-lm-env/bin/pip install func-timeout python-constraint==1.4.0 z3-solver nltk==3.8.1 \\
        scitools-pyke tqdm ply

usage: python scripts/benchmark_reference.py --reference /tmp/Logic-LLM --reference-python
       /tmp/logic-lm-env/bin/python [--datasets LogicalDeduction,ProntoQA] [--rounds 5] [--data-dir DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from shared_data import use_shared_data

from logicpipe.data import get_dataset
from logicpipe.data.loaders import data_root

ROOT = Path(__file__).resolve().parent.parent
DATASETS = ["ProntoQA", "ProofWriter", "FOLIO", "LogicalDeduction", "AR-LSAT"]
MODEL = "gpt-4"


def timed(command: list[str], cwd: Path, env: dict[str, str] | None = None) -> float:
    start = time.perf_counter()
    done = subprocess.run(command, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    seconds = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command[:4])} ... failed (exit {done.returncode}): {done.stderr[-2000:]}")
    return seconds


class Reference:
    """Logic-LM's logic_inference.py run from a scratch folder that looks like its checkout: its models
    (and Prover9 binary) linked in, the released programs under outputs/logic_programs."""

    def __init__(self, checkout: Path, python: str, programs: Path, scratch: Path):
        self.python, self.cwd = python, scratch / "reference"
        (self.cwd / "outputs").mkdir(parents=True)
        (self.cwd / "models").symlink_to(checkout.resolve() / "models")
        (self.cwd / "outputs" / "logic_programs").symlink_to(programs.resolve())
        self.out = self.cwd / "results"
        # Its SMT solver runs `python` on each program: the interpreter of its own environment.
        bin_dir = str(Path(python).absolute().parent)
        self.env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}"}
        # Not checked: a file of its tree that does not compile (an example) is never imported.
        subprocess.run([python, "-m", "compileall", "-q", str(checkout / "models")],
                       stdout=subprocess.DEVNULL)

    def run(self, dataset: str) -> float:
        return timed([self.python, "models/logic_inference.py", "--dataset_name", dataset, "--model_name", MODEL,
                      "--backup_strategy", "random", "--save_path", str(self.out)], self.cwd, self.env)

    def answers(self, dataset: str) -> dict[str, str]:
        """The answers of the problems whose program executed."""
        rows = json.loads((self.out / f"{dataset}_dev_{MODEL}_backup-random.json").read_text())
        return {row["id"]: row["predicted_answer"] for row in rows if row["flag"] == "success"}


class Ours:
    def __init__(self, programs: Path, data_dir: Path | None, scratch: Path):
        self.programs, self.data_dir, self.scratch = programs, data_dir, scratch
        subprocess.run([sys.executable, "-m", "compileall", "-q", str(ROOT / "logicpipe")], check=True,
                       stdout=subprocess.DEVNULL)

    def out(self, dataset: str) -> Path:
        return self.scratch / f"ours-{dataset}"

    def run(self, dataset: str) -> float:
        command = [sys.executable, "-m", "logicpipe", "run", "--dataset", dataset, "--workers", "1",
                   "--programs", str(self.programs / f"{dataset}_dev_{MODEL}.json"), "--out", str(self.out(dataset)),
                   "--overwrite"]
        if self.data_dir is not None:
            command += ["--data-dir", str(self.data_dir)]
        return timed(command, ROOT)

    def answers(self, dataset: str) -> dict[str, str]:
        path = self.out(dataset) / get_dataset(dataset).key / "interpret.jsonl"
        rows = [json.loads(line) for line in path.read_text().splitlines()]
        return {row["id"]: row["predicted"] for row in rows if row["executed"]}


def agreement(theirs: dict[str, str], ours: dict[str, str]) -> tuple[int, float]:
    both = theirs.keys() & ours.keys()
    same = sum(theirs[key] == ours[key] for key in both)
    return len(both), 100.0 * same / len(both) if both else float("nan")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--reference", type=Path, required=True, help="a checkout of Logic-LLM")
    parser.add_argument("--reference-python", default="python3", help="the Python of Logic-LM's environment")
    parser.add_argument("--datasets", default=",".join(DATASETS), help="Logic-LM's dataset names, comma-separated")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--data-dir", type=Path, default=None)
    args = parser.parse_args()
    use_shared_data()  # a fresh shell finds ../shared/logic-lm as `make` does
    root = data_root(args.data_dir)
    if root is None:
        raise SystemExit("give --data-dir or set LOGICPIPE_DATA to the Logic-LM data directory")
    if not (args.reference / "models" / "logic_inference.py").is_file():
        raise SystemExit(f"{args.reference} is not a Logic-LLM checkout (no models/logic_inference.py)")
    datasets = args.datasets.split(",")
    with tempfile.TemporaryDirectory(prefix="logicpipe-ref-") as tmp:
        scratch = Path(tmp)
        reference = Reference(args.reference, args.reference_python, root / "programs", scratch)
        ours = Ours(root / "programs", args.data_dir, scratch)
        print(f"{'dataset':<17} {'problems':>8} {'reference s':>12} {'logicpipe s':>12} {'ratio':>6} "
              f"{'best ref s':>10} {'best ours s':>11} {'ratio':>6} {'both executed':>14} {'agree %':>8}")
        for dataset in datasets:
            times: dict[str, list[float]] = {"reference": [], "ours": []}
            for round_ in range(args.rounds):
                order = [("reference", reference), ("ours", ours)]
                for name, side in order if round_ % 2 == 0 else order[::-1]:
                    times[name].append(side.run(dataset))
            theirs_s, ours_s = statistics.median(times["reference"]), statistics.median(times["ours"])
            theirs_best, ours_best = min(times["reference"]), min(times["ours"])
            both, agree = agreement(reference.answers(dataset), ours.answers(dataset))
            problems = len(json.loads((root / "programs" / f"{dataset}_dev_{MODEL}.json").read_text()))
            print(f"{dataset:<17} {problems:>8} {theirs_s:>12.2f} {ours_s:>12.2f} {theirs_s / ours_s:>6.2f} "
                  f"{theirs_best:>10.2f} {ours_best:>11.2f} {theirs_best / ours_best:>6.2f} {both:>14} {agree:>8.1f}",
                  flush=True)


if __name__ == "__main__":
    main()
