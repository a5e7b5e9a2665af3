"""`logicpipe failures`: each failed problem with its one-line error.

Only the problems that can have failed are read: a raw pass over each stage file finds the ids with
an error in any line (no record parsed), and only those problems' records are parsed, as the viewer
reads them. On a large run with few failures that is a small part of the records.
"""

from __future__ import annotations

import re
from pathlib import Path

from ...core.errors import UsageError
from ...core.records import ErrorCategory
from ...core.stagefile import flagged_ids
from ...stages.chunks import FILE as CHUNK_FILE
from ...stages.store import read_recorded, stage_dirs
from .run import _problem, one_line

# A record's error that is not null (pydantic writes `"error":null`; json.dumps `"error": null`).
_ERROR = re.compile(rb'"error":\s*(?!null\b)')


def failed_problems(run_dir: Path, category: str | None = None, dataset: str | None = None) -> list[dict]:
    """Problems whose final record carries an error, as {id, dataset, category, message}, in run order."""
    known = [c.value for c in ErrorCategory]
    if category is not None and category not in known:
        raise UsageError(f"unknown error category '{category}'; choose from {', '.join(known)}")
    rows = []
    for folder in stage_dirs(run_dir, dataset):
        for problem in _failed(folder):
            if category is None or problem["category"] == category:
                rows.append({"id": problem["id"], "dataset": problem["dataset"], "category": problem["category"],
                             "message": one_line(problem["message"])})
    return rows


def _failed(folder: Path) -> list[dict]:
    suspects: set[str] = set()
    for path in sorted(folder.glob("*.jsonl")):
        if path.name != CHUNK_FILE:
            suspects |= flagged_ids(path, _ERROR)
    if not suspects:
        return []
    recorded = read_recorded(folder, [], only=suspects)
    problems = (_problem(recorded.key, trajectory, {}) for trajectory in recorded.trajectories)
    return [problem for problem in problems if problem["category"] is not None]
