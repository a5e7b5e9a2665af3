"""Fact validation (the seed's second mode): answer -> atomic claims -> goals -> one verdict per claim.

A claim is True (with its proof tree), "not derivable" (false, or missing from the KB: backward
chaining cannot tell the two apart), "unknown" (the search did not finish), or "untranslatable". An answer is valid only if every claim is True.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from ..core.errors import LogicPipeError, ProgramParseError
from ..core.records import Usage
from ..llm import LLMError, Request
from .flow import Flow, Input, Settings, add_usage, prompt
from .knowledge import NOT_DERIVABLE, UNKNOWN, KnowledgeBase, Percept

TRUE, NOT_DERIVABLE_VERDICT, UNTRANSLATABLE = "true", "not derivable", "untranslatable"
UNKNOWN_VERDICT = "unknown"  # the search did not finish (a limit, an error, a refused call): not false


class Claim(BaseModel):
    model_config = ConfigDict(extra="forbid")
    claim: str
    goal: str | None = None
    verdict: str
    reason: str = ""
    proof: dict[str, Any] | None = None  # the first solution's tree, or the explored tree when it failed


class ValidateRecord(BaseModel):
    model_config = ConfigDict(extra="forbid")
    id: str
    answer: str
    percepts: list[str] = Field(default_factory=list)  # the real-time values the proofs saw
    claims: list[Claim] = Field(default_factory=list)
    valid: bool = False
    error: str | None = None
    usage: Usage = Field(default_factory=Usage)


def judge(kb: KnowledgeBase, claim: str, goal: str | None, percepts: Sequence[Percept] = ()) -> Claim:
    """The deterministic part: one claim and its goal to a verdict."""
    if not goal or not goal.strip():
        return Claim(claim=claim, goal=None, verdict=UNTRANSLATABLE, reason="no goal over the KB's predicates")
    try:
        result = kb.prove(goal, percepts)
    except ProgramParseError as exc:  # unreadable, or calls what it may not: not a goal over the KB
        return Claim(claim=claim, goal=goal, verdict=UNTRANSLATABLE, reason=str(exc))
    except LogicPipeError as exc:  # the engine failed or timed out: the search did not finish
        return Claim(claim=claim, goal=goal, verdict=UNKNOWN_VERDICT, reason=str(exc))
    if result["proved"]:
        return Claim(claim=claim, goal=result["goal"], verdict=TRUE, proof=result["solutions"][0]["tree"])
    if result["status"] == UNKNOWN:
        return Claim(claim=claim, goal=result["goal"], verdict=UNKNOWN_VERDICT, reason=result["reason"])
    return Claim(claim=claim, goal=result["goal"], verdict=NOT_DERIVABLE_VERDICT, reason=NOT_DERIVABLE,
                 proof=result.get("explored"))


def parse_claims(text: str) -> list[tuple[str, str | None]]:
    start, end = text.find("["), text.rfind("]")
    try:
        items = json.loads(text[start:end + 1]) if start >= 0 and end > start else None
    except json.JSONDecodeError:
        items = None
    if not isinstance(items, list) or not all(isinstance(i, dict) and isinstance(i.get("claim"), str)
                                              and isinstance(i.get("goal"), (str, type(None))) for i in items):
        raise ValueError("the reply is not a JSON list of {\"claim\": ..., \"goal\": ...} objects")
    return [(i["claim"], i["goal"]) for i in items]


def validate_flow(kb: KnowledgeBase, item: Input, settings: Settings, words: dict[str, str]) -> Flow:
    record = ValidateRecord(id=item.id, answer=item.text, percepts=[str(p) for p in [*kb.percepts, *item.percepts]])
    reply = yield Request("", prompt("claims", answer=item.text, **words), settings.temperature,
                          settings.max_tokens, purpose="kb-claims", problem=item.id)
    add_usage(record.usage, reply)
    if isinstance(reply, LLMError):
        record.error = f"kb-claims: {reply}"
        return record
    try:
        pairs = parse_claims(reply.text)
    except ValueError as exc:
        record.error = f"kb-claims: {exc}"
        return record
    record.claims = [judge(kb, claim, goal, item.percepts) for claim, goal in pairs]
    record.valid = bool(record.claims) and all(c.verdict == TRUE for c in record.claims)
    return record
