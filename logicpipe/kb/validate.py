"""Fact validation (the seed's second mode): answer -> atomic claims -> goals -> one verdict per claim.

A claim is true (proved, with its proof tree), not derivable (the search finished without a proof: false,
or missing from the KB, which backward chaining cannot tell apart), unknown (a limit, an error or a
refusal stopped the search: no verdict either way) or untranslatable. An answer is valid only if every
claim is true.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from ..core.errors import LogicPipeError, ProgramParseError
from ..core.records import stage_error
from ..llm import LLMError, Request
from ..prompts import PromptSet
from .flow import Flow, Input, KBRecord, Settings, add_usage
from .knowledge import NOT_DERIVABLE, KnowledgeBase, Percept
from .outcome import reason, status

TRUE, NOT_DERIVABLE_VERDICT, UNKNOWN, UNTRANSLATABLE = "true", "not derivable", "unknown", "untranslatable"
TEMPLATES = ("kb-claims",)


class Claim(BaseModel):
    model_config = ConfigDict(extra="forbid")
    claim: str
    goal: str | None = None
    verdict: str
    reason: str = ""
    proof: dict[str, Any] | None = None  # the first solution's tree, or the explored tree when it failed


class ValidateRecord(KBRecord):
    answer: str = ""
    claims: list[Claim] = Field(default_factory=list)
    valid: bool = False


def judge(kb: KnowledgeBase, claim: str, goal: str | None, percepts: Sequence[Percept] = ()) -> Claim:
    """The deterministic part: one claim and its goal to a verdict."""
    if not goal or not goal.strip():
        return Claim(claim=claim, goal=None, verdict=UNTRANSLATABLE, reason="no goal over the KB's predicates")
    try:
        result = kb.prove(goal, percepts)
    except ProgramParseError as exc:  # unreadable, or refused by the whitelist (GoalRejected): not a KB goal
        return Claim(claim=claim, goal=goal, verdict=UNTRANSLATABLE, reason=str(exc))
    except LogicPipeError as exc:  # the prover failed on a goal it accepted: no verdict either way
        return Claim(claim=claim, goal=goal, verdict=UNKNOWN, reason=str(exc))
    verdict = status(result)
    if verdict == "proved":
        return Claim(claim=claim, goal=result["goal"], verdict=TRUE, proof=result["solutions"][0]["tree"])
    if verdict == "unknown":
        return Claim(claim=claim, goal=result["goal"], verdict=UNKNOWN, reason=reason(result),
                     proof=result.get("explored"))
    return Claim(claim=claim, goal=result["goal"], verdict=NOT_DERIVABLE_VERDICT, reason=NOT_DERIVABLE,
                 proof=result.get("explored"))


def parse_claims(text: str) -> list[tuple[str, str | None]]:
    start, end = text.find("["), text.rfind("]")
    try:
        items = json.loads(text[start:end + 1]) if start >= 0 and end > start else None
    except (json.JSONDecodeError, RecursionError):
        items = None
    if not isinstance(items, list) or not all(isinstance(i, dict) and isinstance(i.get("claim"), str)
                                              and isinstance(i.get("goal"), (str, type(None))) for i in items):
        raise ProgramParseError("the reply is not a JSON list of {\"claim\": ..., \"goal\": ...} objects")
    return [(i["claim"], i["goal"]) for i in items]


def validate_flow(kb: KnowledgeBase, item: Input, settings: Settings, words: dict[str, str],
                  prompts: PromptSet) -> Flow:
    record = ValidateRecord(id=item.id, answer=item.text, percepts=[str(p) for p in [*kb.percepts, *item.percepts]])
    reply = yield Request("", prompts.get("kb-claims").render(answer=item.text, **words), settings.temperature,
                          settings.max_tokens, purpose="kb-claims", problem=item.id)
    add_usage(record.usage, reply)
    if isinstance(reply, LLMError):
        record.error = stage_error(reply)
        return record
    try:
        pairs = parse_claims(reply.text)
    except ProgramParseError as exc:
        record.error = stage_error(exc)
        return record
    record.claims = [judge(kb, claim, goal, item.percepts) for claim, goal in pairs]
    record.valid = bool(record.claims) and all(c.verdict == TRUE for c in record.claims)
    return record
