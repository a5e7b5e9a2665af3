"""Does `logicpipe optimize` learn from its feedback, more than search without feedback on the same budget?

A simulated model answers on FakeOpenAI (a real HTTP server; the real pipeline, solver, optimiser loop
and acceptance test run against it). Nothing in it knows which arm it serves except how the judge
writes its critique.

The model (formulate). For each ProntoQA problem it starts from a correct program (the released Logic-LM
program, or that program asking the opposite question, whichever the real solver says gives the gold
answer) and makes each of five distinct mistakes with its own probability; four of them change the
real solver's verdict, one (section) does not:

  negation   the rules that conclude the query's predicate lose or gain a negation (True <-> False)
  scope      those rules are written for one individual instead of every x ($x -> a constant)
  fact       the fact about the problem's individual is left out
  section    that fact is written under Rules: instead of Facts: (the LP parser reads a fact under Rules:
             as a fact, so the program runs and its verdict stays: applied to 60 released ProntoQA
             programs, 0 verdicts changed and 0 errors; only the judge's critique names it)
  query      the query asks the opposite truth value

and five more kinds it never makes (naming, predicates, headers, brevity, arity), whose FIX sentences are
harmless and useless: a rewrite that states one changes nothing but the prompt's hash.
A mistake is made with its BASE rate unless the formulate prompt (the text the model is sent) contains
that mistake's FIX sentence, which lowers it to FIXED. Draws are common random numbers per (seed,
problem, mistake), so a prompt that states a fix removes that mistake on the same problems; on top, a
SLIP (a flipped query) depends on the prompt's hash, so any edit re-rolls a little luck and validation
is noisy. Whether a mistake changes the answer is decided by the real solver, not by the simulation.

The judge (loss) sees the program the pipeline ran and compares it, section by section, with the
problem's correct program: its critique names each difference it finds, by kind ("[negation] the rule
... is written ..."). The gradient for the formulate step passes on the kinds the critique names; the
other steps get "no change needed". The rewriter reads only the feedback in its request: it adds the
FIX of the kind the feedback names most often that the prompt does not state yet and that is not among
the rewrites validation already rolled back; with nothing named it can only return the text unchanged
(a rejected rewrite). So feedback helps only as far as it is right. The loop's demonstrations are
harvested from correct training runs, not written; this model reacts to FIX sentences only, so a
harvested example changes no mistake rate: it is inert here, and only costs the validation it runs on.

Three arms, on the same seeds, splits and acceptance test (--z):
- informed: the loop as shipped (losses, gradients, the components chosen by blame, --candidates 2 raced
  by successive halving, rewrites and harvested demonstrations, validation);
- noise: the same loop, but the judge's critique names one or two of the ten kinds drawn at random (not
  from the program): the feedback is noise of the same form;
- random: random search with the informed arm's total model calls of that seed, spent only on candidates
  (one call each) and their validation: each candidate is a uniform draw of a component of the formulate
  prompt and of an edit from the rewriter's whole repertoire (the ten FIX sentences, four of which can
  change an answer: negation, scope, fact and query),
  kept by the same paired test.
Each arm's start and best prompt sets are then scored on the test part (never seen while optimising);
the gain is best - start. The learning curve is the validation score of the current state against the
calls spent so far (each arm's own budget fraction).

usage: python scripts/benchmark_optimize.py [--data-dir DIR] [--seeds 10] [--steps 3] [--batch-size 4]
                                            [--val 30] [--test 40] [--z 2] [--candidates 2] [--workers 2]
                                            [--jobs 1]
                                            [--out DIR]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import re
import statistics
import tempfile
import threading
import time
from collections import Counter
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from shared_data import use_shared_data

from logicpipe.data import load_problems
from logicpipe.data.loaders import data_root
from logicpipe.data.registry import get_dataset
from logicpipe.optimize.config import OptimizeConfig
from logicpipe.optimize.forward import batch_tag, forward
from logicpipe.optimize.loop import optimize
from logicpipe.optimize.optimizers import targets
from logicpipe.optimize.params import PromptParams, Structure, check_candidate, prompt_ids
from logicpipe.optimize.splits import make_splits
from logicpipe.optimize.state import OptimizeState
from logicpipe.optimize.stats import accept, paired
from logicpipe.prompts import PromptSet
from logicpipe.solvers import execute_task, map_answer
from logicpipe.testing.server import FakeOpenAI

KINDS = ("negation", "scope", "fact", "section", "query")
BASE = {"negation": 0.35, "scope": 0.15, "fact": 0.1, "section": 0.1, "query": 0.05}
FIXED = 0.03
SLIP = 0.03
FIX = {
    "negation": "A negated sentence ('X is not Y') is written with the value False: Y($x, False).",
    "scope": "A sentence about every member of a kind is a rule over $x, never about one named individual.",
    "fact": "Every sentence about a named individual in the context becomes a fact under Facts:.",
    "section": "Facts go under Facts: and only implications (with >>>) go under Rules:.",
    "query": "The query states the statement exactly as asked, with its own truth value.",
    # Mistakes this model never makes: their fixes are harmless and useless.
    "naming": "Keep every name exactly as the problem writes it.",
    "predicates": "Declare every predicate before using it.",
    "headers": "Use the section headers exactly as shown.",
    "brevity": "Write only the program, no explanation.",
    "arity": "Every predicate takes one argument and a truth value.",
}
ALL_KINDS = tuple(FIX)
DEMO_PROGRAM = """Predicates:
Yumpus($x, bool) ::: Is x a yumpus?
Bright($x, bool) ::: Is x bright?
Facts:
Yumpus(Sam, True) ::: Sam is a yumpus.
Rules:
Yumpus($x, True) >>> Bright($x, False) ::: Every yumpus is not bright.
Query:
Bright(Sam, True) ::: Sam is bright."""
_COMPONENT = re.compile(r"Component to rewrite: (\w+)")
_CURRENT = re.compile(r"Current text:\n<current>\n(.*?)\n</current>\n\nFeedback from the training batch[^\n]*:\n(.*)", re.S)
_WHOLE = re.compile(r"The whole prompt \([^)]*\), for context:\n(.*?)\n\nComponent to rewrite:", re.S)
_PROGRAM = re.compile(r"Program written \(formulate\):\n(.*?)\n\nSolver on it:", re.S)
_TAG = re.compile(r"\[(" + "|".join(ALL_KINDS) + r")\]")
# Two-sided 95% Student t quantiles, by degrees of freedom.
_T95 = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306, 9: 2.262, 10: 2.228,
        11: 2.201, 12: 2.179, 13: 2.160, 14: 2.145, 15: 2.131, 16: 2.120, 17: 2.110, 18: 2.101, 19: 2.093}


def _unit(*parts: object) -> float:
    digest = hashlib.sha256("\x1f".join(map(str, parts)).encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


# Programs: sections, mutations, and the judge's comparison

def sections(program: str) -> dict[str, list[str]]:
    """Section name -> its lines without comments (blank lines dropped)."""
    found: dict[str, list[str]] = {}
    name = ""
    for raw in program.split("\n"):
        line = raw.split(":::")[0].strip()
        if not line:
            continue
        if line.endswith(":") and line[:-1] in ("Predicates", "Facts", "Rules", "Query"):
            name = line[:-1]
            found.setdefault(name, [])
        else:
            found.setdefault(name, []).append(line)
    return found


def _render(parts: dict[str, list[str]]) -> str:
    return "\n".join(f"{name}:\n" + "\n".join(lines) + "\n" for name, lines in parts.items())


def _swap(text: str) -> str:
    return text.replace("True)", "\0").replace("False)", "True)").replace("\0", "False)")


def mutate(program: str, kinds: list[str]) -> str:
    """The correct program with the given mistakes made (each where it bites: the query's predicate)."""
    parts = {name: list(lines) for name, lines in sections(program).items()}
    query = parts.get("Query", [""])[0]
    predicate = query.split("(")[0]
    concludes = [i for i, rule in enumerate(parts.get("Rules", [])) if f">>> {predicate}(" in rule]
    for kind in kinds:
        rules = parts.setdefault("Rules", [])
        if kind == "negation":
            for i in concludes:
                head, _, tail = rules[i].partition(">>>")
                rules[i] = f"{head}>>>{_swap(tail)}"
        elif kind == "scope":
            for i in concludes:
                rules[i] = rules[i].replace("$x", "Someone")
        elif kind == "fact" and parts.get("Facts"):
            parts["Facts"] = parts["Facts"][1:]
        elif kind == "section" and parts.get("Facts"):
            rules.insert(0, parts["Facts"][0])
            parts["Facts"] = parts["Facts"][1:]
        elif kind == "query":
            parts["Query"] = [_swap(line) for line in parts.get("Query", [])]
    return _render(parts)


def compare(program: str, reference: str) -> list[tuple[str, str]]:
    """The differences between a program and a correct one, each as (kind, evidence)."""
    mine, right = sections(program), sections(reference)
    found: list[tuple[str, str]] = []
    if mine.get("Query") != right.get("Query"):
        found.append(("query", f"the query is {mine.get('Query')} where it should be {right.get('Query')}"))
    for fact in right.get("Facts", []):
        if fact in mine.get("Facts", []):
            continue
        if fact in mine.get("Rules", []):
            found.append(("section", f"the fact {fact} is written under Rules:"))
        else:
            found.append(("fact", f"the fact {fact} is missing"))
    extra = [rule for rule in mine.get("Rules", []) if rule not in right.get("Rules", [])
             and rule not in right.get("Facts", [])]
    for rule in right.get("Rules", []):
        if rule in mine.get("Rules", []):
            continue
        head, _, tail = rule.partition(">>>")
        if f"{head}>>>{_swap(tail)}" in extra:
            found.append(("negation", f"the rule {rule} is written with the opposite truth value"))
        elif rule.replace("$x", "Someone") in extra:
            found.append(("scope", f"the rule {rule} is written for one individual, not for every x"))
        else:
            found.append(("rule", f"the rule {rule} is missing"))
    return found


def program_pairs(data_dir: Path) -> dict[str, str]:
    """Problem id -> a correct program (the released gpt-4 program or its flipped query, whichever the
    real solver says gives the gold answer); problems with neither are left out. These are Logic-LM's
    released programs, not a model's, so they run here in-process (as the optimiser tests' scripted
    model runs them); every program the simulated model writes runs in the pipeline's worker pool."""
    spec = get_dataset("prontoqa")
    problems = {p.id: p for p in load_problems(spec, "dev", data_dir)}
    released = json.loads((data_dir / "programs" / "ProntoQA_dev_gpt-4.json").read_text())
    correct = {}
    for record in released:
        pid = record["id"]
        if not record.get("raw_logic_programs") or pid not in problems:
            continue
        pair = (record["raw_logic_programs"][0], mutate(record["raw_logic_programs"][0], ["query"]))
        right = [map_answer(execute_task({"solver": "lp", "program": text}).verdict, problems[pid].options,
                            spec.closed_world) == problems[pid].answer for text in pair]
        if right[0] != right[1]:
            correct[pid] = pair[0] if right[0] else pair[1]
    return correct


# The simulated model

class SimulatedModel:
    def __init__(self, correct: dict[str, str], seed: int, noise: bool):
        self.correct, self.seed, self.noise = correct, seed, noise
        self.lock = threading.Lock()
        self.sent: Counter[str] = Counter()
        self.by_problem: Counter[str] = Counter()
        self.unrecognised = 0

    def __call__(self, body: dict) -> str:
        meta = body.get("_logicpipe", {})
        purpose, problem = meta.get("purpose", ""), meta.get("problem", "")
        with self.lock:
            self.sent[purpose] += 1
            self.by_problem[problem] += 1
        text = "\n".join(m.get("content", "") for m in body.get("messages", []))
        if purpose == "formulate":
            return self.formulate(problem, text)
        if purpose == "loss":
            return self.judge(problem, text)
        if purpose == "gradient":
            if "Step: formulate." not in text:
                return "No change needed: this step did what its input allowed."
            named = _TAG.findall(text.split("Critique:", 1)[-1].split("\n\nStep:", 1)[0])
            if not named:
                return "No change needed."
            return "The formulate prompt should prevent: " + "; ".join(f"[{kind}]" for kind in dict.fromkeys(named))
        if purpose == "optimize":
            return self.rewrite(text)
        return "I cannot help with this."

    def mistakes(self, problem: str, prompt: str) -> list[str]:
        return [kind for kind in KINDS
                if _unit(self.seed, problem, kind) < (FIXED if FIX[kind] in prompt else BASE[kind])]

    def formulate(self, problem: str, prompt: str) -> str:
        if problem not in self.correct:
            return "I cannot translate this problem."
        kinds = self.mistakes(problem, prompt)
        if _unit(self.seed, problem, hashlib.sha256(prompt.encode()).hexdigest()) < SLIP and "query" not in kinds:
            kinds.append("query")
        return mutate(self.correct[problem], kinds)

    def judge(self, problem: str, text: str) -> str:
        right = "the answer is correct" in text
        if self.noise:
            draw = random.Random(f"{self.seed}:{problem}:{hashlib.sha256(text.encode()).hexdigest()}")
            found = [(kind, "something is off here") for kind in draw.sample(ALL_KINDS, draw.choice((1, 2)))]
        else:
            program = _PROGRAM.search(text)
            found = compare(program.group(1), self.correct[problem]) if program and problem in self.correct else []
        critique = ("Compared with a correct program: " + "; ".join(f"[{kind}] {why}" for kind, why in found)
                    if found else "The program matches a correct one.")
        return json.dumps({"score": 9 if right and not found else 6 if right else 2, "critique": critique})

    def rewrite(self, text: str) -> str:
        component, current, whole = _COMPONENT.search(text), _CURRENT.search(text), _WHOLE.search(text)
        if component is None or current is None or whole is None:
            with self.lock:
                self.unrecognised += 1
            return "I cannot read this request."
        now, feedback = current.group(1), current.group(2)
        feedback, _, tried = feedback.partition("\n\nRewrites already tried")
        counts = Counter(_TAG.findall(feedback))
        open_kinds = [kind for kind, _ in counts.most_common()
                      if FIX[kind] not in whole.group(1) and FIX[kind] not in tried]
        if not open_kinds:
            return now  # nothing named that it can act on: the rewrite changes nothing (and is rejected)
        return apply_edit(component.group(1), now, FIX[open_kinds[0]])


def apply_edit(component: str, now: str, sentence: str) -> str:
    """A component with one sentence added, in that component's own form."""
    if component == "principles":
        return f"{now}\n- {sentence}" if now else f"- {sentence}"
    if component == "demonstrations":
        demo = (f"Example.\nNote: {sentence}\nContext: Every yumpus is not bright. Sam is a yumpus.\n"
                f"Question: Is the following statement true or false? Sam is bright.\nProgram:\n{DEMO_PROGRAM}")
        return f"{now}\n\n{demo}" if now else demo
    if component == "format":
        return f"{now}\n{sentence}"
    return f"{now} {sentence}"


# The arms

def _config(args: argparse.Namespace, url: str, seed: int, out: Path) -> OptimizeConfig:
    return OptimizeConfig(dataset="prontoqa", data_dir=args.data_dir, model="simulated", base_url=url,
                          steps=args.steps, batch_size=args.batch_size, limit_val=args.val, limit_test=args.test,
                          seed=seed, workers=args.workers, z=args.z, candidates=args.candidates, out=out)


def loop_arm(name: str, correct: dict[str, str], args: argparse.Namespace, seed: int, out: Path) -> dict:
    """The shipped loop (informed, or with noise for critiques)."""
    model = SimulatedModel(correct, seed, noise=name == "noise")
    with FakeOpenAI(model) as server:
        config = _config(args, server.url, seed, out / f"{name}-{seed}")
        test_ids = set(make_splits(config).test)
        result = optimize(config)
    if model.unrecognised:
        raise SystemExit(f"error: {model.unrecognised} rewrite requests were not in the layout this benchmark "
                         "reads (whole prompt / Component to rewrite / Current text / Feedback)")
    assert result.test is not None and result.test.start is not None and result.test.best is not None, result.test
    spent, curve = 0, []
    for step in result.steps:
        spent += step.calls - step.cached_calls
        curve.append((spent, step.val_score or 0.0))
    # The requests the optimisation sent: all but the test part's.
    budget = sum(model.sent.values()) - sum(count for pid, count in model.by_problem.items() if pid in test_ids)
    return {"gain": result.test.best - result.test.start, "start": result.test.start, "best": result.test.best,
            "budget": budget, "curve": curve, "accepted": sum(c.status == "accepted" for c in result.candidates)}


def random_arm(correct: dict[str, str], args: argparse.Namespace, seed: int, out: Path, budget: int) -> dict:
    """Random search on `budget` model calls: candidates (one call each) and their validation only."""
    model = SimulatedModel(correct, seed, noise=False)
    draw = random.Random(f"random-search:{seed}")
    with FakeOpenAI(model) as server:
        config = _config(args, server.url, seed, out / f"random-{seed}")
        splits = make_splits(config)
        spec = config.spec
        state = OptimizeState(config.out)
        start = PromptParams.from_prompt_set(PromptSet(None), prompt_ids(spec.prompt, spec.solver))
        structure = Structure()
        val_tag, test_tag = batch_tag("val", splits.val), batch_tag("test", splits.test)

        def scores(params: PromptParams, split: str, split_ids: list[str], tag: str) -> dict[str, float]:
            folder = state.save_prompts(params, structure)
            traces = forward(config, folder, params.hash, structure, split, split_ids, tag)
            return {t.outcome.id: float(t.outcome.correct) for t in traces}

        def spent() -> int:
            return sum(model.sent.values()) + proposals

        proposals, accepted = 0, 0
        current, current_scores = start, scores(start, splits.val_split, splits.val, val_tag)
        curve = [(spent(), sum(current_scores.values()) / len(current_scores))]
        components = [c for p, c in targets(start, spec.prompt, spec.solver) if p == spec.prompt]
        repertoire = list(FIX.values())
        while spent() + 1 + len(splits.val) <= budget:
            component, sentence = draw.choice(components), draw.choice(repertoire)
            proposals += 1  # the call that would write the candidate
            text = apply_edit(component, current.component(spec.prompt, component), sentence)
            candidate = current.with_component(spec.prompt, component, text)
            if candidate.hash == current.hash or check_candidate(current, candidate, spec.prompt, spec.solver):
                curve.append((spent(), curve[-1][1]))
                continue
            new_scores = scores(candidate, splits.val_split, splits.val, val_tag)
            ids = sorted(current_scores)
            if accept(paired([new_scores[i] for i in ids], [current_scores[i] for i in ids]), config.z):
                current, current_scores, accepted = candidate, new_scores, accepted + 1
            curve.append((spent(), sum(current_scores.values()) / len(current_scores)))
        used = spent()
        test_start = scores(start, splits.test_split, splits.test, test_tag)
        test_best = scores(current, splits.test_split, splits.test, test_tag)
    start_acc = sum(test_start.values()) / len(test_start)
    best_acc = sum(test_best.values()) / len(test_best)
    return {"gain": best_acc - start_acc, "start": start_acc, "best": best_acc, "budget": used, "curve": curve,
            "accepted": accepted}


# Summaries

def interval(values: list[float]) -> tuple[float, float, float]:
    """Mean and its 95% Student t interval over seeds."""
    mean = statistics.fmean(values)
    if len(values) < 2:
        return mean, mean, mean
    half = _T95.get(len(values) - 1, 2.0) * statistics.stdev(values) / len(values) ** 0.5
    return mean, mean - half, mean + half


def at_fraction(curve: list[tuple[int, float]], fraction: float) -> float:
    """The current state's validation score once `fraction` of the arm's calls were spent."""
    limit = curve[-1][0] * fraction
    return [score for calls, score in curve if calls <= limit][-1] if curve[0][0] <= limit else curve[0][1]


def one_seed(correct: dict[str, str], args: argparse.Namespace, seed: int, out: Path) -> dict[str, dict]:
    """The three arms on one seed (random search on the informed arm's calls)."""
    informed = loop_arm("informed", correct, args, seed, out)
    noise = loop_arm("noise", correct, args, seed, out)
    return {"informed": informed, "random": random_arm(correct, args, seed, out, informed["budget"]), "noise": noise}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data-dir", type=Path, default=None)
    parser.add_argument("--seeds", type=int, default=10, help="seeds 0..N-1, one run of each arm per seed")
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--batch-size", type=int, default=4)
    parser.add_argument("--val", type=int, default=30, help="validation problems")
    parser.add_argument("--test", type=int, default=40, help="test problems")
    parser.add_argument("--z", type=float, default=2.0, help="the acceptance test's standard errors")
    parser.add_argument("--candidates", type=int, default=2, help="the loop's --candidates (raced per step)")
    parser.add_argument("--workers", type=int, default=2, help="solver worker processes per run")
    parser.add_argument("--jobs", type=int, default=1, help="seeds run at once, each in its own process")
    parser.add_argument("--out", type=Path, default=None, help="keep the runs here (default: a temporary folder)")
    args = parser.parse_args()
    use_shared_data()  # a fresh shell finds ../shared/logic-lm as `make` does
    root = data_root(args.data_dir)
    if root is None:
        raise SystemExit("error: give --data-dir or set LOGICPIPE_DATA to the Logic-LM data directory")
    args.data_dir = root
    started = time.monotonic()
    correct = program_pairs(root)
    print(f"simulated model: {len(correct)} ProntoQA problems with a correct program; mistakes "
          + ", ".join(f"{kind} {BASE[kind]}" for kind in KINDS) + f" ({FIXED} once the prompt states the fix), "
          f"slip {SLIP}")
    print(f"per seed: {args.steps} steps, batch {args.batch_size}, {args.val} validation and {args.test} test "
          f"problems, --z {args.z}, --candidates {args.candidates}; random search gets the informed arm's calls")
    arms = ("informed", "random", "noise")
    results: dict[str, list[dict]] = {arm: [] for arm in arms}
    with tempfile.TemporaryDirectory() as scratch:
        out = args.out or Path(scratch)
        print(f"\n{'seed':>4} | " + " | ".join(f"{arm + ' start->best (gain)':<32}" for arm in arms)
              + " | calls " + "/".join(arms))
        # Seeds are independent runs (own folders, servers and caches): --jobs runs several at once.
        with ProcessPoolExecutor(max_workers=args.jobs) as pool:
            futures = {seed: pool.submit(one_seed, correct, args, seed, out) for seed in range(args.seeds)}
            for seed, future in futures.items():
                row = future.result()
                for arm in arms:
                    results[arm].append(row[arm])
                cells = [f"{r['start']:.3f} -> {r['best']:.3f} ({r['gain']:+.3f}) acc {r['accepted']}"
                         for r in row.values()]
                print(f"{seed:>4} | " + " | ".join(f"{c:<32}" for c in cells) + " | "
                      + "/".join(str(row[arm]["budget"]) for arm in arms), flush=True)
    print(f"\ntest-split gain (best - start) over {args.seeds} seeds, mean and 95% t interval:")
    print("| arm | mean gain | 95% interval | mean accepted | mean calls |")
    print("|---|---|---|---|---|")
    for arm in arms:
        mean, low, high = interval([r["gain"] for r in results[arm]])
        print(f"| {arm} | {mean:+.3f} | {low:+.3f} to {high:+.3f} | "
              f"{statistics.fmean(r['accepted'] for r in results[arm]):.1f} | "
              f"{statistics.fmean(r['budget'] for r in results[arm]):.0f} |")
    for other in ("random", "noise"):
        mean, low, high = interval([a["gain"] - b["gain"] for a, b in zip(results["informed"], results[other],
                                                                           strict=True)])
        print(f"informed - {other}, paired by seed: {mean:+.3f} (95% interval {low:+.3f} to {high:+.3f})")
    fractions = (0.0, 0.25, 0.5, 0.75, 1.0)
    print("\nlearning curve: mean validation score of the current state after a share of the calls")
    print("| arm | " + " | ".join(f"{int(f * 100)}%" for f in fractions) + " |")
    print("|---|" + "---|" * len(fractions))
    for arm in arms:
        print(f"| {arm} | " + " | ".join(f"{statistics.fmean(at_fraction(r['curve'], f) for r in results[arm]):.3f}"
                                        for f in fractions) + " |")
    print(f"\ntotal {time.monotonic() - started:.1f} s")


if __name__ == "__main__":
    main()
