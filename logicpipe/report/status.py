"""`logicpipe status RUN`: where a run stands, without touching it. Per dataset folder: the problems
with records at each stage, whether the run finished (metrics.json), and the batches it has at a
provider (`--batch`): each one's id and status as last polled, what the ended ones gave, and what is
still out. With `refresh`, the provider is asked for the status of each batch not read yet (read-only:
nothing is written, and no lock is taken, so a run that is going on can be looked at)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from ..core.errors import LLMError
from ..llm.batchapi import read_record
from ..stages.store import read_recorded, stage_dirs


@dataclass
class Batch:
    id: str | None  # None: recorded while being created (a re-run looks it up), or refused by the provider
    status: str  # as last polled (or refreshed)
    lines: int
    created: float  # when it was submitted (seconds since the epoch)
    read: bool  # ended, and its replies are in the cache
    stored: int | None = None  # of an ended batch: replies stored, lines failed, lines never run
    failed: int | None = None
    unfinished: int | None = None


@dataclass
class FolderStatus:
    dataset: str
    path: str
    problems: int  # problems with any record
    stages: dict[str, int]  # stage -> problems with a record that stands
    finished: bool  # metrics.json is there: evaluate ran over every problem
    accuracy: float | None
    batches: list[Batch] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    @property
    def pending(self) -> list[Batch]:
        return [b for b in self.batches if not b.read]


Refresh = Callable[[str], str]  # a batch id -> its status at the provider now


def run_status(run_dir: Path, dataset: str | None = None, refresh: Refresh | None = None) -> list[FolderStatus]:
    """The status of each dataset folder of `run_dir` (only `dataset`'s if given)."""
    return [_folder(folder, refresh) for folder in stage_dirs(run_dir, dataset)]


def _folder(folder: Path, refresh: Refresh | None) -> FolderStatus:
    warnings: list[str] = []
    recorded = read_recorded(folder, warnings)
    stages: dict[str, int] = {}

    def count(stage: str, has: bool) -> None:
        if has:
            stages[stage] = stages.get(stage, 0) + 1

    problems = recorded.total
    if "kb" in recorded.identity:  # a kb batch (kb ask --questions, kb validate --answers): its one stage file
        stages = _kb_records(folder, recorded.identity.get("stages", {}), warnings)
        problems = max(stages.values(), default=0)
    for trajectory in recorded.trajectories:
        count("formulate", trajectory.formulated is not None)
        count("solve", 0 in trajectory.solved)
        for round_ in trajectory.refined:
            count(f"refine-{round_}", True)
        count("interpret", trajectory.interpreted is not None)
        count("evaluate", trajectory.evaluated is not None)
    batches = [Batch(id=b["id"], status=b.get("status", "?"), lines=b.get("lines", 0), created=b.get("created", 0.0),
                     read=bool(b["read"]), stored=b.get("stored"), failed=b.get("failed"),
                     unfinished=b.get("unfinished")) for b in read_record(folder)]
    for batch in batches:
        if refresh is not None and not batch.read and batch.id is not None:
            try:
                batch.status = refresh(batch.id)
            except LLMError as exc:
                warnings.append(f"{batch.id}: {exc}")
    metrics = recorded.metrics
    return FolderStatus(folder.name, str(folder), problems, dict(sorted(stages.items(), key=_order)),
                        bool(metrics), metrics.get("accuracy"), batches, warnings)


def _kb_records(folder: Path, stages: dict, warnings: list[str]) -> dict[str, int]:
    """Inputs with a record in a kb batch's stage file, read as the kb commands read it."""
    from ..kb.ask import AskRecord
    from ..kb.flow import KBRecord
    from ..kb.validate import ValidateRecord
    from ..run.folder import RunFolder

    models: dict[str, type[KBRecord]] = {"ask": AskRecord, "validate": ValidateRecord}
    store = RunFolder(folder, warnings=warnings)  # opened without `with`: it only reads
    try:
        return {name: len(store.file(name, model).done) for name, model in models.items() if name in stages}
    finally:
        store.close()


def _order(item: tuple[str, int]) -> tuple[int, int]:
    stage = item[0]
    ranks = {"formulate": (0, 0), "solve": (1, 0), "interpret": (3, 0), "evaluate": (4, 0)}
    return ranks.get(stage, (2, int(stage.rpartition("-")[2]) if stage.startswith("refine-") else 0))


def provider(base_url: str | None, timeout: float) -> tuple[Refresh, Callable[[], None]]:
    """A refresh through the provider's batch API at `base_url` (OPENAI_BASE_URL, else OpenAI's), and
    its close."""
    import openai

    from ..llm.request import api_key, endpoint

    client = openai.OpenAI(base_url=endpoint(base_url), api_key=api_key(base_url), max_retries=2, timeout=timeout)

    def refresh(identifier: str) -> str:
        try:
            return str(client.batches.retrieve(identifier).status)
        except openai.APIError as exc:
            raise LLMError(f"cannot ask for its status ({type(exc).__name__}: {str(exc)[:200]})") from exc

    return refresh, client.close


def as_json(folders: list[FolderStatus]) -> list[dict[str, Any]]:
    return [{**asdict(folder), "pending": len(folder.pending)} for folder in folders]
