"""A stage's output file: which ids are done, appending new records, putting them in input order."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Generic, TypeVar

from .jsonl import Appender, read_records, rewrite_in_order
from .records import Record

R = TypeVar("R", bound=Record)


class StageFile(Generic[R]):
    def __init__(self, path: Path, model: type[R]):
        self.path = path
        self.model = model
        self.done: dict[str, R] = {}
        for record in read_records(path, model):
            self.done.setdefault(record.id, record)

    def missing(self, ids: Iterable[str]) -> list[str]:
        return [i for i in ids if i not in self.done]

    def writer(self) -> _Writer[R]:
        return _Writer(self)

    def finish(self, order: list[str]) -> list[R]:
        """Return the records for `order`; if the file holds them out of order or twice (a resumed,
        parallel or killed run), rewrite it in input order so every complete run ends byte-identical."""
        on_disk = read_records(self.path, self.model)
        rank = {identifier: index for index, identifier in enumerate(order)}
        unique: dict[str, R] = {}
        for record in on_disk:
            unique.setdefault(record.id, record)
        wanted = sorted(unique.values(), key=lambda r: (rank.get(r.id, len(rank)), r.id))
        if [r.id for r in on_disk] != [r.id for r in wanted] or self._torn():
            rewrite_in_order(self.path, wanted)
        self.done = unique
        return [unique[i] for i in order if i in unique]

    def _torn(self) -> bool:
        if not self.path.exists() or self.path.stat().st_size == 0:
            return False
        with open(self.path, "rb") as handle:
            handle.seek(-1, 2)
            return handle.read(1) != b"\n"


class _Writer(Generic[R]):
    def __init__(self, stage: StageFile[R]):
        self.stage = stage
        self._appender = Appender(stage.path)

    def write(self, record: R) -> None:
        self._appender.write(record)
        self.stage.done[record.id] = record

    def __enter__(self) -> _Writer[R]:
        return self

    def __exit__(self, *exc: object) -> None:
        self._appender.close()
