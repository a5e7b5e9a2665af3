"""A run's output folder, held the same way by every command that writes one (`run` and its stage
commands, `baseline`, the `kb` batches, `optimize`): one writer at a time (a lock), run.json recording
what decides the records (a resume with other values is refused, never mixed), --overwrite, typed stage
files each read at most once, and the budget of model errors the run tolerates.

Opened without `with`, a RunFolder only reads: that is how `explain`, `view` and `failures` look at a run.
"""

from __future__ import annotations

import fcntl
import json
import math
import os
import re
import shutil
from collections import Counter
from collections.abc import Set
from pathlib import Path
from typing import Any, TypeVar

from ..core.errors import LLMError, RunStopped, UsageError
from ..core.jsonl import write_json_if_changed
from ..core.records import Record
from ..core.stagefile import StageFile

RUN_FILE = "run.json"
# Keys of run.json that say where a run's inputs lie (for `view` and `explain`): recorded as they are
# now and never compared, so a moved task file or data folder resumes as it was.
NOTES = ("task_file", "data_dir", "method")
LOCK_FILE = ".lock"

R = TypeVar("R", bound=Record)


class DirectoryLock:
    """One run per folder: a second one says who holds it and stops before writing."""

    def __init__(self, folder: Path):
        self.path = folder / LOCK_FILE
        self._fd: int | None = None

    def __enter__(self) -> DirectoryLock:
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError:
            if os.access(self.path.parent, os.W_OK):
                raise
            return self  # a read-only folder: nobody can write into it, so there is nothing to guard
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise UsageError(f"{self.path.parent} is in use by another logicpipe run (it holds {self.path}); "
                             "wait for it to end or use another --out") from None
        self._fd = fd
        return self

    def __exit__(self, *exc: object) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


def clear(folder: Path, keep: tuple[str, ...] = ()) -> None:
    """--overwrite: remove what an earlier run wrote in this folder (not the lock, nor the names `keep`)."""
    for entry in folder.iterdir() if folder.is_dir() else []:
        if entry.name == LOCK_FILE or entry.name in keep:
            continue
        if entry.is_dir():
            shutil.rmtree(entry)
        else:
            entry.unlink()


class ModelErrors(RunStopped):
    """The error budget stopped a run; `last` is the model error that did it (a caller with options of
    its own, like `logicpipe optimize`, words the stop in them)."""

    def __init__(self, message: str, last: LLMError):
        super().__init__(message)
        self.last = last


class ErrorBudget:
    """Model errors a run tolerates before it stops: a fatal one (bad key, unknown model) stops it at
    once, others once there are more than `allowed`."""

    def __init__(self, allowed: int):
        self.allowed = allowed
        self.spent = 0

    def check(self, error: LLMError) -> None:
        if error.fatal:
            raise ModelErrors(f"stopped at the first fatal model error ({error}); finished records are kept", error)
        self.spent += 1
        if self.spent > self.allowed:
            raise ModelErrors(f"stopped after {self.spent} model errors, over the budget of {self.allowed} "
                              f"(--max-errors); last: {error}; finished records are kept, re-run to resume", error)


_BUDGET = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(%?)\s*$")


def allowed_errors(max_errors: str, total: int) -> int:
    """How many model errors a run of `total` inputs may have before it stops (at least one), from
    --max-errors: a count (5) or a percentage (10%); ValueError for anything else."""
    match = _BUDGET.match(max_errors)
    if match is None:
        raise ValueError("give a count (5) or a percentage (10%)")
    number, percent = float(match.group(1)), match.group(2)
    return max(1, math.floor(number * total / 100 if percent else number))


class RunFolder:
    def __init__(self, path: Path, *, overwrite: bool = False, allowed_errors: int = 0,
                 warnings: list[str] | None = None, only: Set[str] | None = None, lazy: bool = False,
                 keep: tuple[str, ...] = ()):
        """`keep`: what --overwrite leaves (a record of what was paid for, such as --batch's batches)."""
        self.path = path
        self.overwrite = overwrite
        self.keep = keep
        # Given, the folder is only shown (view, failures): malformed lines are skipped with a warning and
        # unknown fields kept, where a run needs every record it resumes from.
        self.warnings = warnings
        self.only = only  # a reader of some problems: the files index only these ids' lines
        self.lazy = lazy  # a reader of a page: lines are checked only when read (see StageFile)
        self.budget = ErrorBudget(allowed_errors)
        self.reads: Counter[str] = Counter()  # stage file -> times read (each should be read once)
        self._files: dict[str, StageFile] = {}
        self._finished: dict[str, list[str]] | None = None  # see watch()
        self._deferred = False
        self._lock = DirectoryLock(path)

    def __enter__(self) -> RunFolder:
        if self.path.exists() and not self.path.is_dir():
            raise UsageError(f"--out {self.path} is a file, not a directory")
        self._lock.__enter__()
        try:
            if self.overwrite:
                clear(self.path, self.keep)
        except BaseException:
            self._lock.__exit__()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
        self._lock.__exit__()

    # --- identity -------------------------------------------------------------------------------

    def recorded(self) -> dict[str, Any]:
        """What run.json says made this folder's records ({} for a new folder)."""
        path = self.path / RUN_FILE
        if path.exists():
            return json.loads(path.read_text())
        if any(self.path.glob("*.jsonl")):
            raise UsageError(f"{self.path} holds records but no {RUN_FILE} (an older logicpipe made them); "
                             "pass --overwrite to start afresh, or use another --out")
        return {}

    def settle(self, wanted: dict[str, Any], always: tuple[str, ...] = (),
               fresh: tuple[str, ...] = (), notes: tuple[str, ...] = ()) -> dict[str, Any]:
        """Refuse a run whose identity differs from the one recorded, then record it; returns the whole
        identity. Every top-level key recorded must keep its value (those in `always` must also stay
        absent when they were); `wanted["stages"]` (name -> fields) is compared stage by stage and merged with the
        stages recorded before, so a stage run alone keeps the others'. `fresh` names recorded stages
        that no longer bind (nothing was written under them); `notes` names keys recorded as they are
        now but never compared (where a task file is: moving it changes no record)."""
        recorded = self.recorded()
        differ = [key for key in recorded
                  if key != "stages" and key not in notes and recorded[key] != wanted.get(key)]
        if recorded:
            differ += [key for key in always if key not in recorded and wanted.get(key) is not None]
        then_stages: dict[str, Any] = recorded.get("stages", {})
        merged = {**wanted, "stages": {**then_stages, **wanted.get("stages", {})}}
        for stage, now in wanted.get("stages", {}).items():
            then = then_stages.get(stage)
            if then is not None and stage not in fresh:
                differ += [f"{stage}.{key}" for key in sorted(set(now) | set(then)) if now.get(key) != then.get(key)]
        if differ:
            raise UsageError(f"{self.path} was made with other options ({', '.join(differ)} differ); "
                             "re-run with the same options to resume, or pass --overwrite to start afresh")
        if merged != recorded:
            write_json_if_changed(self.path / RUN_FILE, merged)
        return merged

    # --- stage files ----------------------------------------------------------------------------

    def stage_path(self, name: str) -> Path:
        return self.path / f"{name}.jsonl"

    def file(self, name: str, model: type[R]) -> StageFile[R]:
        """The stage file `name`, read once however often it is asked for."""
        if name not in self._files:
            self.reads[name] += self.stage_path(name).exists()
            self._files[name] = StageFile(self.stage_path(name), model, self.warnings, self.only, self.lazy)
            self._files[name].on_finish = lambda order, name=name: self._note(name, order)
            if self._deferred:
                self._files[name].defer()
        return self._files[name]

    def watch(self) -> dict[str, list[str]]:
        """From now on, note which files each finish() kept which ids in (a chunk's, to skip it on resume)."""
        self._finished = {}
        return self._finished

    def _note(self, name: str, order: list[str]) -> None:
        if self._finished is not None:
            self._finished.setdefault(name, []).extend(order)

    def parsed(self) -> dict[str, int]:
        """Records parsed from each stage file so far."""
        return {name: stage.parsed for name, stage in self._files.items() if stage.parsed}

    def defer(self) -> None:
        """A run in chunks: each stage file is put in input order once, by finish_files(), not per chunk."""
        self._deferred = True
        for stage in self._files.values():
            stage.defer()

    def finish_files(self) -> None:
        for stage in self._files.values():
            stage.settle()
        self._deferred = False

    def exists(self, name: str) -> bool:
        return self.stage_path(name).exists()

    def close(self) -> None:
        for stage in self._files.values():
            stage.close()
