"""Reading a user's file as text and as JSON, with one-line errors: shared by the problem loaders and the
programs index (each imports this, not the other)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ..core.errors import DataError
from ..core.jsonl import json_fault


def read_text(path: Path) -> str:
    """A user's data file as text; a file that is not UTF-8 (binary, UTF-16) is one clear DataError."""
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise DataError(f"{path}: not UTF-8 text (byte {exc.start}); is it binary, or UTF-16?") from None


def parse_json(text: str, where: str, one_line: bool = False) -> Any:
    """`one_line`: the text is one line of a JSONL file, which `where` names (path:line)."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise DataError(f"{where}: {json_fault(exc, one_line)}") from None
    except RecursionError:
        raise DataError(f"{where}: JSON nested too deeply to read") from None
