"""The trajectories of a run, rebuilt from the stage files of its folder (each read once)."""

from __future__ import annotations

from ..core.records import DecisionRecord, FormulateRecord, InterpretRecord, Problem, SolveRecord
from ..core.trajectory import Trajectory, program_sha
from ..run.folder import RunFolder


def load_trajectories(store: RunFolder, problems: list[Problem]) -> list[Trajectory]:
    """One trajectory per problem, holding every record that is still valid for it."""
    trajectories = [Trajectory(problem) for problem in problems]
    formulated = store.file("formulate", FormulateRecord).done
    solved = store.file("solve", SolveRecord).done
    for trajectory in trajectories:
        record = formulated.get(trajectory.id)
        if record is None:
            continue
        trajectory.formulated = record
        _take_solve(trajectory, solved.get(trajectory.id), record, 0)
    round_ = 1
    # A round whose repairs were written but none solved yet (a killed run) still counts.
    while store.exists(f"refine-{round_}") or store.exists(f"solve-{round_}"):
        refined = store.file(f"refine-{round_}", FormulateRecord).done
        solved = store.file(f"solve-{round_}", SolveRecord).done
        decided = store.file(f"compare-{round_}", DecisionRecord).done if store.exists(f"compare-{round_}") else {}
        for trajectory in trajectories:
            repair, parent = refined.get(trajectory.id), trajectory.latest_program(before=round_)
            if repair is None or parent is None or round_ - 1 not in trajectory.solved:
                continue
            if repair.parent != program_sha(parent):
                continue
            trajectory.refined[round_] = repair
            _take_solve(trajectory, solved.get(trajectory.id), repair, round_)
            decision = decided.get(trajectory.id)
            # A verdict stands only for the revision it judged, as that revision was solved.
            if (decision is not None and repair.revision() and round_ in trajectory.solved
                    and (decision.program, decision.parent) == (program_sha(repair), repair.parent)):
                trajectory.decided[round_] = decision
        round_ += 1
    interpreted = store.file("interpret", InterpretRecord).done
    for trajectory in trajectories:
        answer, latest = interpreted.get(trajectory.id), trajectory.latest_solve()
        if answer is not None and latest is not None and (answer.round, answer.program) == (latest.round, latest.program):
            trajectory.interpreted = answer
    return trajectories


def _take_solve(trajectory: Trajectory, record: SolveRecord | None, source: FormulateRecord, round_: int) -> None:
    if record is not None and record.program == program_sha(source):
        trajectory.solved[round_] = record
