"""A split's problems for a run: their ids in order, each problem read when its chunk is taken.

A JSONL task file is checked in one pass that keeps only each row's id, gold answer and byte offset;
a chunk's rows are read and mapped again when the run reaches them. So a run of a million problems
holds their ids, not their texts. The other formats (a JSON list, CSV, Hugging Face, Logic-LM's files) are read
whole, as they always were: they are the published datasets, a few thousand problems each.
"""

from __future__ import annotations

import json
import sys
from array import array
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

from ..core.errors import DataError, UsageError, did_you_mean
from ..core.records import Problem
from .loaders import FieldError, RowIssue, checked_row, jsonl_rows, load_problems, map_row, no_problems
from .registry import DatasetSpec

Fetch = Callable[[Sequence[int]], list[Problem]]


class ProblemSet:
    """The chosen problems: `ids` and gold `answers` in run order (what says whether a chunk is the one
    an earlier run finished); `take(start, stop)` reads those problems."""

    def __init__(self, ids: list[str], answers: list[str | None], rows: array, fetch: Fetch):
        self.ids, self.answers = ids, answers
        self._rows = rows  # each chosen problem's row among the split's problems
        self._fetch = fetch

    def __len__(self) -> int:
        return len(self.ids)

    def take(self, start: int, stop: int) -> list[Problem]:
        return self._fetch(self._rows[start:stop])

    def __iter__(self) -> Iterator[Problem]:
        for start in range(0, len(self), 1000):
            yield from self.take(start, start + 1000)

    def keep(self, wanted: Callable[[str], bool]) -> ProblemSet:
        chosen = [i for i, identifier in enumerate(self.ids) if wanted(identifier)]
        return ProblemSet([self.ids[i] for i in chosen], [self.answers[i] for i in chosen],
                          array("q", (self._rows[i] for i in chosen)), self._fetch)

    def first(self, limit: int) -> ProblemSet:
        return ProblemSet(self.ids[:limit], self.answers[:limit], self._rows[:limit], self._fetch)


def index_problems(spec: DatasetSpec, split: str, data_dir: Path | str | None = None) -> ProblemSet:
    """As load_problems (the same checks, the first mistake one DataError naming the row), held as ids."""
    if split not in spec.splits:
        raise UsageError(f"dataset {spec.key} has no split '{split}'{did_you_mean(split, spec.splits)}; "
                         f"choose from {', '.join(spec.splits)}")
    if spec.source.format == "jsonl" and spec.source.path is not None:
        path = spec.local(spec.source.path.replace("{split}", split))
        if not path.is_file():
            raise DataError(f"task {spec.key}: data file {path} not found")
        return _indexed_jsonl(spec, path, split)
    problems = load_problems(spec, split, data_dir)
    return ProblemSet([sys.intern(p.id) for p in problems], [p.answer for p in problems],
                      array("q", range(len(problems))), lambda rows: [problems[row] for row in rows])


def _indexed_jsonl(spec: DatasetSpec, path: Path, split: str) -> ProblemSet:
    ids: list[str] = []
    answers: list[str | None] = []  # interned (a letter, mostly): a pointer a problem
    offsets = array("q")
    seen: set[str] = set()
    issues, first = 0, ""
    for index, (offset, row) in enumerate(jsonl_rows(path)):  # rows counted as load_problems counts them
        try:
            problem, name = checked_row(spec, row, f"{path}: row {index + 1}")
        except RowIssue as exc:
            issues, first = issues + 1, first or str(exc)
            continue
        if problem.id in seen:
            if not first:  # the first row of that id is looked up only for the message shown
                first = f"{name}: duplicate id, first used by row {_row_of(path, spec, problem.id)}"
            issues += 1
            continue
        identifier = sys.intern(problem.id)
        seen.add(identifier)
        ids.append(identifier)
        answers.append(sys.intern(problem.answer) if problem.answer is not None else None)
        offsets.append(offset)
    if issues:
        more = f" (and {issues - 1} more; see `logicpipe validate`)" if issues > 1 else ""
        raise DataError(first + more)
    if not ids:
        raise DataError(no_problems(spec, split, path))
    del seen
    return ProblemSet(ids, answers, offsets, lambda rows: _read(spec, path, rows))


def _row_of(path: Path, spec: DatasetSpec, identifier: str) -> int:
    """The row (counted as load_problems counts them) whose problem first has this id."""
    for index, (_, row) in enumerate(jsonl_rows(path)):
        try:
            if map_row(spec, row).id == identifier:
                return index + 1
        except FieldError:
            continue
    raise AssertionError("unreachable: the id was seen")


def _read(spec: DatasetSpec, path: Path, offsets: Sequence[int]) -> list[Problem]:
    problems = []
    with open(path, "rb") as handle:
        for offset in offsets:
            handle.seek(offset)
            problem = map_row(spec, json.loads(handle.readline()))
            problem.id = sys.intern(problem.id)
            problems.append(problem)
    return problems

