"""Gather what `logicpipe explain` shows for one problem: the problem itself, the solver's record of
the round that answered (or of the round asked for), or a baseline's answer with its samples' votes, or
a chain's steps with their replies, and the scored answer."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from ..core.errors import LogicPipeError, UsageError
from ..core.records import EvaluateRecord, InterpretRecord, Problem, SolveRecord, StepRecord
from ..core.trajectory import Trajectory
from ..data import DatasetSpec, load_task_file
from ..stages.store import Recorded, read_recorded, stage_dirs
from .problems import HINT, load_recorded_problems, split_of


@dataclass
class Explained:
    solve: SolveRecord | None  # None for a baseline or a chain of prompted steps: no solver
    evaluated: EvaluateRecord | None
    problem: Problem | None
    missing: str = ""  # why the problem could not be shown
    round: int = 0  # the round shown
    answered: int | None = None  # the round whose result the answer came from (None: not interpreted yet)
    rounds: list[int] = field(default_factory=lambda: [0])  # every round the problem was solved in
    stands: bool = True  # whether the round's program counts (a semantic revision that lost does not)
    steps: list[StepRecord] = field(default_factory=list)  # a chain's steps, in order
    interpreted: InterpretRecord | None = None  # a baseline's or a chain's answer (votes; why it has none)


def explain(run_dir: Path, problem_id: str, dataset: str | None = None, task: Path | None = None,
            data_dir: Path | None = None, round_: int | None = None) -> Explained:
    spec = load_task_file(task) if task is not None else None  # a bad --task is an error before anything
    recorded, trajectory = _find(run_dir, problem_id, dataset)
    if spec is not None and spec.key != recorded.key:
        raise UsageError(f"--task {task} describes '{spec.key}', but '{problem_id}' is in {recorded.stage_dir}")
    if not trajectory.solved:  # a baseline (with K samples, their votes) or a chain of prompted steps
        if round_ is not None:
            how = "by a chain of prompted steps" if trajectory.steps else "directly by the model"
            raise UsageError(f"problem '{problem_id}' was answered {how}: it has no rounds")
        problem, missing = _problem(recorded, spec, data_dir, problem_id)
        return Explained(None, trajectory.evaluated, problem, missing, steps=list(trajectory.steps.values()),
                         interpreted=trajectory.interpreted)
    answered = _answered(trajectory)
    shown = answered if round_ is None else round_
    if shown is None or shown not in trajectory.solved:
        have = ", ".join(map(str, sorted(trajectory.solved))) or "none"
        if round_ is None:
            raise UsageError(f"problem '{problem_id}' has no solve record under {run_dir}: run the solve stage")
        raise UsageError(f"problem '{problem_id}' has no round {round_}; its rounds: {have}")
    problem, missing = _problem(recorded, spec, data_dir, problem_id)
    return Explained(trajectory.solved[shown], trajectory.evaluated, problem, missing, shown, answered,
                     sorted(trajectory.solved), trajectory.stands(shown))


def _problem(recorded: Recorded, spec: DatasetSpec | None, data_dir: Path | None,
             problem_id: str) -> tuple[Problem | None, str]:
    """The problem's text, or why it cannot be shown."""
    try:
        problem = load_recorded_problems(recorded, spec, data_dir, []).get(problem_id)
        return problem, "" if problem else f"id '{problem_id}' is not in the {recorded.key} {split_of(recorded)} data"
    except LogicPipeError as exc:
        return None, f"{exc} ({HINT})"  # the verdict is still worth showing


def _find(run_dir: Path, problem_id: str, dataset: str | None) -> tuple[Recorded, Trajectory]:
    found = []
    for stage_dir in stage_dirs(run_dir, dataset):
        recorded = read_recorded(stage_dir, [])
        found += [(recorded, t) for t in recorded.trajectories if t.id == problem_id
                  and (t.solved or t.steps or (t.formulated is None and t.interpreted is not None))]
    if not found:
        raise UsageError(f"no solve record for id '{problem_id}' under {run_dir}")
    if len(found) > 1:  # a folder of several runs: which one is meant is the reader's to say
        where = ", ".join(str(recorded.stage_dir) for recorded, _ in found[:5]) + (", ..." if len(found) > 5 else "")
        raise UsageError(f"id '{problem_id}' was solved in {len(found)} runs under {run_dir} ({where}): "
                         "give the folder of the one to explain")
    return found[0]


def _answered(trajectory: Trajectory) -> int | None:
    """The round whose solver result the interpreted answer is; before interpret ran, the latest that stands."""
    if trajectory.interpreted is not None:
        return trajectory.interpreted.round
    latest = trajectory.latest_solve()
    return latest.round if latest is not None else None
