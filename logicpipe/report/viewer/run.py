"""A run directory as plain dicts for the viewer's page and `logicpipe failures`.

The records come from the run's one reader (stages/store.py), in its tolerant mode: the viewer must
show runs written by older and newer versions alike, so unknown fields are kept, missing files are empty
and a malformed line is skipped with a warning instead of ending the view.
"""

from __future__ import annotations

import difflib
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ...core.errors import UsageError
from ...core.records import DecisionRecord, FormulateRecord, Record, SolveRecord, StepRecord
from ...core.trajectory import Trajectory
from ...data import DatasetSpec, load_task_file
from ...stages.store import find_runs, read_json, read_recorded
from ..gold import AGREEMENT_FILE
from ..problems import recorded_problems
from .kb import kb_rows

_LINE = re.compile(r"\bline (\d+)")


@dataclass
class RunView:
    path: Path
    datasets: list[dict[str, Any]] = field(default_factory=list)  # {"key", "metrics"}
    problems: list[dict[str, Any]] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


def load_run(run_dir: Path, data_dir: Path | str | None = None, dataset: str | None = None,
             task: Path | None = None, window: slice | None = None) -> RunView:
    """Everything the viewer shows about RUN: per dataset its metrics, per problem its rounds. `task`
    (--task) gives the problems of the dataset directory of its name; the others' come from the task
    file their run.json names, or the built-in dataset. `window` keeps only those problems of each
    dataset (in run order): a page over a large run stays small; the metrics still cover them all."""
    spec = load_task_file(task) if task is not None else None
    runs = find_runs(run_dir, dataset)
    if spec is not None and spec.key not in {folder.name for _, folder in runs}:
        raise UsageError(f"task {spec.key} ({task}) has no directory in {run_dir} "
                         f"(it has: {', '.join(label for label, _ in runs)})")
    view = RunView(path=run_dir)
    for label, folder in runs:
        identity = read_json(folder / "run.json", view.warnings)
        if "kb" in identity:  # a kb batch: its inputs, goals and proofs
            entry, rows = kb_rows(folder, label, identity.get("stages") or {}, view.warnings)
            view.datasets.append(entry)
            view.problems += rows
        else:
            view.problems += _dataset(view, folder, label, spec if spec is not None and spec.key == folder.name
                                      else None, data_dir, window)
    return view


def _dataset(view: RunView, folder: Path, label: str, task: DatasetSpec | None, data_dir: Path | str | None,
             window: slice | None) -> list[dict]:
    recorded = read_recorded(folder, view.warnings, window)
    view.datasets.append({"key": label, "metrics": recorded.metrics, "problems": recorded.total,
                          "first": (window.start or 0) if window is not None else 0,
                          "shown": len(recorded.trajectories)})
    texts = {key: problem.model_dump() for key, problem in
             recorded_problems(recorded, task, data_dir, view.warnings,
                               [t.id for t in recorded.trajectories] if window is not None else None).items()}
    held = _gold_agreement(folder, view.warnings)
    problems = [_problem(label, trajectory, texts.get(trajectory.id, {})) for trajectory in recorded.trajectories]
    for problem in problems:
        if problem["id"] in held:
            problem["gold_program"] = held[problem["id"]]
    return problems


def _gold_agreement(folder: Path, warnings: list[str]) -> dict[str, dict]:
    """id -> the gold program's verdict and whether the run's agrees (gold_agreement.jsonl, when the run
    has one); a malformed line is skipped with a warning, as the stage files' are."""
    path = folder / AGREEMENT_FILE
    found: dict[str, dict] = {}
    if not path.is_file():
        return found
    for number, line in enumerate(path.read_text(encoding="utf-8", errors="replace").splitlines(), start=1):
        try:
            row = json.loads(line)
            found[str(row["id"])] = {"verdict": row.get("gold_verdict"), "agrees": row.get("agrees"),
                                     "error": row.get("gold_error"), "premises": row.get("premises_verdict"),
                                     "premises_give_label": row.get("premises_give_label"),
                                     "premises_unchecked": row.get("premises_unchecked")}
        except (ValueError, KeyError, TypeError):
            if line.strip():
                warnings.append(f"{path}:{number}: skipped a malformed line")
    return found


def one_line(message: str, width: int = 160) -> str:
    """The message's first line, at most `width` characters; " ..." marks what was cut."""
    lines = message.strip().splitlines() or [""]
    if len(lines) == 1 and len(lines[0]) <= width:
        return lines[0]
    return lines[0][:width].rstrip() + " ..."


def error_line(error: dict | None) -> int | None:
    """The program line an error names ("line N" in every parser and solver message), if any."""
    match = _LINE.search(str((error or {}).get("message", "")))
    return int(match.group(1)) if match else None


def _problem(dataset: str, trajectory: Trajectory, text: dict) -> dict:
    formulated = _dump(trajectory.formulated)
    history = [_round(0, trajectory.formulated, trajectory.solved.get(0))]
    standing = history[0]  # the round whose program the problem ended with
    for number in sorted((set(trajectory.refined) | set(trajectory.solved)) - {0}):
        history.append(_round(number, trajectory.refined.get(number), trajectory.solved.get(number),
                              trajectory.decided.get(number)))
        if trajectory.stands(number):
            standing = history[-1]
    for before, after in zip(history, history[1:]):
        after["diff"] = _diff(before["program"], after["program"], before["round"], after["round"])
    if trajectory.steps and trajectory.formulated is None:  # a chain of prompted steps: its replies are its rounds
        history = [_step(number, record) for number, record in enumerate(trajectory.steps.values())]
        standing = next((step for step in history if step["error"] is not None), history[-1])
    evaluated, interpreted = _dump(trajectory.evaluated), _dump(trajectory.interpreted)
    error = _first_error(evaluated, interpreted, standing)
    # Problem text: the dataset's, else whatever the records carry (older versions' fields included).
    merged = {**formulated, **evaluated, **text}
    return {
        "dataset": dataset,
        "id": trajectory.id,
        "context": merged.get("context"),
        "question": merged.get("question"),
        "options": merged.get("options") or [],
        "gold": evaluated.get("gold", text.get("answer")),
        "predicted": evaluated.get("predicted", interpreted.get("predicted")),
        "final": evaluated.get("final", interpreted.get("final")),
        "backup": interpreted.get("backup"),
        # A baseline with self-consistency: each sample's answer, or its error's category, in sample order.
        "votes": [vote.get("answer") or (vote.get("error") or {}).get("category") for vote in interpreted["votes"]]
        if interpreted.get("votes") else None,
        "correct": evaluated.get("correct"),
        "executed": evaluated.get("executed", interpreted.get("executed")),
        "category": error.get("category") if error else None,
        "message": str(error.get("message", "")) if error else "",
        "refinements": 0 if trajectory.steps and trajectory.formulated is None else len(history) - 1,
        "rounds": history,
        # The problem's model calls, every stage's, and what they cost at the run's prices (None: unknown).
        "tokens": evaluated.get("tokens"),
        "cost": evaluated.get("cost"),
    }


def _dump(record: Record | None) -> dict:
    """A record as its line holds it, fields this version does not know included."""
    return record.model_dump(mode="json") if record is not None else {}


_SHOWN = {"id", "program", "error", "explanation", "verdict", "schema_version"}


def _round(number: int, formulate: FormulateRecord | None, solve: SolveRecord | None,
           decision: DecisionRecord | None = None) -> dict:
    formulated, solved = _dump(formulate), _dump(solve)
    error = solved.get("error") or formulated.get("error")
    # Every other field (solver, seconds, source, usage, fields added later) is shown as it is.
    records = (("formulate", formulated), ("solve", solved), ("compare", _dump(decision)))
    details = {f"{name}.{key}": value for name, record in records
               for key, value in record.items() if key not in _SHOWN or (name == "compare" and key == "error")}
    return {
        "round": number,
        "program": formulated.get("program") if isinstance(formulated.get("program"), str) else None,
        "verdict": solved.get("verdict"),
        "explanation": solved.get("explanation"),
        "error": error if isinstance(error, dict) else None,
        "error_line": error_line(error if isinstance(error, dict) else None),
        "details": details,
        "diff": [],
    }


def _step(number: int, record: StepRecord) -> dict:
    """A chain's step as the page shows a round: its reply where a round has its program."""
    dumped = _dump(record)
    error = dumped.get("error")
    return {
        "round": number,
        "title": f"step {record.step}",
        "heading": "reply",
        "program": record.reply,
        "verdict": None,
        "explanation": None,
        "error": error if isinstance(error, dict) else None,
        "error_line": None,
        "details": {f"{record.step}.{key}": value for key, value in dumped.items()
                    if key not in ("id", "reply", "error", "schema_version", "step")},
        "diff": [],
    }


def _first_error(*records: dict) -> dict | None:
    for record in records:
        error = record.get("error")
        if isinstance(error, dict):
            return error
    return None


def _diff(before: str | None, after: str | None, old: int, new: int) -> list[str]:
    lines = difflib.unified_diff((before or "").splitlines(), (after or "").splitlines(),
                                 f"round {old}", f"round {new}", lineterm="")
    return list(lines)
