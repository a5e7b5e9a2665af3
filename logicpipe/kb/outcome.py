"""The three verdicts of a prove result: proved, failed (the search finished without a solution) and
unknown (a limit, an error or a refusal stopped it: never read as failed). The engine reports them as
`status` and, for unknown, `reason` (see KnowledgeBase.prove_term)."""

from __future__ import annotations

from typing import Any, Literal, cast

Status = Literal["proved", "failed", "unknown"]


def status(result: dict[str, Any]) -> Status:
    return cast(Status, result["status"])


def reason(result: dict[str, Any]) -> str:
    """Why a result is unknown (empty for the others)."""
    if status(result) != "unknown":
        return ""
    return str(result.get("reason") or "the search did not finish")
