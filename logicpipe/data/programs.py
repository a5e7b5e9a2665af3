"""Logic-LM's released programs, indexed: a pass over the file keeps each record's byte range, and a
program is read from the file when a chunk of the run asks for it. A file of a million programs costs a
few dozen bytes per program in memory, not its gigabyte of text.

The file is one JSON list (often on one line), read a block at a time; a record is decoded on its own.
Any file the streaming pass does not take (not a list, malformed, not UTF-8, a record that is not an
object) is read whole once more, so that it fails with exactly the message the whole-file reader gives.
"""

from __future__ import annotations

import json
import sys
from array import array
from collections.abc import Iterable, Iterator
from functools import lru_cache
from pathlib import Path
from typing import Any, BinaryIO

from ..core.errors import DataError
from .program_files import ProgramIndex, WrittenPrograms, index_written, is_written
from .text import parse_json, read_text

_BLOCK = 1 << 22
_SPACE = " \t\n\r"


class Programs(ProgramIndex):
    """id -> byte range of its record (records without a usable program are left out: they become
    no_program records in formulate). The last record of an id wins, as in a dict built from the list."""

    def __init__(self, path: Path):
        self.path = path
        self._where: dict[str, int] = {}  # id -> slot in the arrays below
        self._start, self._end = array("q"), array("q")

    def add(self, identifier: str, start: int, end: int) -> None:
        slot = self._where.get(identifier)
        if slot is None:
            self._where[sys.intern(identifier)] = len(self._start)
            self._start.append(start)
            self._end.append(end)
        else:
            self._start[slot], self._end[slot] = start, end

    def texts(self, ids: Iterable[str]) -> dict[str, str]:
        """The program of each id that has one (Logic-LM's first), read from the file now."""
        found: dict[str, str] = {}
        with open(self.path, "rb") as handle:
            for identifier in ids:
                slot = self._where.get(identifier)
                if slot is None:
                    continue
                handle.seek(self._start[slot])
                record = json.loads(handle.read(self._end[slot] - self._start[slot]).decode("utf-8"))
                found[identifier] = record["raw_logic_programs"][0]
        return found


def index_programs(path: Path) -> Programs | WrittenPrograms:
    """The programs file, indexed once for as long as it is unchanged; a bad file is one DataError."""
    if is_written(path):  # a JSONL file or a folder of programs a person wrote
        return index_written(path)
    if not path.exists():
        raise DataError(f"programs file {path} not found")
    stat = path.stat()
    return _index(path, stat.st_mtime_ns, stat.st_size)


@lru_cache(maxsize=4)
def _index(path: Path, mtime_ns: int, size: int) -> Programs:
    programs = Programs(path)
    try:
        _check(path, _records(path), programs)
    except _Irregular:  # the whole-file reader names the mistake, as it always did
        raw = parse_json(read_text(path), str(path))
        if not isinstance(raw, list):
            raise DataError(f"{path}: expected a JSON list of records with 'id' and 'raw_logic_programs'") from None
        _check(path, ((0, 0, item) for item in raw), Programs(path))
        raise DataError(f"{path}: valid JSON, but not a list of records this reader can index") from None
    return programs


class _Irregular(Exception):
    """The streaming pass cannot take this file: read it whole to name the mistake."""


def _check(path: Path, records: Iterator[tuple[int, int, Any]], programs: Programs) -> None:
    for index, (start, end, item) in enumerate(records):
        if not isinstance(item, dict) or "id" not in item:
            raise DataError(f"{path}: record {index} has no 'id'")
        texts = item.get("raw_logic_programs")
        if texts is None:
            continue  # no program for this problem (a no_program record)
        if not isinstance(texts, list) or not all(isinstance(text, str) for text in texts):
            given = "a list holding " + _kind(next(t for t in texts if not isinstance(t, str))) \
                if isinstance(texts, list) else _kind(texts)
            raise DataError(f"{path}: record {index} ({item['id']!r}): raw_logic_programs is {given}; it must be "
                            'a list of program texts, e.g. "raw_logic_programs": ["Predicates: ..."]')
        if texts and texts[0].strip():
            programs.add(str(item["id"]), start, end)


def _kind(value: Any) -> str:
    """What a JSON value is, in words."""
    if isinstance(value, bool):
        return "true or false"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, dict):
        return "an object"
    return "a list" if isinstance(value, list) else "null"


def _records(path: Path) -> Iterator[tuple[int, int, Any]]:
    """(start byte, end byte, value) of each record of the file's top-level list, a block at a time.
    The bytes are decoded as Latin-1 to find the records (so a character is a byte); a record holding
    other than ASCII is decoded again as UTF-8."""
    decoder = json.JSONDecoder()
    with open(path, "rb") as handle:
        reader = _Buffer(handle)
        if reader.skip() != "[":
            raise _Irregular
        reader.pos += 1
        if reader.skip() == "]":
            reader.pos += 1
        else:
            while True:
                if reader.skip() != "{":
                    raise _Irregular
                while True:
                    try:
                        value, end = decoder.raw_decode(reader.text, reader.pos)
                        break
                    except json.JSONDecodeError:
                        if not reader.more():
                            raise _Irregular from None
                raw = reader.bytes[reader.pos:end]
                if not raw.isascii():
                    try:
                        value = json.loads(raw.decode("utf-8"))
                    except UnicodeDecodeError:
                        raise _Irregular from None
                yield reader.base + reader.pos, reader.base + end, value
                reader.pos = end
                following = reader.skip()
                reader.pos += 1
                if following == "]":
                    break
                if following != ",":
                    raise _Irregular
        if reader.skip() != "":
            raise _Irregular


class _Buffer:
    """The unread part of a file, as bytes and as Latin-1 text (the same offsets); `base` is its offset
    in the file."""

    def __init__(self, handle: BinaryIO):
        self.handle = handle
        self.bytes, self.text, self.base, self.pos, self.ended = b"", "", 0, 0, False

    def more(self) -> bool:
        if self.ended:
            return False
        block = self.handle.read(_BLOCK)
        self.ended = not block
        self.bytes, self.base, self.pos = self.bytes[self.pos:] + block, self.base + self.pos, 0
        self.text = self.bytes.decode("latin-1")
        return bool(block)

    def skip(self) -> str:
        """The next character that is not white space ('' at the end of the file)."""
        while True:
            while self.pos < len(self.text) and self.text[self.pos] in _SPACE:
                self.pos += 1
            if self.pos < len(self.text):
                return self.text[self.pos]
            if not self.more():
                return ""
