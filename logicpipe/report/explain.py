"""Gather what `logicpipe explain` shows for one problem: the problem itself, the solver's record and
the scored answer."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from ..core.errors import LogicPipeError, UsageError
from ..core.records import EvaluateRecord, Problem, SolveRecord
from ..core.stagefile import StageFile
from ..data import get_dataset, load_problems, load_task_file
from ..run.folder import RUN_FILE


@dataclass
class Explained:
    solve: SolveRecord
    evaluated: EvaluateRecord | None
    problem: Problem | None
    missing: str = ""  # why the problem could not be shown


def find_solve_record(run_dir: Path, problem_id: str, dataset: str | None = None) -> SolveRecord:
    return _find(run_dir, problem_id, dataset)[1]


def _find(run_dir: Path, problem_id: str, dataset: str | None) -> tuple[Path, SolveRecord]:
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
                return path.parent, record
    raise UsageError(f"no solve record for id '{problem_id}' under {run_dir}")


def explain(run_dir: Path, problem_id: str, dataset: str | None = None, task: Path | None = None,
            data_dir: Path | None = None) -> Explained:
    stage_dir, record = _find(run_dir, problem_id, dataset)
    evaluate = stage_dir / "evaluate.jsonl"
    evaluated = StageFile(evaluate, EvaluateRecord).done.get(problem_id) if evaluate.exists() else None
    problem, missing = None, ""
    try:
        identity = json.loads((stage_dir / RUN_FILE).read_text())
        spec = load_task_file(task) if task is not None else get_dataset(identity["dataset"])
        problem = next((p for p in load_problems(spec, identity["split"], data_dir) if p.id == problem_id), None)
        missing = "" if problem else f"id '{problem_id}' is not in the {spec.key} {identity['split']} data"
    except (LogicPipeError, OSError, KeyError, ValueError) as exc:
        # The verdict is still worth showing when the data is out of reach.
        missing = f"{exc} (pass --task or --data-dir)"
    return Explained(record, evaluated, problem, missing)
