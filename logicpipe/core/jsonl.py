"""JSONL files with one record per line, appended atomically, resumable after a kill."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator
from functools import cache
from pathlib import Path
from typing import TypeVar

from pydantic import BaseModel, ConfigDict, ValidationError

from .errors import DataError

M = TypeVar("M", bound=BaseModel)
# No line may be larger than this: a record that would be is stored without its explanation.
MAX_RECORD_BYTES = 4 * 1024 * 1024
_TAIL_BLOCK = 64 * 1024
_MAX_INT = 2**63
LONE_SURROGATE = re.compile("[\ud800-\udfff]")  # text no JSON reader or UTF-8 encoder takes


def json_fault(exc: json.JSONDecodeError, one_line: bool = False) -> str:
    """What is wrong with a JSON text and where, whole: json's own msg drops the place ("Invalid control
    character at"). `one_line`: the text is one line of a JSONL file, whose line the caller names."""
    place = f"column {exc.colno}" if one_line else f"line {exc.lineno}, column {exc.colno}"
    what = exc.msg.removesuffix(" at")
    if what == "Invalid control character":
        what += " (a raw tab or line break inside a string: write it as \\t or \\n)"
    return f"malformed JSON at {place}: {what}"


def encode_record(record: BaseModel) -> bytes:
    """One JSONL line that is guaranteed to read back into the same model: text a JSON reader rejects
    (lone surrogates, integers past 64 bits) is replaced, and an oversized explanation is dropped with
    a note saying so."""
    try:
        line = record.model_dump_json()
        type(record).model_validate_json(line)
    except (ValueError, UnicodeError):
        record = type(record).model_validate(_safe(record.model_dump(mode="python")))
        line = record.model_dump_json()
    if len(line) > MAX_RECORD_BYTES and getattr(record, "explanation", None) is not None:
        note = f"explanation of {len(line)} bytes dropped: records are bounded at {MAX_RECORD_BYTES} bytes"
        line = record.model_copy(update={"explanation": {"truncated": note}}).model_dump_json()
    if len(line) > MAX_RECORD_BYTES:
        raise DataError(f"record {getattr(record, 'id', '?')!r} is {len(line)} bytes, over the bound")
    return (line + "\n").encode()


def _safe(value: object) -> object:
    if isinstance(value, str):
        return LONE_SURROGATE.sub("\ufffd", value)
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, int):
        return value if -_MAX_INT < value < _MAX_INT else f"{str(value)[:40]}... (an integer too large to store)"
    if isinstance(value, float):
        return value if value == value and abs(value) != float("inf") else str(value)
    if isinstance(value, dict):
        return {str(_safe(k)): _safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_safe(v) for v in value]
    return _safe(str(value))


def read_records(path: Path, model: type[M], warnings: list[str] | None = None) -> list[M]:
    """Read a stage file. A torn last line (the process was killed mid-write) is ignored;
    a malformed line anywhere else is an error naming the file and line.

    With `warnings` (a reader that only shows a run, such as the viewer) a malformed line is skipped
    with a warning instead, and fields this version does not know are kept (`model_extra`): runs
    written by older and newer versions can be shown alike."""
    if not path.exists():
        return []
    raw = path.read_bytes()
    # The last element is b"" after a complete file, or a torn line after a kill: either way skip it.
    lines = raw.split(b"\n")
    records = []
    for number, line in enumerate(lines[:-1], start=1):
        if not line.strip():
            continue
        if warnings is None:
            records.append(parse_line(path, number, line, model))
            continue
        try:
            records.append(tolerant(model).model_validate_json(line))
        except ValidationError:
            warnings.append(f"{path}:{number}: skipped a malformed line")
    return records


def parse_line(path: Path, number: int, line: bytes, model: type[M]) -> M:
    try:
        return model.model_validate_json(line)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first.get("loc", ())) or "record"
        raise DataError(f"{path}:{number}: malformed record ({where}: {first['msg']})") from None


@cache
def tolerant(model: type[M]) -> type[M]:
    """`model` keeping the fields it does not know instead of refusing them."""
    return type(model.__name__, (model,), {"model_config": ConfigDict(extra="allow"),
                                            "__module__": model.__module__})


def repair_torn_tail(path: Path) -> None:
    """Cut a partial last line left by a killed writer so that appends start on a fresh line. Only the
    file's tail is read: the reader that came before has read the whole file already."""
    if not path.exists():
        return
    with open(path, "r+b") as handle:
        end = handle.seek(0, os.SEEK_END)
        if end == 0:
            return
        handle.seek(end - 1)
        if handle.read(1) == b"\n":
            return
        position = end
        while position > 0:
            start = max(0, position - _TAIL_BLOCK)
            handle.seek(start)
            block = handle.read(position - start)
            newline = block.rfind(b"\n")
            if newline >= 0:
                handle.truncate(start + newline + 1)
                return
            position = start
        handle.truncate(0)


class Appender:
    """Appends one record per write(2) call, so a kill leaves whole records plus at most one torn line."""

    def __init__(self, path: Path):
        path.parent.mkdir(parents=True, exist_ok=True)
        repair_torn_tail(path)
        self._fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)

    def write(self, record: BaseModel) -> int:
        """Append the record; returns the byte offset its line starts at (this is the only writer)."""
        data = encode_record(record)
        offset = os.lseek(self._fd, 0, os.SEEK_END)
        written = os.write(self._fd, data)
        if written != len(data):
            raise OSError(f"short write ({written} of {len(data)} bytes)")
        return offset

    def close(self) -> None:
        os.close(self._fd)

    def __enter__(self) -> Appender:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def write_json_if_changed(path: Path, payload: object) -> bool:
    text = json.dumps(payload, indent=2, sort_keys=True) + "\n"
    if path.exists() and path.read_text() == text:
        return False
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(text)
    os.replace(tmp, path)
    return True


def iter_json_lines(path: Path) -> Iterator[tuple[int, object]]:
    """(line number, value) for each non-blank line of a user's JSONL file."""
    if not path.is_file():
        raise DataError(f"{path}: no such file" + (" (a folder)" if path.is_dir() else ""))
    with open(path, encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            if line.strip():
                try:
                    yield number, json.loads(line)
                except json.JSONDecodeError as exc:
                    raise DataError(f"{path}:{number}: {json_fault(exc, one_line=True)}") from None
