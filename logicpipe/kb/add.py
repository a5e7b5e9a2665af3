"""`kb add`: a statement becomes facts of the KB's own predicates; written only when asked, and kept
only if the KB still loads afterwards."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from ..core.errors import UsageError
from ..llm import LLMError, Request
from .flow import Flow, Settings, code_block, prompt, read_goals
from .knowledge import KnowledgeBase
from .terms import Atom, Compound, Term, ground, parse_goals, show


@dataclass
class Addition:
    facts: list[str] = field(default_factory=list)
    rejected: list[str] = field(default_factory=list)
    error: str | None = None


def check_facts(kb: KnowledgeBase, text: str) -> Addition:
    """Ground facts of predicates the KB defines are kept; anything else is rejected with why."""
    addition = Addition()
    body = code_block(text).strip()
    if body.upper().rstrip(".") == "NONE" or not body:
        addition.error = "the statement cannot be written with the KB's predicates"
        return addition
    terms, addition.rejected = read_goals(body)
    known = {(p.name, p.arity) for p in kb.predicates}
    for term in terms:
        why = _not_a_fact(term, known)
        (addition.rejected if why else addition.facts).append(f"{show(term)} -- {why}" if why else show(term))
    return addition


def _not_a_fact(term: Term, known: set[tuple[str, int]]) -> str:
    if not isinstance(term, (Atom, Compound)):
        return "not a fact"
    key = (term.name, len(term.args) if isinstance(term, Compound) else 0)
    if key in {(",", 2), (";", 2), ("->", 2), ("\\+", 1)}:
        return "not a single fact"
    if key not in known:
        return f"{key[0]}/{key[1]} is not a predicate of the KB"
    if not ground(term):
        return "a fact must not contain variables"
    return ""


def add_flow(kb: KnowledgeBase, statement: str, settings: Settings, words: dict[str, str]) -> Flow:
    reply = yield Request("", prompt("add", statement=statement, **words), settings.temperature,
                          settings.max_tokens, purpose="kb-add", problem="add")
    if isinstance(reply, LLMError):
        return Addition(error=f"kb-add: {reply}")
    return check_facts(kb, reply.text)


def append_facts(kb: KnowledgeBase, target: Path, facts: list[str]) -> None:
    """Insert each fact after the last clause of its predicate when that clause is a one-line fact in
    `target` (no discontiguous warning), else at the end; restore the file if the KB no longer loads."""
    original = target.read_text()
    lines = original.splitlines()
    after: dict[int, list[str]] = {}
    tail: list[str] = []
    where = {(p.name, p.arity): p for p in kb.predicates}
    for fact in facts:
        term = parse_goals(fact)[0]
        key = (term.name, len(term.args)) if isinstance(term, Compound) else (show(term), 0)
        predicate = where[key]
        line = predicate.last_line
        if Path(predicate.file) == target and 0 < line <= len(lines) and lines[line - 1].rstrip().endswith("."):
            after.setdefault(line, []).append(fact + ".")
        else:
            tail.append(fact + ".")
    out: list[str] = []
    for number, text in enumerate(lines, start=1):
        out.append(text)
        out.extend(after.get(number, []))
    out.extend(tail)
    target.write_text("\n".join(out) + "\n")
    with KnowledgeBase(kb.path, kb.limits) as reloaded:
        if reloaded.errors:
            target.write_text(original)
            raise UsageError(f"the KB would no longer load ({reloaded.errors[0]}); {target} is unchanged")
