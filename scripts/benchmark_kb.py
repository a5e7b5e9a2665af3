"""Benchmark `logicpipe kb`.

1. Proofs per second for `kb prove`'s engine, with one long-lived SWI-Prolog per worker, beside a
   baseline measured in the same run: a fresh Prolog process (start, load, prove) per proof.
2. `kb validate` on statements whose gold labels come from the KB itself (derivable facts are true;
   a wrong constant or a negated relation makes them false): precision and recall of the "true"
   verdict, first with the right goals given (the deterministic part, which must score 100%), then per
   model named with --model (each statement is sent as an answer to split and translate).
   --fake runs the model path against the local test server replying with the right goals.

usage: python scripts/benchmark_kb.py [--kb examples/kb/campus.pl] [--percepts examples/kb/now.txt]
       [--proofs 2000] [--workers 1,2] [--model NAME ... --base-url URL] [--fake] [--limit N]
"""

from __future__ import annotations

import argparse
import json
import tempfile
import threading
import time
from pathlib import Path

from logicpipe.kb.ask import vocabulary
from logicpipe.kb.flow import Input, Settings, run_flows
from logicpipe.kb.gold import Scores, Statement, statements
from logicpipe.kb.knowledge import KnowledgeBase, read_percepts
from logicpipe.kb.prolog import ProofLimits
from logicpipe.kb.validate import TRUE, UNTRANSLATABLE, ValidateRecord, judge, validate_flow
from logicpipe.llm import LLMClient, LLMSettings
from logicpipe.prompts import PromptSet

ROOT = Path(__file__).resolve().parent.parent


def goals_of(questions: Path) -> list[str]:
    return [g for line in questions.read_text().splitlines() for g in json.loads(line)["goals"]]


def proofs_per_second(kb: Path, percepts, goals: list[str], proofs: int, workers: int) -> float:
    bases = [KnowledgeBase(kb, ProofLimits(), percepts) for _ in range(workers)]
    terms = [bases[0].check(g) for g in goals]

    def work(base: KnowledgeBase, share: int) -> None:
        for index in range(share):
            base.prove_term(terms[index % len(terms)])

    threads = [threading.Thread(target=work, args=(b, proofs // workers)) for b in bases]
    start = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    wall = time.perf_counter() - start
    for base in bases:
        base.close()
    return (proofs // workers * workers) / wall


def fresh_process_per_proof(kb: Path, percepts, goals: list[str], proofs: int) -> float:
    start = time.perf_counter()
    for index in range(proofs):
        with KnowledgeBase(kb, ProofLimits(), percepts) as base:
            base.prove(goals[index % len(goals)])
    return proofs / (time.perf_counter() - start)


def score_line(name: str, scores: Scores, seconds: float) -> str:
    return (f"{name:<28}{scores.precision:>10.3f}{scores.recall:>8.3f}{scores.accuracy:>10.3f}"
            f"{scores.untranslatable:>9}{seconds:>9.1f}")


def with_model(kb: KnowledgeBase, items: list[Statement], settings: LLMSettings) -> Scores:
    scores = Scores()
    by_id = {s.id: s for s in items}
    words, options = vocabulary(kb), Settings()
    client = LLMClient(settings)

    def emit(record: ValidateRecord) -> None:
        scores.add(by_id[record.id].label, record.valid)
        scores.untranslatable += any(c.verdict == UNTRANSLATABLE for c in record.claims)

    try:
        run_flows(client, [(s.id, validate_flow(kb, Input(id=s.id, text=s.text), options, words, PromptSet())) for s in items],
                  emit)
    finally:
        client.close()
    return scores


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--kb", type=Path, default=ROOT / "examples/kb/campus.pl")
    parser.add_argument("--percepts", type=Path, default=ROOT / "examples/kb/now.txt")
    parser.add_argument("--questions", type=Path, default=ROOT / "examples/kb/questions.jsonl")
    parser.add_argument("--proofs", type=int, default=2000)
    parser.add_argument("--baseline-proofs", type=int, default=40)
    parser.add_argument("--workers", default="1,2")
    parser.add_argument("--model", action="append", default=[], help="model to score (repeatable)")
    parser.add_argument("--base-url", default=None)
    parser.add_argument("--fake", action="store_true", help="score the model path on the local test server")
    parser.add_argument("--limit", type=int, default=None, help="only the first N statements for models")
    args = parser.parse_args()
    percepts = read_percepts(args.percepts) if args.percepts else []
    goals = goals_of(args.questions)

    print(f"kb prove on {args.kb.name}: {len(goals)} goals from {args.questions.name}, cycled")
    baseline = fresh_process_per_proof(args.kb, percepts, goals, args.baseline_proofs)
    print(f"{'mode':<40}{'proofs/s':>10}{'speed-up':>10}")
    print(f"{'fresh swipl per proof (baseline)':<40}{baseline:>10.1f}{1.0:>10.1f}")
    for workers in [int(w) for w in args.workers.split(",")]:
        rate = proofs_per_second(args.kb, percepts, goals, args.proofs, workers)
        print(f"{f'long-lived swipl, {workers} worker(s)':<40}{rate:>10.1f}{rate / baseline:>10.1f}")

    with KnowledgeBase(args.kb, ProofLimits(), percepts) as kb:
        items = statements(kb)
        positives = sum(s.label for s in items)
        print(f"\nkb validate on {len(items)} statements from the KB ({positives} true, {len(items) - positives} false)")
        print(f"{'verdicts from':<28}{'precision':>10}{'recall':>8}{'accuracy':>10}{'untrans.':>9}{'wall s':>9}")
        start = time.perf_counter()
        scores = Scores()
        for item in items:
            scores.add(item.label, judge(kb, item.text, item.goal).verdict == TRUE)
        print(score_line("right goals (deterministic)", scores, time.perf_counter() - start))
        chosen = items[:args.limit] if args.limit else items
        runs = [(m, LLMSettings(model=m, base_url=args.base_url)) for m in args.model]
        if args.fake:
            from logicpipe.testing import FakeOpenAI

            gold = {s.id: s for s in chosen}

            def reply(body: dict) -> str:
                item = gold[body["_logicpipe"]["problem"]]
                return json.dumps([{"claim": item.text, "goal": item.goal}])

            with FakeOpenAI(reply) as fake, tempfile.TemporaryDirectory() as tmp:
                start = time.perf_counter()
                settings = LLMSettings(model="fake", base_url=fake.url, cache_path=Path(tmp) / "c.sqlite")
                print(score_line("test server, right goals", with_model(kb, chosen, settings),
                                 time.perf_counter() - start))
        for name, settings in runs:
            start = time.perf_counter()
            print(score_line(name, with_model(kb, chosen, settings), time.perf_counter() - start))


if __name__ == "__main__":
    main()
