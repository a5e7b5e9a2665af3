"""A stage's output file: indexed once, appended record by record, put in input order when the stage ends.

Only an index is held (each id's byte offset in the file), never the records: a record is parsed when it
is asked for. So a run of a million problems holds a few dozen bytes per problem per file, and a resume
scans the ids of what was done without parsing a single record it does not need.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import sys
from collections.abc import Callable, Iterable, Iterator, Mapping, Set
from pathlib import Path
from typing import BinaryIO, Generic, TypeVar

from .jsonl import Appender, parse_line, tolerant
from .records import Record

R = TypeVar("R", bound=Record)
# Every record this version writes starts so (pydantic keeps field order); others are parsed as JSON.
_LEADING_ID = re.compile(rb'^\{(?:"schema_version":\d+,)?"id":"((?:[^"\\]|\\.)*)"')
_BLOCK = 1 << 20


class StageFile(Generic[R]):
    """`done` maps each id to its latest record. Records that failed for a transient reason are not
    done: a later run redoes them, and the newer record replaces the older one.

    With `warnings`, a reader that only shows the run: bad lines are skipped with a warning (and fields
    this version does not know are kept) where a run refuses them, naming the file and line. With
    `only`, a reader that shows some problems: the lines of other ids are neither indexed nor checked.
    `lazy` (with `warnings`): no line is checked until its record is asked for, which then raises if it
    is malformed (the reader, showing a page of a large run, reads the run again checking every line)."""

    def __init__(self, path: Path, model: type[R], warnings: list[str] | None = None,
                 only: Set[str] | None = None, lazy: bool = False):
        self.path = path
        self.model = model
        self.warnings = warnings
        self.only = only
        self.lazy = lazy
        self._offsets: dict[str, int] = {}  # id -> byte offset of its latest line
        self._lines: list[str] = []  # ids in file order, duplicates included
        self._torn = False
        self._reader: BinaryIO | None = None
        self._appender: Appender | None = None
        self._deferred = False  # see defer()
        self._kept: list[str] | None = None  # the ids deferred finishes named; None before the first
        self.parsed = 0  # records parsed from the file (a resume parses only the chunks it redoes)
        self.on_finish: Callable[[list[str]], None] | None = None  # told the ids of each finish()
        self._index()
        self.done: Mapping[str, R] = _Done(self)

    def _index(self) -> None:
        self._offsets.clear()
        self._lines = []
        self._torn = False
        if not self.path.exists():
            return
        for offset, line in _lines_of(self.path):
            if line is None:  # a torn last line (the writer was killed): ignored, repaired by the next append
                self._torn = True
                continue
            if not line.strip():
                continue
            identifier = self._id(offset, line)
            if identifier is None:
                continue
            identifier = sys.intern(identifier)  # one string per id, however many files name it
            self._lines.append(identifier)
            self._offsets[identifier] = offset

    def _id(self, offset: int, line: bytes) -> str | None:
        match = _LEADING_ID.match(line)
        if match is not None and b"\\" not in match.group(1):
            identifier: object = match.group(1).decode("utf-8", "replace")
        else:
            try:
                value = json.loads(line)
                identifier = value.get("id") if isinstance(value, dict) else None
            except (ValueError, UnicodeDecodeError):
                identifier = None
        if self.only is not None and identifier not in self.only:
            return None
        if self.warnings is not None and not self.lazy:  # a reader checks each line now: it shows them all anyway
            try:
                tolerant(self.model).model_validate_json(line)
            except ValueError:
                self.warnings.append(f"{self.path}:{self._line_number(offset)}: skipped a malformed line")
                return None
        elif not isinstance(identifier, str):
            self.record_at(offset)  # raises, naming the file, the line and what is wrong
        return identifier if isinstance(identifier, str) else None

    def _line_number(self, offset: int) -> int:
        with open(self.path, "rb") as handle:
            return handle.read(offset).count(b"\n") + 1

    def record_at(self, offset: int) -> R:
        line = self._raw(offset)
        self.parsed += 1
        if self.warnings is not None:
            return tolerant(self.model).model_validate_json(line)
        try:
            return self.model.model_validate_json(line)
        except ValueError:  # named by its line number, counted only now that it is needed
            return parse_line(self.path, self._line_number(offset), line, self.model)

    def _raw(self, offset: int) -> bytes:
        if self._reader is None:
            self._reader = open(self.path, "rb")  # noqa: SIM115 - held open between lookups, closed by close()
        self._reader.seek(offset)
        return self._reader.readline()

    def write(self, record: R) -> None:
        if self._appender is None:
            self._appender = Appender(self.path)
            self._torn = False  # the appender cut the torn line...
            if self._reader is not None:  # ...which the reader's buffer may still hold where new lines go
                self._reader.close()
                self._reader = None
        offset = self._appender.write(record)
        self._lines.append(sys.intern(record.id))
        self._offsets[self._lines[-1]] = offset

    def digest(self, ids: Iterable[str]) -> str:
        """A hash of each id's latest line as it lies in the file (an absent one marked): read, not parsed."""
        digest = hashlib.blake2b(digest_size=16)
        for identifier in ids:
            offset = self._offsets.get(identifier)
            digest.update(b"\0" if offset is None else self._raw(offset))
        return digest.hexdigest()

    def close(self) -> None:
        if self._appender is not None:
            self._appender.close()
            self._appender = None
        if self._reader is not None:
            self._reader.close()
            self._reader = None

    def defer(self) -> None:
        """Run in chunks: finish() only notes each chunk's ids, and settle() orders the file once, at the
        end of the run (each chunk's finish would otherwise rewrite the whole file)."""
        self._deferred = True

    def finish(self, order: Iterable[str]) -> None:
        """Keep exactly the records for `order`, in that order. The file is rewritten only when it
        differs (a resumed, parallel, killed or re-scoped run), so a complete run ends byte-identical."""
        order = list(order)
        if self.on_finish is not None:
            self.on_finish(order)
        if self._deferred:
            if self._kept is None:
                self._kept = []
            self._kept += order
            return
        self._order(order)

    def settle(self) -> None:
        """The deferred finish of a chunked run, over all its chunks' ids. A file the run only read (no
        stage finished it: `evaluate` run on its own reads the solve records) is left as it is."""
        kept, self._kept, self._deferred = self._kept, None, False
        if kept is not None:
            self._order(kept)

    def _order(self, order: list[str]) -> None:
        if self._appender is not None:
            self._appender.close()
            self._appender = None
        wanted = [i for i in order if i in self._offsets]
        if self._lines != wanted or self._torn:
            tmp = self.path.with_suffix(self.path.suffix + ".tmp")
            with open(tmp, "wb") as handle:  # copied line by line, never all held at once
                for identifier in wanted:
                    handle.write(self._raw(self._offsets[identifier]))
            self.close()
            os.replace(tmp, self.path)
            self._index()


class _Done(Mapping[str, R]):
    """The latest record of each id, parsed from the file when asked for (and not kept)."""

    def __init__(self, stage: StageFile[R]):
        self._stage = stage

    def __getitem__(self, identifier: str) -> R:
        return self._stage.record_at(self._stage._offsets[identifier])

    def __contains__(self, identifier: object) -> bool:
        return identifier in self._stage._offsets

    def __iter__(self) -> Iterator[str]:
        return iter(self._stage._offsets)

    def __len__(self) -> int:
        return len(self._stage._offsets)


def _lines_of(path: Path) -> Iterator[tuple[int, bytes | None]]:
    """(byte offset, line without its newline) for each line, read a block at a time; a last line with no
    newline (torn) comes as None."""
    with open(path, "rb") as handle:
        offset, rest = 0, b""
        while block := handle.read(_BLOCK):
            block = rest + block
            start = 0
            while (end := block.find(b"\n", start)) >= 0:
                yield offset + start, block[start:end]
                start = end + 1
            offset += start
            rest = block[start:]
        if rest:
            yield offset, None



def flagged_ids(path: Path, flag: re.Pattern[bytes]) -> set[str]:
    """The ids of the lines that `flag` finds something in (any line, not only each id's latest), from
    the raw bytes: no record is parsed, so a reader can pick the few problems it must read in full."""
    found: set[str] = set()
    for _, line in _lines_of(path):
        if line is None or not flag.search(line):
            continue
        match = _LEADING_ID.match(line)
        if match is not None and b"\\" not in match.group(1):
            found.add(match.group(1).decode("utf-8", "replace"))
            continue
        try:
            value = json.loads(line)
        except (ValueError, UnicodeDecodeError):
            continue
        if isinstance(value, dict) and isinstance(value.get("id"), str):
            found.add(value["id"])
    return found
