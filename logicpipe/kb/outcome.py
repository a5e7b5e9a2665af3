"""The three verdicts of a prove result: proved, failed (the search finished without a solution) and
unknown (a limit, an error or a refusal stopped it). The engine reports them as `status` and, for
unknown, `reason`; a result without `status` (an engine before the three verdicts) is read from
`proved`, `limit` and `error`, so a limit or an error is never taken for "failed"."""

from __future__ import annotations

from typing import Any, Literal

Status = Literal["proved", "failed", "unknown"]


def status(result: dict[str, Any]) -> Status:
    found = result.get("status")
    if found in ("proved", "failed", "unknown"):
        return found  # type: ignore[no-any-return]
    if result.get("proved"):
        return "proved"
    return "unknown" if result.get("limit") or result.get("error") else "failed"


def reason(result: dict[str, Any]) -> str:
    """Why a result is unknown (empty for the others)."""
    if status(result) != "unknown":
        return ""
    if result.get("reason"):
        return str(result["reason"])
    limit = f"the {result['limit']} limit was reached" if result.get("limit") else ""
    return "; ".join(part for part in (limit, str(result.get("error") or "")) if part) or "the search did not finish"
