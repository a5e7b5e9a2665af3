"""Does `logicpipe optimize` learn what a model needs, and faster than random search?

A simulated model answers on FakeOpenAI (a real HTTP server; the real pipeline, solver and optimiser
run against it). It writes ProntoQA programs that are right (the released Logic-LM program, checked
against the gold answer) or wrong (the same program asking the opposite question) at random, but
deterministically per (problem, prompt hash): right with probability 0.9 when the formulate prompt
states the negation PRINCIPLE below, 0.7 when it carries the negation DEMONSTRATION, else 0.4. The
simulated judge, gradients and optimiser answer like a model that noticed the mistake: wrong answers get
a critique about negated sentences, and the optimiser's rewrites come from a fixed menu per component
(the principle or a neutral rule; the negation example, a plain one, or one whose program does not parse;
paraphrases of the description and format).

Two arms, the same loop, steps, batch, validation problems and acceptance test:
- gradients: the optimiser picks the rewrite the feedback asks for (with probability 0.8 when the feedback
  mentions negated sentences), else a uniform draw from the menu;
- random: always a uniform draw from the same menu (random search over the same proposal distribution).
Both print their validation curve side by side, with the simulated model's true accuracy under each
accepted prompt set (the figure the validation score estimates).

usage: python scripts/benchmark_optimize.py [--data-dir DIR] [--steps 8] [--batch-size 4] [--val 40]
                                            [--seeds 0] [--max-calls N] [--workers 2] [--out DIR]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path

from logicpipe.data import load_problems
from logicpipe.data.loaders import data_root
from logicpipe.data.registry import get_dataset
from logicpipe.optimize.config import OptimizeConfig
from logicpipe.optimize.loop import OptimizeResult, optimize
from logicpipe.optimize.state import OptimizeState
from logicpipe.run.pool import SolverCall, WorkerPool
from logicpipe.solvers import map_answer
from logicpipe.testing.server import FakeOpenAI

PRINCIPLE = ("- A negated sentence ('X is not Y', 'Every X is not Y') is written with the value False: "
             "Y($x, False); never with a Not predicate.")
DEMONSTRATION = """Example.
Context: Every yumpus is not bright. Sam is a yumpus.
Question: Is the following statement true or false? Sam is bright.
Program:
Predicates:
Yumpus($x, bool) ::: Is x a yumpus?
Bright($x, bool) ::: Is x bright?
Facts:
Yumpus(Sam, True) ::: Sam is a yumpus.
Rules:
Yumpus($x, True) >>> Bright($x, False) ::: Every yumpus is not bright.
Query:
Bright(Sam, True) ::: Sam is bright."""
PLAIN = DEMONSTRATION.replace("yumpus is not bright", "zumpus is wooden").replace("Yumpus", "Zumpus") \
    .replace("yumpus", "zumpus").replace("Bright($x, False)", "Wooden($x, True)").replace("Bright", "Wooden") \
    .replace("bright", "wooden")
BROKEN = PLAIN.replace("Rules:", "Rulez:")  # the optimiser's typo: check_candidate must catch it
P_PRINCIPLE, P_DEMONSTRATION, P_BASE = 0.9, 0.7, 0.4
HELPFUL = 0.8  # how often the informed optimiser follows feedback that names the mistake
MENU = {
    "principles": [("helpful", PRINCIPLE), ("neutral", "- Declare every predicate under Predicates: before using it."),
                   ("neutral", "- Keep every name exactly as the problem writes it.")],
    "demonstrations": [("helpful", DEMONSTRATION), ("neutral", PLAIN), ("broken", BROKEN)],
    "description": [("neutral", "You translate logic problems into logic programs for a solver. Write only the "
                                "program, no explanation."),
                    ("neutral", "Translate the problem into a logic program. Write only the program, nothing else.")],
    "format": [("neutral", "\nEvery program ends with its Query: section."),
               ("neutral", "\nWrite the sections in this order, each header on its own line.")],
}
_COMPONENT = re.compile(r"Component to rewrite: (\w+)")
_CURRENT = re.compile(r"Current text:\n<current>\n(.*?)\n</current>\n\nFeedback from the training batch[^\n]*:\n(.*)", re.S)


def true_accuracy(text: str) -> float:
    """The simulated model's chance of a right program under a formulate prompt."""
    if "A negated sentence" in text:
        return P_PRINCIPLE
    if "Every yumpus is not bright." in text:
        return P_DEMONSTRATION
    return P_BASE


def _unit(*parts: str) -> float:
    digest = hashlib.sha256("\x1f".join(parts).encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


def _flip(program: str) -> str:
    """The same program asking the opposite question."""
    lines = program.rstrip("\n").split("\n")
    at = max(i for i, line in enumerate(lines) if line.strip().startswith("Query")) + 1
    lines[at] = lines[at].replace("True)", "\0").replace("False)", "True)").replace("\0", "False)")
    return "\n".join(lines) + "\n"


def program_pairs(data_dir: Path, workers: int) -> dict[str, tuple[str, str]]:
    """Problem id -> (a right program, a wrong one), from the released gpt-4 programs run in the worker
    pool: a problem neither of whose programs gives the gold answer is left out of the model's repertoire."""
    spec = get_dataset("prontoqa")
    problems = {p.id: p for p in load_problems(spec, "dev", data_dir)}
    released = json.loads((data_dir / "programs" / "ProntoQA_dev_gpt-4.json").read_text())
    candidates = {r["id"]: (r["raw_logic_programs"][0], _flip(r["raw_logic_programs"][0]))
                  for r in released if r.get("raw_logic_programs") and r["id"] in problems}
    tasks = [SolverCall(f"{pid}\x1f{i}", {"solver": "lp", "program": text, "limits": {"seconds": 10, "memory_mb": 1024}}, 20)
             for pid, pair in candidates.items() for i, text in enumerate(pair)]
    right: dict[str, dict[int, bool]] = {}
    with WorkerPool("logicpipe.solvers:execute_task", workers, 1024, preload=["logicpipe.solvers.lp"]) as pool:
        for outcome in pool.map(tasks):
            pid, index = outcome.key.rsplit("\x1f", 1)
            verdict = outcome.value.verdict if outcome.status == "ok" else None
            answer = map_answer(verdict, problems[pid].options, spec.closed_world)
            right.setdefault(pid, {})[int(index)] = answer == problems[pid].answer
    pairs = {}
    for pid, (released_program, flipped) in candidates.items():
        if right[pid].get(0) and not right[pid].get(1):
            pairs[pid] = (released_program, flipped)
        elif right[pid].get(1) and not right[pid].get(0):
            pairs[pid] = (flipped, released_program)
    return pairs


class SimulatedModel:
    """Every purpose the optimiser and the pipeline send, answered as described in the module docstring."""

    def __init__(self, pairs: dict[str, tuple[str, str]], informed: bool, seed: int):
        self.pairs, self.informed, self.seed = pairs, informed, seed
        self.lock = threading.Lock()
        self.sent: Counter[str] = Counter()
        self.unrecognised = 0  # optimiser requests whose layout this simulation does not know

    def __call__(self, body: dict) -> str:
        meta = body.get("_logicpipe", {})
        purpose, problem = meta.get("purpose", ""), meta.get("problem", "")
        with self.lock:
            self.sent[purpose] += 1
        text = "\n".join(m.get("content", "") for m in body.get("messages", []))
        if purpose == "formulate":
            if problem not in self.pairs:
                return "I cannot translate this problem."
            right, wrong = self.pairs[problem]
            prompt_hash = hashlib.sha256(text.encode()).hexdigest()
            return right if _unit(problem, prompt_hash) < true_accuracy(text) else wrong
        if purpose == "loss":
            if "the answer is correct" in text:
                return json.dumps({"score": 9, "critique": "A faithful program that gives the gold answer."})
            return json.dumps({"score": 2, "critique": "The program answers the opposite of the gold answer: a "
                                                       "negated sentence was written with the wrong truth value."})
        if purpose == "gradient":
            if "the answer is correct" in text:
                return "No change needed."
            if "Step: formulate." not in text:
                return "This step did its part; the error comes from the program (formulate)."
            return ("The formulate prompt never says how to write negated sentences: state that 'X is not Y' is "
                    "Y($x, False), as a principle or in a worked example with a negation.")
        if purpose == "optimize":
            return self.rewrite(text)
        if purpose == "structure":
            return json.dumps({"field": "max_rounds", "value": 1})
        return "I cannot help with this."

    def rewrite(self, text: str) -> str:
        found, current = _COMPONENT.search(text), _CURRENT.search(text)
        if found is None or current is None:
            with self.lock:
                self.unrecognised += 1
            return "I cannot read this request."
        component, now, feedback = found.group(1), current.group(1), current.group(2)
        menu = MENU.get(component, [("neutral", " Be precise."), ("neutral", " Be brief.")])
        draw = _unit(str(self.seed), "informed" if self.informed else "random", text)
        helpful = [option for option in menu if option[0] == "helpful"]
        if self.informed and helpful and "negated sentences" in feedback and draw < HELPFUL:
            choice = helpful[0][1]
        else:
            choice = menu[int(_unit(str(draw)) * len(menu))][1]
        if component == "demonstrations":
            return f"{now}\n\n{choice}"
        if component == "principles":
            return f"{now}\n{choice}" if now else choice
        if component == "description":
            return choice
        return now + choice


def run_arm(name: str, informed: bool, pairs: dict[str, tuple[str, str]], args: argparse.Namespace, seed: int,
            out: Path) -> dict:
    model = SimulatedModel(pairs, informed, seed)
    start = time.monotonic()
    with FakeOpenAI(model) as server:
        config = OptimizeConfig(dataset="prontoqa", data_dir=args.data_dir, model="simulated", base_url=server.url,
                                train_split="train", val_split="dev", steps=args.steps, batch_size=args.batch_size,
                                limit_val=args.val, max_calls=args.max_calls, seed=seed, workers=args.workers, z=args.z,
                                out=out / f"{name}-seed{seed}")
        result: OptimizeResult = optimize(config)
    seconds = time.monotonic() - start
    if model.unrecognised:
        raise SystemExit(f"error: {model.unrecognised} optimiser requests were not in the layout this benchmark "
                         "reads (Component to rewrite / Current text / Feedback); update SimulatedModel.rewrite")
    state = OptimizeState(result.folder)
    prompt = config.spec.prompt
    candidates = {c.step: c for c in result.candidates}
    current = result.start_hash
    rows = []
    for step in result.steps:
        current = step.accepted or current
        candidate = candidates.get(step.step)
        rows.append({"step": step.step, "val": step.val_score, "status": candidate.status if candidate else "start",
                     "what": (candidate.component or str(candidate.change)) if candidate else "",
                     "true": true_accuracy(state.load_params(current).render()[prompt]), "calls": step.calls})
    best_true = true_accuracy(state.load_params(result.best_hash).render()[prompt])
    return {"rows": rows, "seconds": seconds, "sent": dict(model.sent), "calls": sum(s.calls for s in result.steps),
            "cached": sum(s.cached_calls for s in result.steps), "best_true": best_true,
            "best_val": result.best_score, "splits": result.splits.get("note", ""), "stopped": result.stopped,
            "folder": result.folder}


def _cell(row: dict | None) -> str:
    if row is None:
        return f"{'':>38}"
    return f"{row['val']:.3f} {row['status'][:11]:<11} {row['what'][:14]:<14} {row['true']:.1f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data-dir", type=Path, default=None)
    parser.add_argument("--steps", type=int, default=8)
    parser.add_argument("--batch-size", type=int, default=4)
    parser.add_argument("--val", type=int, default=40, help="validation problems")
    parser.add_argument("--seeds", default="0", help="comma-separated seeds, one run of each arm per seed")
    parser.add_argument("--max-calls", type=int, default=None)
    parser.add_argument("--z", type=float, default=2.0, help="the acceptance test's standard errors")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--out", type=Path, default=None, help="keep the runs here (default: a temporary folder)")
    args = parser.parse_args()
    root = data_root(args.data_dir)
    if root is None:
        raise SystemExit("error: give --data-dir or set LOGICPIPE_DATA to the Logic-LM data directory")
    args.data_dir = root
    started = time.monotonic()
    pairs = program_pairs(root, args.workers)
    print(f"simulated model: {len(pairs)} ProntoQA problems with a right and a wrong program "
          f"({time.monotonic() - started:.1f} s to check them in the solver); P(right) = {P_PRINCIPLE} with the "
          f"principle, {P_DEMONSTRATION} with the negation example, {P_BASE} otherwise")
    print(f"budget per arm: {args.steps} steps, batch {args.batch_size}, {args.val} validation problems"
          + (f", at most {args.max_calls} calls" if args.max_calls else ""))
    with tempfile.TemporaryDirectory() as scratch:
        out = args.out or Path(scratch)
        summary = []
        for seed in (int(s) for s in args.seeds.split(",")):
            arms = {name: run_arm(name, informed, pairs, args, seed, out)
                    for name, informed in (("gradients", True), ("random", False))}
            print(f"\nseed {seed}: {arms['gradients']['splits']}")
            header = "val   decision    candidate      true"
            print(f"{'step':>4} | {'gradients: ' + header:<49} | {'random search: ' + header}")
            grad_rows, random_rows = arms["gradients"]["rows"], arms["random"]["rows"]
            for index in range(max(len(grad_rows), len(random_rows))):
                left = grad_rows[index] if index < len(grad_rows) else None
                right = random_rows[index] if index < len(random_rows) else None
                step = (left or right or {}).get("step", index)
                print(f"{step:>4} | {'':11}{_cell(left):<38} | {'':15}{_cell(right)}")
            for name, arm in arms.items():
                sent = ", ".join(f"{k} {v}" for k, v in sorted(arm["sent"].items()))
                print(f"{name:>9}: best validation {arm['best_val']:.3f}, true accuracy of the best set "
                      f"{arm['best_true']:.1f}; {arm['calls']} calls ({arm['cached']} cached; sent: {sent}); "
                      f"{arm['seconds']:.1f} s" + (f"; stopped: {arm['stopped']}" if arm["stopped"] else ""))
                summary.append((seed, name, arm))
        if len(summary) > 2:
            for name in ("gradients", "random"):
                mine = [arm for _, n, arm in summary if n == name]
                print(f"{name:>9} over {len(mine)} seeds: mean true accuracy of the best set "
                      f"{sum(a['best_true'] for a in mine) / len(mine):.2f}, mean calls "
                      f"{sum(a['calls'] for a in mine) / len(mine):.0f}")
        print(f"\ntotal {time.monotonic() - started:.1f} s")


if __name__ == "__main__":
    main()
