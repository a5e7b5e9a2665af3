"""Typed stage records, one pydantic model per JSONL line, and the one place exceptions become errors."""

from __future__ import annotations

import hashlib
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, SerializerFunctionWrapHandler, model_serializer

from .errors import ErrorCategory, classify

SCHEMA_VERSION = 2


# Categories after which the solver ran the program to the end: Logic-LM counts these as executed.
EXECUTED_CATEGORIES = {None, ErrorCategory.no_answer}

# Categories a solver produces for a program that refinement can repair.
REFINABLE = {ErrorCategory.parse, ErrorCategory.execution, ErrorCategory.timeout}

# The source of a semantic revision's record begins with this (a repair's with "refine:").
REVISE_SOURCE = "revise:"


def round_stands(source: str, revised: bool | None) -> bool:
    """Whether a refinement round's program counts, from its record's source and its comparison's
    verdict: a repair does; a semantic revision (--refine semantic) only once it has won."""
    return not source.startswith(REVISE_SOURCE) or revised is True


class StageError(BaseModel):
    model_config = ConfigDict(extra="forbid")
    category: ErrorCategory
    message: str
    # True when the failure may go away on a later run (a server outage, rate limits): the next run
    # redoes the record instead of keeping it.
    transient: bool = False


def executed(error: StageError | None) -> bool:
    """Whether the solver ran the program to the end (Logic-LM's "executed")."""
    return error is None or error.category in EXECUTED_CATEGORIES


def stage_error(exc: BaseException) -> StageError:
    """An exception as a typed error record (errors.classify is the mapping)."""
    category, message, transient = classify(exc)
    return StageError(category=category, message=message, transient=transient)


def text_sha(*texts: str | None) -> str:
    """A short content hash tying a record to the program it was made from."""
    digest = hashlib.sha256()
    for text in texts:
        digest.update((text or "").encode("utf-8", "surrogatepass"))
        digest.update(b"\x00")
    return digest.hexdigest()[:16]


class Record(BaseModel):
    model_config = ConfigDict(extra="forbid")
    # Fields added after records were first written: left out while empty, so the records that do
    # not use them stay byte-identical to those written before the fields existed.
    OMITTED_WHEN_EMPTY: ClassVar[tuple[str, ...]] = ()
    schema_version: int = SCHEMA_VERSION
    id: str
    error: StageError | None = None

    @model_serializer(mode="wrap")
    def _without_empty_additions(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        data = handler(self)
        for name in self.OMITTED_WHEN_EMPTY:
            if data.get(name) is None:
                data.pop(name, None)
        return data

    def retry(self) -> bool:
        """Whether a later run should redo this record (it failed for a transient reason)."""
        return self.error is not None and self.error.transient


class Problem(BaseModel):
    model_config = ConfigDict(extra="ignore")
    id: str
    context: str
    question: str
    options: list[str] = Field(default_factory=list)
    answer: str | None = None


class Usage(BaseModel):
    model_config = ConfigDict(extra="forbid")
    prompt_tokens: int = 0
    completion_tokens: int = 0
    calls: int = 0
    cached_calls: int = 0  # answered by the reply cache, not paid for by this run
    batch_calls: int = 0  # answered by this run's batches (--batch, --batch-import), at the batch price

    def __add__(self, other: Usage) -> Usage:
        return Usage(**{key: getattr(self, key) + getattr(other, key) for key in Usage.model_fields})


class FormulateRecord(Record):
    """A program (or K samples) with its provenance (replay file or model, round, prompt id and hash,
    the program it repaired): formulate.jsonl, and refine-N.jsonl for round N."""

    dataset: str
    program: str | None = None
    source: str
    samples: list[str] = Field(default_factory=list)
    usage: Usage | None = None
    round: int = 0
    prompt_id: str | None = None
    prompt_hash: str | None = None
    # For a refinement: the hash of the program it repaired, so a stale repair is never reused.
    parent: str | None = None
    # A reply that held no program (error no_program), kept for inspection.
    reply: str | None = None
    # For a refinement: the hash of the request sent (request_sha), so no round repeats an earlier one.
    request: str | None = None

    OMITTED_WHEN_EMPTY = ("reply", "request")

    def programs(self) -> list[str]:
        return self.samples or ([self.program] if self.program else [])

    def revision(self) -> bool:
        """Whether this is a semantic revision of a program that executed (--refine semantic), which
        stands only once it wins its comparison, rather than a repair of a failed one."""
        return self.source.startswith(REVISE_SOURCE)


class SolveRecord(Record):
    dataset: str
    solver: str
    verdict: str | None = None
    seconds: float = 0.0
    explanation: dict[str, Any] | None = None
    round: int = 0
    program: str | None = None  # text_sha of the program(s) run
    node: str | None = None  # the Ray node that ran the call (--executor ray only)
    # Each leniency the program needed (its solver's named rules, docs/tasks.md) -> where it was first
    # needed ("line 4, column 7"): how a user tells an Exe_Rate on Logic-LM's grammar from ours.
    lenient: dict[str, str] | None = None

    OMITTED_WHEN_EMPTY = ("node", "lenient")


# Why semantic refinement kept or replaced a program: the revision won or lost the comparison, it did not
# execute, it was the same program, its request failed, or the comparison's reply named no winner.
Outcome = Literal["won", "lost", "not_executed", "unchanged", "no_revision", "no_winner"]


class DecisionRecord(Record):
    """Semantic refinement's verdict on round N's revision of one program (compare-N.jsonl): whether it
    replaced the program it revises and why. A failed comparison keeps the program and types its error."""

    dataset: str
    round: int
    program: str  # program hash of the revision
    parent: str | None = None  # program hash of the program it revises
    revised: bool
    outcome: Outcome
    note: str | None = None  # for not_executed: the solver's error
    # The comparison (absent where none was needed): which program was shown as A and which as B,
    # the letter the model chose, its reply and what it cost.
    order: list[Literal["program", "revision"]] | None = None
    winner: Literal["A", "B"] | None = None
    reply: str | None = None
    usage: Usage | None = None


class Vote(BaseModel):
    """One sampled answer of a baseline with self-consistency: the option its reply named, or why none."""

    model_config = ConfigDict(extra="forbid")
    answer: str | None = None
    error: StageError | None = None


class InterpretRecord(Record):
    predicted: str | None = None
    usage: Usage | None = None
    executed: bool
    final: str | None = None
    backup: str | None = None
    backup_error: StageError | None = None
    round: int = 0
    program: str | None = None  # the interpreted solve record's program hash
    # A baseline with --num-samples K > 1: each sample's answer or error, in sample order (the vote's input).
    votes: list[Vote] | None = None

    OMITTED_WHEN_EMPTY = ("votes",)

    def retry(self) -> bool:
        return super().retry() or (self.backup_error is not None and self.backup_error.transient)


class StepRecord(Record):
    """One prompted step of a chain (a solver-free method's translate, plan, solve, verify) for one
    problem: chain-<step>.jsonl. A step that was not asked, because an earlier one failed, says so in
    its error and has no reply."""

    step: str
    reply: str | None = None
    prompt_id: str
    prompt_hash: str
    usage: Usage | None = None
    # text_sha of what the earlier steps gave it (their replies, or their failures): a record asked with
    # other earlier replies than the problem has now is stale, and the step is asked again.
    parent: str


class EvaluateRecord(Record):
    gold: str | None
    predicted: str | None
    final: str | None
    executed: bool
    correct_executed: bool
    correct: bool
    backup: str | None = None  # which backup gave `final` (InterpretRecord.backup), if one did
    # Prompt and completion tokens of the problem's model calls, every stage's (Trajectory.usage), whether
    # or not the reply cache answered them (so a cached re-run scores the same); None: no model was asked.
    tokens: int | None = None
    cost: float | None = None  # what they cost at the run's --price-prompt/--price-completion; None: no prices

    OMITTED_WHEN_EMPTY = ("backup", "tokens", "cost")
