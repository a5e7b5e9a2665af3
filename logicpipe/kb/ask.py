"""Context gathering (the seed's first mode): question -> goals -> proofs -> context -> grounded answer."""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from ..core.errors import LogicPipeError
from ..core.records import Usage
from ..llm import LLMError, Request
from .flow import Flow, Input, Settings, add_usage, code_block, prompt, read_goals
from .knowledge import KnowledgeBase
from .render import context_sentences
from .terms import show

CANNOT_ADDRESS = "The knowledge base cannot address this question"


class AskRecord(BaseModel):
    model_config = ConfigDict(extra="forbid")
    id: str
    question: str
    percepts: list[str] = Field(default_factory=list)  # the real-time values the proofs saw
    goals: list[str] = Field(default_factory=list)
    rejected: list[str] = Field(default_factory=list)  # goals that failed to parse or may not run, with why
    results: list[dict[str, Any]] = Field(default_factory=list)  # per goal: proved, solutions (bindings, tree)
    context: str = ""
    answer: str = ""
    addressed: bool = False
    error: str | None = None
    usage: Usage = Field(default_factory=Usage)


def vocabulary(kb: KnowledgeBase) -> dict[str, str]:
    signatures = "\n".join(f"- {p.signature}" for p in kb.predicates)
    signatures += "".join(f"\n- {p.name}/1 (current value, a percept)" for p in kb.percepts
                          if (p.name, 1) not in {(q.name, q.arity) for q in kb.predicates})
    return {"signatures": signatures, "facts": "\n".join(kb.sample_facts())}


def ask_flow(kb: KnowledgeBase, item: Input, settings: Settings, context_mode: str,
             words: dict[str, str]) -> Flow:
    record = AskRecord(id=item.id, question=item.text, percepts=[str(p) for p in [*kb.percepts, *item.percepts]])

    def request(purpose: str, messages: list[dict[str, str]]) -> Request:
        return Request("", messages, settings.temperature, settings.max_tokens, purpose=purpose, problem=item.id)

    reply = yield request("kb-goals", prompt("goals", question=item.text, **words))
    add_usage(record.usage, reply)
    if isinstance(reply, LLMError):
        record.error = f"kb-goals: {reply}"
        return record
    body = code_block(reply.text).strip()
    if body.upper().rstrip(".") == "UNANSWERABLE" or not body:
        record.answer = f"{CANNOT_ADDRESS}: its predicates cannot express it."
        return record
    terms, record.rejected = read_goals(body, kb.operators)
    for term in terms:
        record.goals.append(show(term, kb.operators))
        try:
            kb.check_term(term, item.percepts)
            record.results.append(kb.prove_term(term, item.percepts))
        except LogicPipeError as exc:
            record.rejected.append(f"{show(term)} -- {exc}")
    if not record.results:
        record.answer = f"{CANNOT_ADDRESS}: no goal could run ({'; '.join(record.rejected)})."
        return record
    record.addressed = True
    if context_mode == "model":
        reply = yield request("kb-context", prompt("context", results=json.dumps(_brief(record.results), indent=1)))
        add_usage(record.usage, reply)
        if isinstance(reply, LLMError):
            record.error = f"kb-context: {reply}"
            return record
        record.context = reply.text.strip()
    else:
        record.context = "\n".join(s for result in record.results for s in context_sentences(result))
    reply = yield request("kb-answer", prompt("answer", question=item.text, context=record.context))
    add_usage(record.usage, reply)
    if isinstance(reply, LLMError):
        record.error = f"kb-answer: {reply}"
        return record
    record.answer = reply.text.strip()
    return record


def _brief(results: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """What the context model sees: goals, bindings and trees, without the failed exploration."""
    return [{"goal": r["goal"], "proved": r["proved"], "solutions": r["solutions"]} for r in results]
