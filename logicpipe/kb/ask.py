"""Context gathering (the seed's first mode): question -> goals -> proofs -> context -> grounded answer."""

from __future__ import annotations

import json
from typing import Any

from pydantic import Field

from ..core.errors import LogicPipeError
from ..core.records import stage_error
from ..llm import LLMError, Request
from ..prompts import PromptSet
from .flow import Flow, Input, KBRecord, Settings, add_usage, code_block, read_goals
from .knowledge import KnowledgeBase
from .outcome import status
from .render import context_sentences
from .terms import show

CANNOT_ADDRESS = "The knowledge base cannot address this question"
TEMPLATES = ("kb-goals", "kb-context", "kb-answer")  # what ask reads (kb-context only with --context model)


class AskRecord(KBRecord):
    question: str = ""
    goals: list[str] = Field(default_factory=list)
    rejected: list[str] = Field(default_factory=list)  # goals that failed to parse or may not run, with why
    results: list[dict[str, Any]] = Field(default_factory=list)  # per goal: status, solutions (bindings, tree)
    context: str = ""
    answer: str = ""
    addressed: bool = False


def vocabulary(kb: KnowledgeBase) -> dict[str, str]:
    signatures = "\n".join(f"- {p.signature}" for p in kb.predicates)
    signatures += "".join(f"\n- {p.name}/1 (current value, a percept)" for p in kb.percepts
                          if (p.name, 1) not in {(q.name, q.arity) for q in kb.predicates})
    return {"signatures": signatures, "facts": "\n".join(kb.sample_facts())}


def ask_flow(kb: KnowledgeBase, item: Input, settings: Settings, context_mode: str,
             words: dict[str, str], prompts: PromptSet) -> Flow:
    record = AskRecord(id=item.id, question=item.text, percepts=[str(p) for p in [*kb.percepts, *item.percepts]])

    def request(purpose: str, **values: str) -> Request:
        return Request("", prompts.get(purpose).render(**values), settings.temperature, settings.max_tokens,
                       purpose=purpose, problem=item.id)

    reply = yield request("kb-goals", question=item.text, **words)
    add_usage(record.usage, reply)
    if isinstance(reply, LLMError):
        record.error = stage_error(reply)
        return record
    body = code_block(reply.text).strip()
    if body.upper().rstrip(".") == "UNANSWERABLE" or not body:
        record.answer = f"{CANNOT_ADDRESS}: its predicates cannot express it."
        return record
    terms, record.rejected = read_goals(body, kb.read)
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
    # The model answering sees the real-time values the proofs used, not only their consequences.
    now = f"Current values: {'; '.join(record.percepts)}." if record.percepts else ""
    if context_mode == "model":
        brief = json.dumps({"current_values": record.percepts, "results": _brief(record.results)}, indent=1)
        reply = yield request("kb-context", results=brief)
        add_usage(record.usage, reply)
        if isinstance(reply, LLMError):
            record.error = stage_error(reply)
            return record
        sentences = [reply.text.strip()]
    else:
        sentences = [s for result in record.results for s in context_sentences(result)]
    record.context = "\n".join([now, *sentences] if now else sentences)
    reply = yield request("kb-answer", question=item.text, context=record.context)
    add_usage(record.usage, reply)
    if isinstance(reply, LLMError):
        record.error = stage_error(reply)
        return record
    record.answer = reply.text.strip()
    return record


def _brief(results: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """What the context model sees: goals, verdicts, bindings and trees, without the failed exploration."""
    return [{"goal": r["goal"], "status": status(r), "solutions": r["solutions"]} for r in results]
