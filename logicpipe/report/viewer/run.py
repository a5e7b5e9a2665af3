"""Read a run directory into plain dicts for the viewer and `logicpipe failures`.

Records are read as dicts, not through records.py's models: the viewer must show runs written by older
and newer versions alike, so unknown fields are kept, missing files are empty and a malformed line is
skipped with a warning instead of ending the view.
"""

from __future__ import annotations

import difflib
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ...core.errors import LogicPipeError, UsageError
from ...core.records import round_stands
from ...data.fetch import cache_dir
from ...data.loaders import data_root, load_problems
from ...data.registry import get_dataset, source

_LINE = re.compile(r"\bline (\d+)")


@dataclass
class RunView:
    path: Path
    datasets: list[dict[str, Any]] = field(default_factory=list)  # {"key", "metrics"}
    problems: list[dict[str, Any]] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


def load_run(run_dir: Path, data_dir: Path | str | None = None, dataset: str | None = None) -> RunView:
    """Everything the viewer shows about RUN: per dataset its metrics, per problem its rounds."""
    if not run_dir.is_dir():
        raise UsageError(f"run directory {run_dir} not found")
    if (run_dir / "state.json").is_file() and (run_dir / "prompts").is_dir():  # its steps.jsonl is no stage file
        raise UsageError(f"{run_dir} is a `logicpipe optimize` folder, not a run: its report is "
                         f"{run_dir / 'report.md'}; view a run made with `logicpipe run --prompts {run_dir / 'best'}`")
    view = RunView(path=run_dir)
    folders = [d for d in sorted(run_dir.iterdir()) if d.is_dir() and _is_stage_dir(d)]
    if not folders and _is_stage_dir(run_dir):  # given RUN/<dataset> itself
        folders = [run_dir]
    if not folders:
        raise UsageError(f"{run_dir} holds no run records (no <dataset>/ folder with stage files)")
    if dataset is not None:
        wanted = _dataset_key(dataset)
        chosen = [d for d in folders if d.name == wanted]
        if not chosen:
            have = ", ".join(d.name for d in folders) or "none"
            raise UsageError(f"no dataset '{dataset}' in {run_dir} (it has: {have})")
        folders = chosen
    for folder in folders:
        metrics = _read_json(folder / "metrics.json", view.warnings)
        view.datasets.append({"key": folder.name, "metrics": metrics})
        view.problems += _problems(folder, metrics, data_dir, view.warnings)
    return view


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


def _is_stage_dir(folder: Path) -> bool:
    return (folder / "metrics.json").exists() or any(folder.glob("*.jsonl"))


def _dataset_key(name: str) -> str:
    try:
        return get_dataset(name).key
    except UsageError:
        return name


def _read_json(path: Path, warnings: list[str]) -> dict:
    if not path.exists():
        return {}
    try:
        value = json.loads(path.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        warnings.append(f"{path}: not valid JSON ({exc})")
        return {}
    return value if isinstance(value, dict) else {}


def _read_jsonl(path: Path, warnings: list[str]) -> dict[str, dict]:
    """id -> latest record, as a stage file reads it (core/stagefile.py): a run killed before its stage
    finished may have appended a redone record after the one it replaces."""
    records: dict[str, dict] = {}
    if not path.exists():
        return records
    for number, line in enumerate(path.read_text(errors="replace").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            warnings.append(f"{path}:{number}: skipped a malformed line")
            continue
        if isinstance(record, dict) and isinstance(record.get("id"), str):
            records[record["id"]] = record
    return records


def _problem_texts(key: str, split: str, data_dir: Path | str | None, warnings: list[str]) -> dict[str, dict]:
    """The dataset's own problems, when its file is at hand (data dir or download cache); never downloads."""
    try:
        spec = get_dataset(key)
        if data_root(data_dir) is None:
            cached = cache_dir() / "logic-lm" / source().commit / f"data/{spec.name}/{split}.json"
            if not cached.exists():
                return {}
        problems = load_problems(spec, split, data_dir)
    except LogicPipeError as exc:
        warnings.append(f"problem texts for {key} not shown: {exc}")
        return {}
    return {p.id: p.model_dump() for p in problems}


def _problems(folder: Path, metrics: dict, data_dir: Path | str | None, warnings: list[str]) -> list[dict]:
    stage = {name: _read_jsonl(folder / f"{name}.jsonl", warnings)
             for name in ("formulate", "solve", "interpret", "evaluate")}
    rounds = []
    number = 1
    while (folder / f"solve-{number}.jsonl").exists() or (folder / f"refine-{number}.jsonl").exists():
        # compare-N.jsonl (--refine semantic) says whether each revision replaced its program, and why.
        compared = folder / f"compare-{number}.jsonl"
        rounds.append((_read_jsonl(folder / f"refine-{number}.jsonl", warnings),
                       _read_jsonl(folder / f"solve-{number}.jsonl", warnings),
                       _read_jsonl(compared, warnings) if compared.exists() else {}))
        number += 1
    texts = _problem_texts(folder.name, str(metrics.get("split", "dev")), data_dir, warnings)
    ids = list(dict.fromkeys([*stage["evaluate"], *stage["interpret"], *stage["solve"], *stage["formulate"]]))
    return [_problem(folder.name, identifier, stage, rounds, texts.get(identifier, {})) for identifier in ids]


def _problem(dataset: str, identifier: str, stage: dict[str, dict[str, dict]],
             rounds: list[tuple[dict[str, dict], dict[str, dict], dict[str, dict]]], text: dict) -> dict:
    formulated = stage["formulate"].get(identifier, {})
    history = [_round(0, formulated, stage["solve"].get(identifier, {}))]
    standing = history[0]  # the round whose program the problem ended with
    for number, (refined, solved, decided) in enumerate(rounds, start=1):
        if identifier in refined or identifier in solved:
            history.append(_round(number, refined.get(identifier, {}), solved.get(identifier, {}),
                                  decided.get(identifier, {})))
            if round_stands(str(refined.get(identifier, {}).get("source", "")),
                            decided.get(identifier, {}).get("revised")):
                standing = history[-1]
    for before, after in zip(history, history[1:]):
        after["diff"] = _diff(before["program"], after["program"], before["round"], after["round"])
    evaluated = stage["evaluate"].get(identifier, {})
    interpreted = stage["interpret"].get(identifier, {})
    error = _first_error(evaluated, interpreted, standing)
    # Problem text: the dataset's, else whatever the records carry.
    merged = {**formulated, **evaluated, **text}
    return {
        "dataset": dataset,
        "id": identifier,
        "context": merged.get("context"),
        "question": merged.get("question"),
        "options": merged.get("options") or [],
        "gold": evaluated.get("gold", text.get("answer")),
        "predicted": evaluated.get("predicted", interpreted.get("predicted")),
        "final": evaluated.get("final", interpreted.get("final")),
        "backup": interpreted.get("backup"),
        "correct": evaluated.get("correct"),
        "executed": evaluated.get("executed", interpreted.get("executed")),
        "category": error.get("category") if error else None,
        "message": str(error.get("message", "")) if error else "",
        "refinements": len(history) - 1,
        "rounds": history,
    }


_SHOWN = {"id", "program", "error", "explanation", "verdict", "schema_version"}


def _round(number: int, formulated: dict, solved: dict, decided: dict | None = None) -> dict:
    error = solved.get("error") or formulated.get("error")
    # Every other field (solver, seconds, source, usage, fields added later) is shown as it is.
    records = (("formulate", formulated), ("solve", solved), ("compare", decided or {}))
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
