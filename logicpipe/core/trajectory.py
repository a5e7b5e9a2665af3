"""One problem's whole history: its programs, solver results, refinement rounds, answer and score.

Stages update trajectories in memory; the stage files are the durable log they are rebuilt from. A
record is only taken from a file when it was made from what precedes it in the trajectory (the program
hash it carries matches), so a record made stale by a redone upstream stage is never reused.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .records import (
    DecisionRecord,
    ErrorCategory,
    EvaluateRecord,
    FormulateRecord,
    InterpretRecord,
    Problem,
    SolveRecord,
    StepRecord,
    Usage,
    round_stands,
    text_sha,
)


def program_sha(record: FormulateRecord) -> str:
    return text_sha(*record.programs())


def step_parent(earlier: list[StepRecord]) -> str:
    """What a chain's step is asked with: the earlier steps' replies, or how they failed (StepRecord.parent)."""
    return text_sha("chain", *(f"{record.step}\x00{record.reply or ''}\x00"
                               f"{record.error.category.value + ': ' + record.error.message if record.error else ''}"
                               for record in earlier))


@dataclass
class Trajectory:
    problem: Problem
    formulated: FormulateRecord | None = None
    refined: dict[int, FormulateRecord] = field(default_factory=dict)  # round -> repaired program
    solved: dict[int, SolveRecord] = field(default_factory=dict)  # round -> solver result (0: first)
    decided: dict[int, DecisionRecord] = field(default_factory=dict)  # round -> verdict on its revision
    interpreted: InterpretRecord | None = None
    evaluated: EvaluateRecord | None = None
    # A chain of prompted steps (a solver-free method): step name -> its record, in the chain's order.
    steps: dict[str, StepRecord] = field(default_factory=dict)

    @property
    def id(self) -> str:
        return self.problem.id

    # Updates: a new record makes everything downstream of it stale.
    def set_formulated(self, record: FormulateRecord) -> None:
        self.formulated = record
        self.refined.clear()
        self.solved.clear()
        self.decided.clear()
        self.interpreted = None

    def set_refined(self, record: FormulateRecord) -> None:
        self.refined[record.round] = record
        for later in [r for r in self.refined if r > record.round]:
            del self.refined[later]
        for later in [r for r in self.solved if r >= record.round]:
            del self.solved[later]
        self._drop_decisions(record.round)
        self.interpreted = None

    def set_solved(self, record: SolveRecord) -> None:
        self.solved[record.round] = record
        for later in [r for r in self.refined if r > record.round]:
            del self.refined[later]
        for later in [r for r in self.solved if r > record.round]:
            del self.solved[later]
        self._drop_decisions(record.round)
        self.interpreted = None

    def set_decided(self, record: DecisionRecord) -> None:
        self.decided[record.round] = record
        for later in [r for r in self.refined if r > record.round]:
            del self.refined[later]
        for later in [r for r in self.solved if r > record.round]:
            del self.solved[later]
        self._drop_decisions(record.round + 1)
        self.interpreted = None

    def _drop_decisions(self, first: int) -> None:
        for later in [r for r in self.decided if r >= first]:
            del self.decided[later]

    # Views
    def stands(self, round_: int) -> bool:
        """Whether round `round_`'s program counts: a repair does; a semantic revision only once it
        has won its comparison (otherwise the trajectory backtracks to the program it revised)."""
        record = self.refined.get(round_)
        if record is None:
            return True
        decision = self.decided.get(round_)
        return round_stands(record.source, decision.revised if decision is not None else None)

    def rejected(self, before: int) -> bool:
        """Whether a revision before round `before` was not taken: asking again for the same program
        would bring the same revision (refinement runs at temperature 0), so revising stops there."""
        return any(not self.stands(r) for r in self.refined if r < before)

    def source(self, round_: int) -> FormulateRecord | None:
        """The record holding the program that round `round_` runs."""
        return self.formulated if round_ == 0 else self.refined.get(round_)

    def latest_solve(self, before: int | None = None) -> SolveRecord | None:
        """The solver result of the latest round before `before`; a round whose model call failed
        does not replace the solver's own verdict."""
        chosen = self.solved.get(0)
        for round_ in sorted(self.solved):
            if round_ == 0 or (before is not None and round_ >= before):
                continue
            record = self.solved[round_]
            if not self.stands(round_):
                continue
            if record.error is None or record.error.category not in (ErrorCategory.llm, ErrorCategory.no_program):
                chosen = record
        return chosen

    def latest_program(self, before: int | None = None) -> FormulateRecord | None:
        chosen = self.formulated
        for round_ in sorted(self.refined):
            if (before is None or round_ < before) and self.refined[round_].program and self.stands(round_):
                chosen = self.refined[round_]
        return chosen

    def chain_sha(self) -> str | None:
        """What a chain's answer was read from (its InterpretRecord.program): every step's reply or
        failure; None without a chain."""
        return step_parent(list(self.steps.values())) if self.steps else None

    def rounds(self) -> int:
        return max(self.solved, default=0)

    def usage(self) -> Usage | None:
        """The tokens every model call for this problem used (programs, repairs, judgements, the backup
        answer); None when no model was asked (a replay)."""
        total = None
        for record in [self.formulated, *self.refined.values(), *self.decided.values(), *self.steps.values(),
                       self.interpreted]:
            if record is not None and record.usage is not None:
                total = record.usage if total is None else total + record.usage
        return total
