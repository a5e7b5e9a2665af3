"""Programs that an LLM already wrote, read from a Logic-LM `raw_logic_programs` file."""

from __future__ import annotations

import json
from pathlib import Path

from .errors import DataError


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
