"""Dataset registry: configuration is data, in datasets.json, validated into models when first used."""

from __future__ import annotations

import difflib
import json
from functools import cache
from pathlib import Path

from pydantic import BaseModel

from ..errors import UsageError


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
