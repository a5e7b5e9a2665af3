"""A scripted model for the optimiser's tests, served by FakeOpenAI: it writes ProntoQA programs whose
correctness depends on the prompt (a marker in the prompt makes every program right, a poison makes
every one wrong, and without either half the problems come out right), and gives canned losses,
gradients, rewrites and structure proposals, routed on each request's purpose."""

from __future__ import annotations

import hashlib
import json
import re
import threading
from pathlib import Path

import pytest

GOOD = "Read each negation twice (MAGIC)."
POISON = "POISON"
LOSS = json.dumps({"score": 3, "critique": "The program's query has the wrong truth value."})
GRADIENT = "The prompt should remind the model to check the truth value of the query."
_COMPONENT = re.compile(r"Component to rewrite: (\w+)")
# id -> (right program, wrong program): worked out once per test session, by running the real solver.
_PAIRS: dict[str, tuple[str, str]] = {}
_PAIRS_LOCK = threading.Lock()


def _flip(program: str) -> str:
    """The same program asking the opposite question: its answer is the other option."""
    lines = program.rstrip("\n").split("\n")
    at = max(i for i, line in enumerate(lines) if line.strip().startswith("Query")) + 1
    lines[at] = lines[at].replace("True)", "\0").replace("False)", "True)").replace("\0", "False)")
    return "\n".join(lines) + "\n"


class ScriptedOptimizer:
    def __init__(self, data_dir: Path, rewrites: dict[str, list[str]] | None = None,
                 structure: list[str] | None = None, broken: set[str] | None = None,
                 unjudged: set[str] | None = None):
        from logicpipe.data import load_problems
        from logicpipe.data.registry import get_dataset
        from logicpipe.solvers import execute_task, map_answer

        released = json.loads((data_dir / "programs" / "ProntoQA_dev_gpt-4.json").read_text())
        problems = {p.id: p for p in load_problems(get_dataset("prontoqa"), "dev", data_dir)}
        self.programs = {r["id"]: r["raw_logic_programs"][0] for r in released if r.get("raw_logic_programs")}
        self.problems = problems
        self._execute, self._map = execute_task, map_answer
        self.rewrites = {k: list(v) for k, v in (rewrites or {}).items()}
        self.structure = list(structure or [])
        self.broken = broken or set()  # problems whose programs never parse (so they go through refine)
        self.unjudged = unjudged or set()  # problems whose loss reply is prose, not the JSON asked for
        self._lock = threading.Lock()

    def pair(self, pid: str) -> tuple[str, str]:
        with _PAIRS_LOCK:  # the server answers on several threads; the solver runs here one program at a time
            if pid not in _PAIRS:
                released, flipped = self.programs[pid], _flip(self.programs[pid])
                outcome = self._execute({"solver": "lp", "program": released})
                says = self._map(outcome.verdict, self.problems[pid].options, True)
                right = says == self.problems[pid].answer
                _PAIRS[pid] = (released, flipped) if right else (flipped, released)
            return _PAIRS[pid]

    @staticmethod
    def lucky(pid: str) -> bool:
        """Without the marker, the model gets these problems right."""
        return hashlib.sha256(pid.encode()).digest()[0] % 2 == 0

    def __call__(self, body: dict) -> str:
        meta = body.get("_logicpipe", {})
        purpose, problem = meta.get("purpose", ""), meta.get("problem", "")
        text = "\n".join(m.get("content", "") for m in body.get("messages", []))
        if purpose == "formulate" and problem in self.broken:
            return "Predicates:\nthis is not a program @@@\n"
        if purpose == "formulate":
            right, wrong = self.pair(problem)
            if POISON in text:
                return wrong
            return right if GOOD in text or self.lucky(problem) else wrong
        if purpose == "refine":
            return "I cannot repair this program."
        if purpose == "loss":
            return "It looks fine to me." if problem in self.unjudged else LOSS
        if purpose == "gradient":
            return GRADIENT
        if purpose == "optimize":
            found = _COMPONENT.search(text)
            queue = self.rewrites.get(found.group(1) if found else "", [])
            with self._lock:
                return queue.pop(0) if len(queue) > 1 else (queue[0] if queue else "unchanged")
        if purpose == "structure":
            with self._lock:
                return self.structure.pop(0) if len(self.structure) > 1 else (self.structure or ["{}"])[0]
        return "I cannot help with this."


@pytest.fixture()
def scripted(data_dir):
    def make(**kwargs) -> ScriptedOptimizer:
        return ScriptedOptimizer(data_dir, **kwargs)

    return make
