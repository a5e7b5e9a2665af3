"""Finished chunks, noted in chunks.jsonl so that a resumed run skips them without parsing a record.

When a chunk has been through its stages and none of its records is to be redone (no transient error),
a line notes: the chunk (a hash of its problems' ids and gold answers), the run's identity, the stages
it went through, each stage's count, the ids each stage file kept with a hash of their lines, and the
chunk's metric tally. A later run with the same identity finds those lines unchanged (read, hashed, not
parsed) and adds the noted tally and counts instead of rebuilding the chunk's trajectories: metrics come
out the same as a clean run's. A line changed since (damaged, redone, gone) has the chunk redone, and so
checked as every record a run reads is. A chunk that is redone and comes out unfinished gets a line that says so, and the
latest line of a chunk is the one that counts.
"""

from __future__ import annotations

import hashlib
import json
import os
from typing import Any

from ..core.jsonl import repair_torn_tail
from ..core.records import (
    DecisionRecord,
    EvaluateRecord,
    FormulateRecord,
    InterpretRecord,
    Record,
    SolveRecord,
)
from ..core.trajectory import Trajectory
from ..runtime.folder import NOTES, RunFolder
from .context import StageReport

FILE = "chunks.jsonl"


def chunk_key(ids: list[str], answers: list[str | None]) -> str:
    """A chunk's problems: their ids and gold answers (a changed answer is rescored, not skipped)."""
    digest = hashlib.sha256()
    for identifier, answer in zip(ids, answers):
        digest.update(f"{identifier}\x1f{answer}\x1e".encode())
    return digest.hexdigest()


def stamp(identity: dict[str, Any]) -> str:
    """The run's identity (run.json as it now stands): a chunk noted under another is not skipped. Where
    the task file or data folder lies is no part of it (a moved one resumes as it was)."""
    decides = {key: value for key, value in identity.items() if key not in NOTES}
    return hashlib.sha256(json.dumps(decides, sort_keys=True).encode()).hexdigest()


def finished(trajectories: list[Trajectory]) -> bool:
    """Whether no record of the chunk is to be redone by a later run."""
    for t in trajectories:
        records = [t.formulated, *t.refined.values(), *t.solved.values(), *t.decided.values(), t.interpreted]
        if any(record is not None and record.retry() for record in records):
            return False
    return True


def stage_of(file: str) -> str:
    """The stage that writes a stage file (refinement writes refine-N, solve-N and compare-N)."""
    return "solve" if file == "solve" else "refine" if "-" in file else file


_MODELS: dict[str, type[Record]] = {
    "formulate": FormulateRecord, "refine": FormulateRecord, "solve": SolveRecord, "compare": DecisionRecord,
    "interpret": InterpretRecord, "evaluate": EvaluateRecord,
}


def model_of(file: str) -> type[Record]:
    return _MODELS[file.split("-")[0]]


class ChunkLog:
    """The noted chunks of one run identity, read once; notes appended as chunks finish."""

    def __init__(self, store: RunFolder, identity: dict[str, Any]):
        self.path = store.path / FILE
        self.stamp = stamp(identity)
        self.notes: dict[str, dict] = {}
        if self.path.exists():
            for line in self.path.read_bytes().splitlines():
                try:
                    note = json.loads(line)
                except ValueError:  # a torn last line (a killed run): that chunk is redone
                    continue
                if isinstance(note, dict) and note.get("stamp") == self.stamp:
                    self.notes[note["key"]] = note
        self._fd: int | None = None

    def skippable(self, store: RunFolder, key: str, ids: list[str], stages: list[str]) -> dict | None:
        """The note of a finished chunk whose records are all in the files as they were when it was noted
        (byte for byte: a record missing, redone or damaged since has the chunk redone), else None."""
        note = self.notes.get(key)
        if note is None or not note["finished"] or not set(stages) <= set(note["stages"]):
            return None
        for file, kept in note["files"].items():
            if store.file(file, model_of(file)).digest(_kept(kept, ids)) != kept.get("digest"):
                return None
        return note

    def skip(self, store: RunFolder, note: dict, ids: list[str], stages: list[str]) -> list[StageReport]:
        """Take the chunk as noted: each file the stages write keeps its ids; the stages' counts."""
        for file, kept in note["files"].items():
            if stage_of(file) in stages:
                store.file(file, model_of(file)).finish(_kept(kept, ids))
        return [StageReport(name, total, 0, 0.0) for name, total in note["reports"] if name in stages]

    def note(self, store: RunFolder, key: str, ids: list[str], stages: list[str], kept: dict[str, list[str]],
             reports: list[StageReport], tally: dict | None, done: bool) -> None:
        """Note a chunk just taken through `stages` (not written when the same note is there)."""
        note: dict[str, Any] = {"key": key, "stamp": self.stamp, "finished": done}
        if done:
            files = {file: {**_which(order, ids), "digest": store.file(file, model_of(file)).digest(order)}
                     for file, order in kept.items()}
            note.update(stages=sorted(stages), reports=[[r.name, r.total] for r in reports], files=files, tally=tally)
        if self.notes.get(key) == note or (not done and key not in self.notes):
            return
        self.notes[key] = note
        if self._fd is None:
            repair_torn_tail(self.path)
            self._fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        os.write(self._fd, (json.dumps(note, separators=(",", ":")) + "\n").encode())  # one write: a kill tears one line

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


def _which(kept: list[str], ids: list[str]) -> dict[str, list[str]]:
    """The ids a file kept, noted the shorter way: those it kept, or those it left out."""
    if len(kept) <= len(ids) // 2:
        return {"only": kept}
    chosen = set(kept)
    return {"except": [i for i in ids if i not in chosen]}


def _kept(noted: dict[str, Any], ids: list[str]) -> list[str]:
    if "only" in noted:
        return noted["only"]
    left_out = set(noted["except"])
    return [i for i in ids if i not in left_out]
