"""Records of an optimisation run, one pydantic model per JSONL line: what each problem gave under a
prompt set, the judge's loss, the textual gradients, each candidate and how it was judged, and each step."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from ..core.records import SCHEMA_VERSION, Usage

Node = Literal["interpret", "solve", "refine", "formulate"]
# dropped: raced out on a slice of validation by a better candidate of the same step (successive halving).
CandidateStatus = Literal["accepted", "rolled_back", "rejected", "dropped"]


class _Line(BaseModel):
    model_config = ConfigDict(extra="forbid")
    schema_version: int = SCHEMA_VERSION


class ProblemOutcome(_Line):
    """What the pipeline made of one problem under one prompt set and structure."""

    id: str
    split: str
    correct: bool
    executed: bool
    error_category: str | None = None
    answer: str | None = None
    gold: str | None = None
    rounds: int = 0
    program: str | None = None  # the latest program (after refinement), if any
    prompt_hash: str | None = None


class LossRecord(_Line):
    """The judge's verdict on one trajectory; score None when the reply did not parse (error says why)."""

    step: int
    id: str
    score: float | None = Field(default=None, ge=0, le=10)
    critique: str = ""
    supervised: bool = True
    outcome: ProblemOutcome
    usage: Usage | None = None
    error: str | None = None


class GradientRecord(_Line):
    """Textual feedback for one node of one trajectory, conditioned on the node downstream of it."""

    step: int
    id: str
    node: Node
    gradient: str
    downstream: Node | None = None
    usage: Usage | None = None
    error: str | None = None


class Paired(BaseModel):
    """Per-problem differences (new - old) on the same validation problems."""

    model_config = ConfigDict(extra="forbid")
    n: int
    mean: float
    se: float
    wins: int
    losses: int


class CandidateRecord(_Line):
    step: int
    kind: Literal["prompt", "structure"]
    prompt_id: str | None = None
    component: str | None = None
    change: dict[str, Any] = Field(default_factory=dict)  # structure field -> new value
    params_hash: str | None = None
    structure: dict[str, Any] | None = None
    status: CandidateStatus
    reason: str | None = None
    val_score: float | None = None
    base_score: float | None = None
    paired: Paired | None = None
    attempts: int = 1
    source: str | None = None  # a harvested demonstration: the id of the training problem it came from
    rung: int | None = None  # the last successive-halving rung it ran in (None: no race)
    problems: int | None = None  # validation problems it was scored on (fewer when raced out)
    tokens: float | None = None  # mean model tokens per validation problem (prompt + completion)
    base_tokens: float | None = None  # ... of the current state on the same problems
    tokens_saved: Paired | None = None  # old - new tokens per problem (positive: the candidate is cheaper)


class Rung(BaseModel):
    """One rung of a step's successive-halving race: every candidate still in it scored on the first
    `problems` validation problems (mean score by candidate label), and those kept for the next rung."""

    model_config = ConfigDict(extra="forbid")
    rung: int
    problems: int
    scores: dict[str, float]
    kept: list[str]


class StepRecord(_Line):
    step: int
    accepted: str | None = None  # hash of the accepted candidate's prompt set (None: nothing accepted)
    val_score: float | None = None  # of the state after the step
    calls: int = 0
    cached_calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost: float | None = None  # None when no prices were given
    seconds: float = 0.0
    # Why the rewritten components were chosen: blame per "prompt/component" from the step's gradients.
    blame: dict[str, float] = Field(default_factory=dict)
    choice: str | None = None
    race: list[Rung] = Field(default_factory=list)
    optimizer_prompts: dict[str, str] = Field(default_factory=dict)  # opt-* template id -> hash this step used


class TestScore(_Line):
    """The start and best prompt sets scored on the test part, which neither training nor acceptance saw
    (OUT/test.json; report.json carries it). Accuracy, whatever --unsupervised says: the gold answers are
    read here only to report, never to optimise. start/best are None when the evaluation could not run
    (error says why)."""

    split: str
    problems: int
    ids_file: str  # OUT/splits/test.txt: `logicpipe run --ids` reads it
    start_hash: str
    best_hash: str
    best_structure: dict[str, Any]
    start: float | None = None
    best: float | None = None
    paired: Paired | None = None  # best - start, problem by problem
    interval: tuple[float, float] | None = None  # 95% interval of the paired mean difference
    stopped: str | None = None  # why the optimisation ended early (a budget, Ctrl-C, a model failure)
    error: str | None = None
    command: str = ""  # reproduces `best` with `logicpipe run`
    calls: int = 0  # the test evaluation's own model calls (outside --max-calls/--max-cost)
    cached_calls: int = 0
    sent: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0


def label(record: CandidateRecord) -> str:
    """How a candidate is named in a race and in notes: its prompt/component, or its structure change."""
    if record.kind == "structure":
        return "structure " + (", ".join(f"{k}={v}" for k, v in record.change.items()) or "(no change written)")
    if record.prompt_id is None:  # every attempt was rejected before it named what it changes
        return "prompt (no rewrite written)"
    return f"{record.prompt_id}/{record.component}" if record.component else record.prompt_id
