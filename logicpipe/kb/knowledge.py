"""A loaded knowledge base: its predicates, load messages, percepts, and checked proofs of goals."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..core.errors import ProgramParseError, UsageError
from .prolog import PrologProcess, ProofLimits
from .safety import check_goal
from .terms import Term, canonical, ground, parse_goals, parse_term, show

NOT_DERIVABLE = "not derivable: false, or missing from the KB"
# The three verdicts of a proof: the goal holds, the search finished without an answer, or it did not
# finish (a limit, an error such as an undefined procedure, a refused call). Unknown is never false.
PROVED, FAILED, UNKNOWN = "proved", "failed", "unknown"


@dataclass
class Predicate:
    name: str
    arity: int
    clauses: int
    file: str
    dynamic: bool
    last_line: int = 0  # line of its last clause in `file`, where new facts go
    tabled: bool = False  # by the KB's `:- table` or automatically (see KnowledgeBase.auto_tabled)

    @property
    def signature(self) -> str:
        return f"{self.name}/{self.arity}"


@dataclass
class LoadMessage:
    kind: str
    file: str
    line: int
    message: str

    def __str__(self) -> str:
        text = self.message
        # SWI-Prolog's own text repeats the location; show ours once.
        text = re.sub(r"^\S+:\d+:(\d+:)?\s*", "", text)
        return f"{self.file}:{self.line}: {self.kind}: {' '.join(text.split())}"


def kb_files(path: Path) -> list[tuple[Path, str]]:
    """A KB is a .pl file, or a folder whose .pl files are loaded in name order."""
    if path.is_dir():
        files = sorted(path.glob("*.pl"))
        if not files:
            raise UsageError(f"{path}: no .pl files in this folder")
        return [(f, str(f)) for f in files]
    if not path.is_file():
        raise UsageError(f"{path}: no such knowledge-base file")
    return [(path, str(path))]


@dataclass
class Percept:
    name: str
    value: Term

    def wire(self) -> dict[str, str]:
        return {"name": self.name, "value": canonical(self.value)}

    def __str__(self) -> str:
        return f"{self.name} = {show(self.value)}"


def parse_percept(text: str, where: str = "--percept") -> Percept:
    """`name=value`, the seed's `p_weather = sunny`: asserted as the fact name(value) before proving."""
    name, sep, value = text.partition("=")
    name = name.strip()
    if not sep or not re.fullmatch(r"[a-z]\w*", name):
        raise UsageError(f"{where}: expected name=value with a lowercase name, got {text!r}")
    try:
        term = parse_term(value)
    except ProgramParseError as exc:
        raise UsageError(f"{where}: bad value {value.strip()!r}: {exc}") from None
    if not ground(term):
        raise UsageError(f"{where}: the value of {name} must be a ground term, got {value.strip()!r}")
    return Percept(name, term)


def read_percepts(path: Path) -> list[Percept]:
    """One `name = value` per line; blank lines and lines starting with % or # are skipped."""
    if not path.is_file():
        raise UsageError(f"{path}: no such percepts file")
    percepts = []
    for number, line in enumerate(path.read_text().splitlines(), start=1):
        if line.strip() and not line.lstrip().startswith(("%", "#")):
            percepts.append(parse_percept(line, f"{path}:{number}"))
    return percepts


@dataclass
class KnowledgeBase:
    path: Path
    limits: ProofLimits = field(default_factory=ProofLimits)
    percepts: list[Percept] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.process = PrologProcess(kb_files(self.path), self.limits)
        loaded = self.process.loaded
        self.messages = [LoadMessage(**m) for m in loaded["messages"]]
        self.predicates = [Predicate(**p) for p in loaded["predicates"]]
        # Left-recursive predicates tabled by the engine so that they terminate with complete answers.
        self.auto_tabled: list[str] = loaded["tabled"]
        # Operators the KB declares (priority, type, name): goals may use them as the KB does.
        self.operators: list[tuple[int, str, str]] = [(p, t, n) for p, t, n in loaded["operators"]]
        self.allowed = {(p.name, p.arity) for p in self.predicates} | {(p.name, 1) for p in self.percepts}

    @property
    def errors(self) -> list[LoadMessage]:
        return [m for m in self.messages if m.kind == "error"]

    def require_clean(self) -> None:
        if self.errors:
            raise UsageError(f"the KB does not load: {self.errors[0]}"
                             + (f" (and {len(self.errors) - 1} more errors)" if len(self.errors) > 1 else ""))

    def check(self, text: str, percepts: Sequence[Percept] = ()) -> Term:
        """Parse one goal and check every called predicate; raises ProgramParseError/GoalRejected."""
        goals = parse_goals(text, self.operators)
        if len(goals) != 1:
            raise ProgramParseError(f"expected one goal, found {len(goals)}", text=text)
        self.check_term(goals[0], percepts)
        return goals[0]

    def check_term(self, term: Term, percepts: Sequence[Percept] = ()) -> None:
        """`percepts` add to (and override) the KB's own, for this goal only."""
        check_goal(term, self.allowed | {(p.name, 1) for p in percepts})

    def prove(self, text: str, percepts: Sequence[Percept] = ()) -> dict[str, Any]:
        """A JSON-ready result (see prove_term)."""
        return self.prove_term(self.check(text, percepts), percepts)

    def prove_term(self, term: Term, percepts: Sequence[Percept] = ()) -> dict[str, Any]:
        """{"goal", "status": proved|failed|unknown, "proved": status == proved, "solutions": [{bindings,
        tree}], "truncated": more solutions may exist than shown} plus, when they apply, "reason" (why
        the search did not finish: always there for unknown, and for a proved goal whose solution list a
        limit cut), "limit" (time, inferences or memory) and "explored" (the tree of a failed search)."""
        reply = self.process.prove(canonical(term), [p.wire() for p in [*self.percepts, *percepts]])
        result: dict[str, Any] = {"goal": show(term, self.operators), "status": reply["status"],
                                  "proved": reply["status"] == PROVED, "solutions": reply["solutions"],
                                  "truncated": reply["truncated"]}
        for key in ("reason", "limit", "explored"):
            if reply.get(key) is not None:
                result[key] = reply[key]
        return result

    def sample_facts(self, per_predicate: int = 3) -> list[str]:
        """A few facts per predicate, as vocabulary for prompts."""
        return self.process.request({"op": "facts", "per_predicate": per_predicate})["facts"]

    def close(self) -> None:
        self.process.close()

    def __enter__(self) -> KnowledgeBase:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
