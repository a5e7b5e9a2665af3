"""Several candidates a step, raced on validation by successive halving: every candidate is scored on
the first slice of the validation problems, the worse half is dropped, the rest go on to a slice twice
as long, until one is left; that one is scored on every validation problem and kept only by the paired
test against the current state (stats.decide). The slices grow from the front of the validation
problems, so each rung only scores the problems its candidates have not seen yet, and the current
state's scores (known on every problem) are never recomputed."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from .config import OptimizeConfig
from .params import PromptParams, Structure
from .records import CandidateRecord, Rung, label
from .stats import decide, paired

MIN_SLICE = 2  # a rung scores at least this many problems: one problem says nothing


@dataclass
class Entrant:
    record: CandidateRecord  # filled in as it is judged
    params: PromptParams
    structure: Structure
    folder: Path
    scores: dict[str, float] = field(default_factory=dict)
    tokens: dict[str, int] = field(default_factory=dict)

    @property
    def label(self) -> str:
        return label(self.record)


@dataclass
class RaceOutcome:
    records: list[CandidateRecord]  # the dropped ones, then the survivor's (accepted or rolled back)
    survivor: Entrant | None
    scores: dict[str, float]  # the survivor's, on every validation problem
    tokens: dict[str, int]
    rungs: list[Rung]


Scorer = Callable[[Entrant, list[str]], tuple[dict[str, float], dict[str, int]]]


def slices(candidates: int, problems: int) -> list[int]:
    """How many validation problems each racing rung scores: with k = ceil(log2(candidates)) rungs, rung
    r scores problems / 2^(k - r) (at least MIN_SLICE, at most all); the survivor then scores all."""
    rungs = math.ceil(math.log2(candidates)) if candidates > 1 else 0
    return [min(problems, max(MIN_SLICE, math.ceil(problems / 2 ** (rungs - r)))) for r in range(rungs)]


def _score_on(entrant: Entrant, ids: list[str], scored: Scorer) -> None:
    todo = [i for i in ids if i not in entrant.scores]
    if todo:
        scores, tokens = scored(entrant, todo)
        entrant.scores.update(scores)
        entrant.tokens.update(tokens)


def _judged(entrant: Entrant, ids: list[str], current: dict[str, float], current_tokens: dict[str, int],
            config: OptimizeConfig, rung: int | None) -> CandidateRecord:
    """The entrant's record on `ids`: its score and tokens beside the current state's, and the decision
    (status left for the caller where it was raced out)."""
    accuracy = paired([entrant.scores[i] for i in ids], [current[i] for i in ids])
    saved = paired([float(current_tokens.get(i, 0)) for i in ids], [float(entrant.tokens.get(i, 0)) for i in ids])
    kept, why = decide(accuracy, saved, config.objective, config.z)
    return entrant.record.model_copy(update={
        "params_hash": entrant.params.hash, "structure": entrant.structure.model_dump(), "paired": accuracy,
        "status": "accepted" if kept else "rolled_back", "reason": why, "rung": rung, "problems": len(ids),
        "val_score": sum(entrant.scores[i] for i in ids) / len(ids),
        "base_score": sum(current[i] for i in ids) / len(ids),
        "tokens": sum(entrant.tokens.get(i, 0) for i in ids) / len(ids),
        "base_tokens": sum(current_tokens.get(i, 0) for i in ids) / len(ids), "tokens_saved": saved})


def race(entrants: list[Entrant], val_ids: list[str], current: dict[str, float], current_tokens: dict[str, int],
         scored: Scorer, config: OptimizeConfig) -> RaceOutcome:
    """Successive halving over `entrants` (in the order of preference: a tie keeps the earlier one)."""
    alive = list(entrants)
    records: list[CandidateRecord] = []
    rungs: list[Rung] = []
    for number, size in enumerate(slices(len(entrants), len(val_ids))):
        if len(alive) == 1:
            break
        ids = val_ids[:size]
        for entrant in alive:
            _score_on(entrant, ids, scored)
        means = {id(e): sum(e.scores[i] for i in ids) / len(ids) for e in alive}
        ordered = sorted(alive, key=lambda e: -means[id(e)])  # stable: ties keep the order of preference
        kept = ordered[:math.ceil(len(alive) / 2)]
        rungs.append(Rung(rung=number, problems=size, scores={e.label: round(means[id(e)], 4) for e in alive},
                          kept=[e.label for e in kept]))
        for entrant in ordered[len(kept):]:
            record = _judged(entrant, ids, current, current_tokens, config, number)
            records.append(record.model_copy(update={
                "status": "dropped", "reason": f"raced out on {size} validation problems by "
                                               f"{', '.join(e.label for e in kept)}"}))
        alive = kept
    survivor = alive[0]
    _score_on(survivor, val_ids, scored)
    records.append(_judged(survivor, val_ids, current, current_tokens, config, len(rungs) if rungs else None))
    return RaceOutcome(records, survivor, dict(survivor.scores), dict(survivor.tokens), rungs)
