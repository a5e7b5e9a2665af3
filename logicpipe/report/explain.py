"""Find the solve record behind an answer, for `logicpipe explain`."""

from __future__ import annotations

from pathlib import Path

from ..core.records import SolveRecord
from ..core.stagefile import StageFile
from ..data import get_dataset
from ..errors import UsageError


def find_solve_record(run_dir: Path, problem_id: str, dataset: str | None = None) -> SolveRecord:
    if not run_dir.is_dir():
        raise UsageError(f"run directory {run_dir} not found")
    if dataset:
        candidates = [run_dir / get_dataset(dataset).key / "solve.jsonl"]
    else:
        candidates = sorted(run_dir.glob("*/solve.jsonl"))
    for path in candidates:
        if path.exists():
            record = StageFile(path, SolveRecord).done.get(problem_id)
            if record is not None:
                return record
    raise UsageError(f"no solve record for id '{problem_id}' under {run_dir}")
