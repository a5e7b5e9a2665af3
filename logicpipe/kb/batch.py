"""A kb batch (`kb ask --questions`, `kb validate --answers`) on the run machinery of `logicpipe run`:
the --out folder is a RunFolder (one writer at a time, run.json naming what decides the records, a
resume with other options refused), each input gets exactly one typed record in the stage file (a
failure is an error record), and model errors are charged to the --max-errors budget."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from .. import __version__
from ..core.errors import UsageError
from ..core.records import Record, stage_error
from ..llm import LLMClient
from ..llm.batchapi import OUTLIVES_OVERWRITE
from ..runtime.folder import RunFolder, allowed_errors
from .flow import Flow, Input, KBRecord, run_flows
from .knowledge import kb_files

R = TypeVar("R", bound=Record)


def kb_sha256(path: Path) -> str:
    """The KB's files by name and content: answers depend on every clause, so an edited KB is another KB."""
    digest = hashlib.sha256()
    for file, name in kb_files(path):
        digest.update(Path(name).name.encode() + b"\x00" + file.read_bytes() + b"\x00")
    return digest.hexdigest()


def budget(max_errors: str, total: int) -> int:
    try:
        return allowed_errors(max_errors, total)
    except ValueError as exc:
        raise UsageError(f"--max-errors: {exc}") from None


@dataclass
class Batch:
    """One batch: its stage ("ask" or "validate"), the record type and the field holding the input text."""

    stage: str
    model: type[KBRecord]
    text_field: str

    def error_record(self, item: Input, exc: Exception, percepts: list[str]) -> KBRecord:
        return self.model.model_validate({"id": item.id, self.text_field: item.text, "error": stage_error(exc),
                                          "percepts": seen(item, percepts)})

    def done(self, record: KBRecord | None, item: Input, percepts: list[str]) -> bool:
        """A record stands unless it failed for a transient reason, or its input's text or the percept
        values its proofs saw have changed."""
        return (record is not None and not record.retry() and getattr(record, self.text_field) == item.text
                and record.percepts == seen(item, percepts))


def seen(item: Input, percepts: list[str]) -> list[str]:
    """The percept values an input's proofs see: the run's own (`percepts`), then the input's."""
    return [*percepts, *(str(p) for p in item.percepts)]


@dataclass
class BatchReport:
    total: int
    new: int
    errors: int  # records that hold an error
    # --batch: (batches this command created, batches an earlier command created that this one read)
    batches: tuple[int, int] | None = None


def run_batch(batch: Batch, out: Path, inputs: list[Input], identity: dict[str, Any], client: LLMClient,
              make_flow: Callable[[Input], Flow], *, percepts: list[str], overwrite: bool,
              max_errors: str) -> BatchReport:
    """Hold `out` as a run folder, settle its identity (refusing a mismatched resume), run the inputs
    without a standing record and put the stage file in input order. `percepts` are the values every
    input's proofs see (the KB's, from --percept and --percepts)."""
    allowed = budget(max_errors, len(inputs))
    wanted = {**identity, "logicpipe": __version__}
    with RunFolder(out, overwrite=overwrite, allowed_errors=allowed, keep=OUTLIVES_OVERWRITE) as folder:
        folder.settle(wanted)
        stage = folder.file(batch.stage, batch.model)
        todo = [item for item in inputs if not batch.done(stage.done.get(item.id), item, percepts)]
        by_id = {item.id: item for item in todo}
        try:
            run_flows(client, ((item.id, make_flow(item)) for item in todo), stage.write,
                      failed=lambda key, exc: batch.error_record(by_id[key], exc, percepts), budget=folder.budget)
        finally:
            client.close()
            close = getattr(client.gate, "close", None)  # --batch's client of the batch API
            if close is not None:
                close()
        stage.finish([item.id for item in inputs])
        records = [stage.done[item.id] for item in inputs if item.id in stage.done]
    return BatchReport(len(records), len(todo), sum(record.error is not None for record in records),
                       _batches(client.gate))


def _batches(gate: Any) -> tuple[int, int] | None:
    """--batch (llm/batchapi.py BatchAPI): the batches created and resumed, for the command's summary."""
    from ..llm.batchapi import BatchAPI

    return (gate.created, gate.resumed) if isinstance(gate, BatchAPI) else None
