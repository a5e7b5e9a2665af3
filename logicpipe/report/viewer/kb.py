"""A kb batch (`kb ask --questions`, `kb validate --answers`) as the viewer's rows: one per input, its
goals (or claims) as the rounds, each with its verdict and goal tree, so the page that shows a run's
programs and solver explanations shows a batch's goals and proofs."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

from ...runtime.folder import RunFolder

STAGES = ("ask", "validate")


def kb_rows(folder: Path, label: str, stages: dict[str, Any], warnings: list[str]) -> tuple[dict, list[dict]]:
    """The batch's entry for the metrics table ({"key", "metrics", ...}) and one row per input record."""
    from ...kb.ask import AskRecord
    from ...kb.flow import KBRecord
    from ...kb.validate import ValidateRecord

    models: dict[str, type[KBRecord]] = {"ask": AskRecord, "validate": ValidateRecord}
    store = RunFolder(folder, warnings=warnings)  # opened without `with`: it only reads
    rows: list[dict] = []
    try:
        for stage in (s for s in STAGES if s in stages):
            for record in store.file(stage, models[stage]).done.values():
                dumped = record.model_dump(mode="json")
                rows.append(_ask(label, dumped) if stage == "ask" else _validate(label, dumped))
    finally:
        store.close()
    failures = Counter(row["category"] for row in rows if row["category"])
    metrics = {"total": len(rows), "executed": sum(row["executed"] for row in rows), "failures": dict(failures),
               "source": "kb " + "/".join(s for s in STAGES if s in stages)}
    return {"key": label, "metrics": metrics, "problems": len(rows), "first": 0, "shown": len(rows)}, rows


def _row(label: str, record: dict, question: str, predicted: str | None, rounds: list[dict]) -> dict:
    error = record.get("error") if isinstance(record.get("error"), dict) else None
    return {"dataset": label, "id": record["id"], "kind": "kb", "context": record.get("context") or None,
            "question": question, "options": [], "gold": None, "predicted": predicted, "final": predicted,
            "backup": None, "correct": None, "executed": error is None and bool(rounds),
            "category": error.get("category") if error else None,
            "message": str(error.get("message", "")) if error else "", "refinements": 0, "rounds": rounds,
            "tokens": _tokens(record.get("usage")), "cost": None}


def _tokens(usage: Any) -> int | None:
    if not isinstance(usage, dict) or not usage.get("calls"):
        return None
    return int(usage.get("prompt_tokens", 0)) + int(usage.get("completion_tokens", 0))


def _ask(label: str, record: dict) -> dict:
    from ...kb.render import verdict_line

    rounds = []
    for number, result in enumerate(record.get("results") or []):
        trees: dict[str, Any] = {f"solution {i}": s.get("tree") for i, s in enumerate(result.get("solutions") or [], 1)}
        for i, solution in enumerate(result.get("solutions") or [], 1):
            if solution.get("bindings"):
                trees[f"solution {i} bindings"] = solution["bindings"]
        if result.get("explored"):
            trees["explored (failed)"] = result["explored"]
        rounds.append(_goal(number, "goal", result.get("goal"), verdict_line(result), trees))
    for rejected in record.get("rejected") or []:
        rounds.append(_goal(len(rounds), "rejected goal", None, "not run", {"reason": rejected}))
    return _row(label, record, record.get("question", ""), record.get("answer") or None, rounds)


def _validate(label: str, record: dict) -> dict:
    rounds = [_goal(number, f"claim: {claim.get('claim', '')}", claim.get("goal"),
                    claim.get("verdict") + (f" ({claim['reason']})" if claim.get("reason") else ""),
                    {"proof": claim.get("proof")} if claim.get("proof") else None)
              for number, claim in enumerate(record.get("claims") or [])]
    valid = None if record.get("error") else ("valid" if record.get("valid") else "not valid")
    return _row(label, record, record.get("answer", ""), valid, rounds)


def _goal(number: int, title: str, goal: str | None, verdict: str, explanation: dict | None) -> dict:
    return {"round": number, "title": title, "program": goal, "verdict": verdict, "explanation": explanation,
            "error": None, "error_line": None, "details": {}, "diff": []}
