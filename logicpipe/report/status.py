"""`logicpipe status RUN`: where a run stands, without touching it. Per run folder at or below RUN (at any
depth: stages/store.py, find_runs): the problems with records at each stage, whether the run finished (metrics.json; unknown for a kb batch, which writes
none), and the batches it has at a provider (`--batch`): each one's id and status as last polled, what
the ended ones gave, and what is still out. With `refresh`, the provider is asked for the status of each
batch not read yet (read-only: nothing is written, and no lock is taken, so a run that is going on can
be looked at)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from ..core.errors import LLMError
from ..core.trajectory import Trajectory
from ..llm.batchapi import read_record
from ..stages.store import find_runs, read_recorded


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
    dataset: str  # the folder's name
    label: str  # its path relative to RUN (`fol/folio`, `baseline-cot/folio`); its name when it is RUN
    path: str
    problems: int  # problems with any record
    stages: dict[str, int]  # stage -> problems with a record that stands
    finished: bool | None  # metrics.json is there: evaluate ran over every problem; None: a kb batch (no metrics)
    accuracy: float | None
    batches: list[Batch] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    tokens: int | None = None  # prompt and completion tokens of the model calls recorded so far; None: none
    cost: float | None = None  # what the run cost (metrics.json, with prices); None: unknown
    metrics: dict = field(default_factory=dict)  # metrics.json: the accuracy's interval and n

    @property
    def pending(self) -> list[Batch]:
        return [b for b in self.batches if not b.read]


Refresh = Callable[[str], str]  # a batch id -> its status at the provider now
Refresher = Callable[[str | None], Refresh]  # the base URL a run recorded (None: none) -> its refresh


def run_status(run_dir: Path, dataset: str | None = None,
               refresh: Refresher | None = None) -> list[FolderStatus]:
    """The status of each run folder under `run_dir` (only `dataset`'s if given)."""
    return [_folder(folder, label, refresh) for label, folder in find_runs(run_dir, dataset)]


def recorded_base_url(identity: dict[str, Any]) -> str | None:
    """The base URL a run recorded in its run.json: top level, else in a stage's identity (formulate's,
    refine's, a baseline's or a kb batch's stage); None when it recorded none (it went to
    OPENAI_BASE_URL, else OpenAI's)."""
    if identity.get("base_url"):
        return str(identity["base_url"])
    stages = identity.get("stages")
    for fields in (stages.values() if isinstance(stages, dict) else ()):
        if isinstance(fields, dict) and fields.get("base_url"):
            return str(fields["base_url"])
    return None


def _folder(folder: Path, label: str, refresher: Refresher | None) -> FolderStatus:
    warnings: list[str] = []
    recorded = read_recorded(folder, warnings)
    kb = "kb" in recorded.identity  # a kb batch (kb ask --questions, kb validate --answers): one stage file
    if kb:
        stages, tokens = _kb_records(folder, recorded.identity.get("stages", {}), warnings)
        problems = max(stages.values(), default=0)
    else:
        stages, problems = _stage_records(recorded.trajectories), recorded.total
        used = [u for u in (t.usage() for t in recorded.trajectories) if u is not None]
        tokens = sum(u.prompt_tokens + u.completion_tokens for u in used) if used else None
    batches = [Batch(id=b["id"], status=b.get("status", "?"), lines=b.get("lines", 0), created=b.get("created", 0.0),
                     read=bool(b["read"]), stored=b.get("stored"), failed=b.get("failed"),
                     unfinished=b.get("unfinished")) for b in read_record(folder)]
    asked = [b for b in batches if not b.read and b.id is not None]
    if refresher is not None and asked:
        refresh = refresher(recorded_base_url(recorded.identity))
        for batch in asked:
            try:
                batch.status = refresh(str(batch.id))
            except LLMError as exc:
                warnings.append(f"{batch.id}: {exc}")
    metrics = recorded.metrics
    finished = None if kb else bool(metrics)  # a kb batch writes no metrics.json
    return FolderStatus(folder.name, label, str(folder), problems, dict(sorted(stages.items(), key=_order)),
                        finished, metrics.get("accuracy"), batches, warnings, tokens, metrics.get("cost"), metrics)


def _stage_records(trajectories: list[Trajectory]) -> dict[str, int]:
    """Problems with a record that stands, per pipeline stage (each refinement round, each step of a
    chain its own)."""
    stages: Counter[str] = Counter()
    for trajectory in trajectories:
        has = {"formulate": trajectory.formulated is not None, "solve": 0 in trajectory.solved,
               "interpret": trajectory.interpreted is not None, "evaluate": trajectory.evaluated is not None,
               **{f"refine-{round_}": True for round_ in trajectory.refined},
               **{f"chain-{step}": True for step in trajectory.steps}}  # a chain's steps, in order
        stages.update(name for name, there in has.items() if there)
    return dict(stages)


def _kb_records(folder: Path, stages: dict, warnings: list[str]) -> tuple[dict[str, int], int | None]:
    """Inputs with a record in a kb batch's stage file, read as the kb commands read it, and the tokens
    their model calls used (None: none)."""
    from ..kb.ask import AskRecord
    from ..kb.flow import KBRecord
    from ..kb.validate import ValidateRecord
    from ..runtime.folder import RunFolder

    models: dict[str, type[KBRecord]] = {"ask": AskRecord, "validate": ValidateRecord}
    store = RunFolder(folder, warnings=warnings)  # opened without `with`: it only reads
    try:
        done = {name: store.file(name, model).done for name, model in models.items() if name in stages}
        used = [r.usage for records in done.values() for r in records.values() if r.usage.calls]
        tokens = sum(u.prompt_tokens + u.completion_tokens for u in used) if used else None
        return {name: len(records) for name, records in done.items()}, tokens
    finally:
        store.close()


def _order(item: tuple[str, int]) -> tuple[int, int]:
    stage = item[0]
    ranks = {"formulate": (0, 0), "solve": (1, 0), "interpret": (3, 0), "evaluate": (4, 0)}
    return ranks.get(stage, (2, int(stage.rpartition("-")[2]) if stage.startswith("refine-") else 0))


def provider(base_url: str | None, timeout: float) -> tuple[Refresher, Callable[[], None]]:
    """Refreshes through the providers' batch APIs, and their close: each run folder's through `base_url`
    when given, else through the base URL the run recorded, else OPENAI_BASE_URL, else OpenAI's. A
    client is made when a folder first needs one, one per distinct URL."""
    import openai

    from ..llm.request import api_key, endpoint

    clients: dict[str, openai.OpenAI] = {}

    def refresher(recorded: str | None) -> Refresh:
        chosen = base_url or recorded
        url = endpoint(chosen)
        if url not in clients:
            clients[url] = openai.OpenAI(base_url=url, api_key=api_key(chosen), max_retries=2, timeout=timeout)
        client = clients[url]

        def refresh(identifier: str) -> str:
            try:
                return str(client.batches.retrieve(identifier).status)
            except openai.APIError as exc:
                raise LLMError(f"cannot ask for its status ({type(exc).__name__}: {str(exc)[:200]})") from exc

        return refresh

    def close() -> None:
        for client in clients.values():
            client.close()

    return refresher, close


def as_json(folders: list[FolderStatus]) -> list[dict[str, Any]]:
    shown = []
    for folder in folders:
        fields = asdict(folder)
        metrics = fields.pop("metrics")
        # The accuracy with its interval and n, as the line shows it; null when undefined.
        shown.append({**fields, "accuracy_ci": metrics.get("accuracy_ci"), "total": metrics.get("total"),
                      "pending": len(folder.pending)})
    return shown
