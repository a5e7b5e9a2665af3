"""A stage's output file: read once, appended record by record, put in input order when the stage ends."""

from __future__ import annotations

from pathlib import Path
from typing import Generic, TypeVar

from .jsonl import Appender, read_records, rewrite_in_order
from .records import Record

R = TypeVar("R", bound=Record)


class StageFile(Generic[R]):
    """`done` maps each id to its latest record. Records that failed for a transient reason are not
    done: a later run redoes them, and the newer record replaces the older one."""

    def __init__(self, path: Path, model: type[R], warnings: list[str] | None = None):
        self.path = path
        self.model = model
        self.done: dict[str, R] = {}
        self._lines: list[str] = []  # ids in file order, duplicates included
        self._torn = _torn(path)
        # With `warnings`, a reader that only shows the run: bad lines are skipped with a warning.
        for record in read_records(path, model, warnings):
            self._lines.append(record.id)
            self.done[record.id] = record
        self._appender: Appender | None = None

    def write(self, record: R) -> None:
        if self._appender is None:
            self._appender = Appender(self.path)
        self._appender.write(record)
        self._lines.append(record.id)
        self.done[record.id] = record

    def close(self) -> None:
        if self._appender is not None:
            self._appender.close()
            self._appender = None

    def finish(self, order: list[str]) -> list[R]:
        """Keep exactly the records for `order`, in that order. The file is rewritten only when it
        differs (a resumed, parallel, killed or re-scoped run), so a complete run ends byte-identical."""
        self.close()
        wanted = [i for i in order if i in self.done]
        if self._lines != wanted or self._torn:
            rewrite_in_order(self.path, [self.done[i] for i in wanted])
            self._lines, self._torn = wanted, False
        self.done = {i: self.done[i] for i in wanted}
        return [self.done[i] for i in wanted]


def _torn(path: Path) -> bool:
    if not path.exists() or path.stat().st_size == 0:
        return False
    with open(path, "rb") as handle:
        handle.seek(-1, 2)
        return handle.read(1) != b"\n"
