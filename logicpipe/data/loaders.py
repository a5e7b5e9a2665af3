"""Loading Logic-LM-format files: problems (data/<Name>/<split>.json) and released programs."""

from __future__ import annotations

import json
import os
from pathlib import Path

from pydantic import ValidationError

from ..core.records import Problem
from ..errors import DataError, UsageError
from .fetch import cached_file
from .registry import DatasetSpec, source

DATA_ENV = "LOGICPIPE_DATA"


def data_root(data_dir: Path | str | None) -> Path | None:
    """The directory holding Logic-LM's data/ and programs/: the option, else LOGICPIPE_DATA, else None
    (meaning: use the download cache)."""
    chosen = data_dir if data_dir is not None else os.environ.get(DATA_ENV) or None
    if chosen is None:
        return None
    root = Path(chosen).expanduser()
    if not root.is_dir():
        raise DataError(f"data directory {root} does not exist (set --data-dir or {DATA_ENV})")
    return root


def resolve_file(relative: str, data_dir: Path | str | None) -> Path:
    root = data_root(data_dir)
    if root is not None:
        path = root / relative
        if not path.exists():
            raise DataError(f"{path} not found in data directory {root}")
        return path
    return cached_file(relative, source())


def load_problems(spec: DatasetSpec, split: str, data_dir: Path | str | None = None) -> list[Problem]:
    if split not in spec.splits:
        raise UsageError(f"dataset {spec.key} has no split '{split}'; choose from {', '.join(spec.splits)}")
    path = resolve_file(f"data/{spec.name}/{split}.json", data_dir)
    return parse_problem_file(path)


def parse_problem_file(path: Path) -> list[Problem]:
    try:
        raw = json.loads(path.read_text())
    except json.JSONDecodeError as exc:
        raise DataError(f"{path}: malformed JSON at line {exc.lineno} ({exc.msg})") from None
    if not isinstance(raw, list):
        raise DataError(f"{path}: expected a JSON list of problems")
    problems = []
    for index, item in enumerate(raw):
        try:
            problems.append(Problem.model_validate(item))
        except ValidationError as exc:
            first = exc.errors()[0]
            raise DataError(f"{path}: problem {index}: {'.'.join(map(str, first['loc']))} {first['msg']}") from None
    return problems


def load_programs(path: Path) -> dict[str, str]:
    """id -> first program text. Records without a usable program are left out (they become
    no_program records in formulate)."""
    if not path.exists():
        raise DataError(f"programs file {path} not found")
    try:
        raw = json.loads(path.read_text())
    except json.JSONDecodeError as exc:
        raise DataError(f"{path}: malformed JSON at line {exc.lineno} ({exc.msg})") from None
    if not isinstance(raw, list):
        raise DataError(f"{path}: expected a JSON list of records with 'id' and 'raw_logic_programs'")
    programs = {}
    for index, item in enumerate(raw):
        if not isinstance(item, dict) or "id" not in item:
            raise DataError(f"{path}: record {index} has no 'id'")
        texts = item.get("raw_logic_programs") or []
        if isinstance(texts, list) and texts and isinstance(texts[0], str) and texts[0].strip():
            programs[str(item["id"])] = texts[0]
    return programs
