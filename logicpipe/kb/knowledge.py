"""A loaded knowledge base: its predicates, load messages, percepts, and checked proofs of goals."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..core import jail
from ..core.errors import ProgramExecutionError, ProgramParseError, SolverTimeout, UsageError
from .prolog import EngineExited, PrologProcess, ProofLimits
from .safety import GoalRejected
from .terms import Term, canonical, from_postfix, ground, parse_term, show

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


def printable(text: str) -> str:
    """Text as it can be written out: a byte that was not UTF-8 (argv's surrogate escape) as \\xff, a lone
    surrogate (a model's \\ud800) as \\ud800."""
    def one(c: str) -> str:
        code = ord(c)
        if 0xDC80 <= code <= 0xDCFF:
            return f"\\x{code - 0xDC00:02x}"
        return f"\\u{code:04x}" if 0xD800 <= code <= 0xDFFF else c
    return "".join(map(one, text))


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


# Builtins that start a process. In the jail none can (seccomp refuses the fork), but SWI-Prolog's
# shell/1,2 raise the error without failing and succeed with status 0: a goal would be proved on a
# command that never ran (found by a red-team session that had not seen the code).
PROCESS_BUILTINS = {"shell/0", "shell/1", "shell/2"}


@dataclass
class KnowledgeBase:
    path: Path
    limits: ProofLimits = field(default_factory=ProofLimits)
    percepts: list[Percept] = field(default_factory=list)
    allow: tuple[str, ...] = ()  # builtins (name/arity) the KB's own rules may call for a goal (--allow)

    def __post_init__(self) -> None:
        starts = sorted(set(self.allow) & PROCESS_BUILTINS)
        if starts and jail.status().active:
            raise UsageError(f"--allow {starts[0]}: the OS jail stops every process it would start, and SWI-Prolog "
                             "then reports the command as run (exit status 0); add --no-jail to let it run")
        self.process = PrologProcess(kb_files(self.path), self.limits, self.allow)
        loaded = self.process.loaded
        refused = sorted(set(self.allow) - {f"{name}/{arity}" for name, arity in loaded["allowed"]})
        if refused:
            self.process.close()
            raise UsageError(f"--allow {refused[0]}: not a builtin predicate that can be allowed (a meta-predicate "
                             "or an unknown name)")
        self.messages = [LoadMessage(**m) for m in loaded["messages"]]
        self.predicates = [Predicate(**p) for p in loaded["predicates"]]
        # Left-recursive predicates tabled by the engine so that they terminate with complete answers.
        self.auto_tabled: list[str] = loaded["tabled"]
        # Operators the KB declares (priority, type, name): goals may use them as the KB does.
        self.operators: list[tuple[int, str, str]] = [(p, t, n) for p, t, n in loaded["operators"]]
        # Predicates whose own rules call a builtin library(sandbox) refuses: {"predicate", "calls"}.
        self.effects: list[dict[str, str]] = loaded["effects"]

    @property
    def errors(self) -> list[LoadMessage]:
        return [m for m in self.messages if m.kind == "error"]

    def require_clean(self) -> None:
        if self.errors:
            raise UsageError(f"the KB does not load: {self.errors[0]}"
                             + (f" (and {len(self.errors) - 1} more errors)" if len(self.errors) > 1 else ""))

    def read(self, text: str) -> list[Term]:
        """Goals as SWI-Prolog reads them with the KB's operators (each ended by '.', as `?-` queries are
        written; a last full stop may be left out); raises ProgramParseError with Prolog's own message."""
        try:
            text.encode("utf-8")
        except UnicodeEncodeError as exc:  # bytes that are not UTF-8 (argv, a model's \ud800 escape)
            raise ProgramParseError(f"the goal is not valid UTF-8 text (at character {exc.start + 1})",
                                    text=printable(text).strip()[:300]) from None
        source = text.strip().removeprefix("?-")
        if source.strip() and not re.search(r"\.\s*$", source):
            source += "."
        reply = self._unreadable_as_parse_error(lambda: self.process.read(source), text)
        if reply["error"] is not None:
            raise ProgramParseError(reply["error"], text=text.strip())
        return [from_postfix(items) for items in reply["terms"]]

    @staticmethod
    def _unreadable_as_parse_error(request: Callable[[], dict[str, Any]], text: str) -> dict[str, Any]:
        # A goal the engine could not take in (its C stack overflowed on a term 20,000 operators deep, it
        # timed out, it died) costs that goal alone, as a syntax error does: never the whole batch.
        try:
            return request()
        except (ProgramExecutionError, SolverTimeout) as exc:
            why = str(exc).splitlines()[0][:300]
            raise ProgramParseError(f"the engine could not take the goal in: {why}", text=text.strip()[:300]) from None

    def check(self, text: str, percepts: Sequence[Percept] = ()) -> Term:
        """Read one goal and check it as it will run; raises ProgramParseError/GoalRejected."""
        goals = self.read(text)
        if len(goals) != 1:
            raise ProgramParseError(f"expected one goal, found {len(goals)}", text=text)
        self.check_term(goals[0], percepts)
        return goals[0]

    def check_term(self, term: Term, percepts: Sequence[Percept] = ()) -> None:
        """Both layers of the sandbox, before the goal runs (they check again while it runs); `percepts`
        add to (and override) the KB's own, for this goal only."""
        names = sorted({p.name for p in [*self.percepts, *percepts]})
        reply = self._unreadable_as_parse_error(lambda: self.process.check(canonical(term), names), show(term))
        if reply["ok"]:
            return
        reason = reply["reason"]
        name = (reply["predicate"] or "").rsplit("/", 1)[0]
        known = sorted(f"{p.name}/{p.arity}" for p in self.predicates if name and p.name == name)
        hint = f" (the KB defines {', '.join(known)})" if known else ""
        raise GoalRejected(f"{reason}{hint}", text=show(term, self.operators))

    def prove(self, text: str, percepts: Sequence[Percept] = ()) -> dict[str, Any]:
        """A JSON-ready result (see prove_term)."""
        return self.prove_term(self.check(text, percepts), percepts)

    def prove_term(self, term: Term, percepts: Sequence[Percept] = ()) -> dict[str, Any]:
        """{"goal", "status": proved|failed|unknown, "proved": status == proved, "solutions": [{bindings,
        tree}], "truncated": more solutions may exist than shown} plus, when they apply, "reason" (why
        the search did not finish: always there for unknown, and for a proved goal whose solution list a
        limit cut), "limit" (time, inferences or memory) and "explored" (the tree of a failed search)."""
        try:
            reply = self.process.prove(canonical(term), [p.wire() for p in [*self.percepts, *percepts]])
        except (SolverTimeout, EngineExited) as exc:
            # The engine stopped answering (and was replaced by a fresh one) or died: no verdict either way.
            limit = "time" if isinstance(exc, SolverTimeout) else None
            reply = {"status": UNKNOWN, "solutions": [], "truncated": False, "reason": str(exc), "limit": limit}
        except ProgramExecutionError as exc:
            # The engine failed on this goal (an error outside the goal's own search): this goal is unknown,
            # and the next one runs on a fresh engine, whatever state this one was left in.
            self.process.restart()
            reply = {"status": UNKNOWN, "solutions": [], "truncated": False,
                     "reason": f"the engine failed on this goal: {str(exc).splitlines()[0][:500]}", "limit": None}
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
