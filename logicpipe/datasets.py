"""Dataset registry (configuration is data, in datasets.json) and loading of Logic-LM-format files."""

from __future__ import annotations

import difflib
import json
import os
from functools import cache
from pathlib import Path

from pydantic import BaseModel, ValidationError

from .errors import DataError, UsageError
from .records import Problem

DATA_ENV = "LOGICPIPE_DATA"


class DatasetSpec(BaseModel):
    key: str
    name: str
    solver: str
    splits: list[str]
    aliases: list[str] = []
    closed_world: bool = False
    timeout: float = 30.0


class SourceSpec(BaseModel):
    repository: str
    commit: str
    base_url: str
    remote_paths: dict[str, str]
    sha256: dict[str, str]


def _normalise(name: str) -> str:
    return name.lower().replace("-", "").replace("_", "").replace(" ", "")


@cache
def _config() -> tuple[dict[str, DatasetSpec], SourceSpec]:
    raw = json.loads((Path(__file__).parent / "datasets.json").read_text())
    specs = {key: DatasetSpec(key=key, **value) for key, value in raw["datasets"].items()}
    return specs, SourceSpec(**raw["source"])


def all_datasets() -> list[DatasetSpec]:
    return list(_config()[0].values())


def source() -> SourceSpec:
    return _config()[1]


def get_dataset(name: str) -> DatasetSpec:
    """Accepts our keys and Logic-LM's spellings (FOLIO, AR-LSAT, LogicalDeduction, ...)."""
    specs = _config()[0]
    wanted = _normalise(name)
    for spec in specs.values():
        if wanted in {_normalise(spec.key), _normalise(spec.name), *(_normalise(a) for a in spec.aliases)}:
            return spec
    close = difflib.get_close_matches(name.lower(), list(specs), n=1)
    hint = f" (did you mean '{close[0]}'?)" if close else ""
    raise UsageError(f"unknown dataset '{name}'{hint}; choose from {', '.join(specs)}")


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
    from .fetch import cached_file

    return cached_file(relative)


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
