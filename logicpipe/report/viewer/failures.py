"""`logicpipe failures`: each failed problem with its one-line error."""

from __future__ import annotations

from pathlib import Path

from ...core.errors import UsageError
from ...core.records import ErrorCategory
from .run import load_run, one_line


def failed_problems(run_dir: Path, category: str | None = None, dataset: str | None = None) -> list[dict]:
    """Problems whose final record carries an error, as {id, dataset, category, message}, in run order."""
    known = [c.value for c in ErrorCategory]
    if category is not None and category not in known:
        raise UsageError(f"unknown error category '{category}'; choose from {', '.join(known)}")
    view = load_run(run_dir, dataset=dataset)
    return [{"id": p["id"], "dataset": p["dataset"], "category": p["category"], "message": one_line(p["message"])}
            for p in view.problems
            if p["category"] is not None and (category is None or p["category"] == category)]
