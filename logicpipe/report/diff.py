"""`logicpipe diff RUN_A RUN_B`: two runs of one dataset compared problem by problem.

The problems both runs scored are paired by id: the 2x2 table (both right, only A, only B, both wrong),
the difference in accuracy with its paired bootstrap 95% interval, and McNemar's exact p-value; then
each problem that changed, with both answers and each run's program and verdict, so the cause can be
read. Problems only one run scored are counted and named, never dropped. Works between any two runs of
a dataset: models, methods, formalisms, prompt sets, a replay against a model's run.
"""

from __future__ import annotations

import csv
import io
import json
from dataclasses import asdict, dataclass, field
from pathlib import Path

from ..core import stats
from ..core.errors import UsageError
from ..core.trajectory import Trajectory
from ..stages.store import Recorded, read_recorded, stage_dirs
from .export import final_program


@dataclass(frozen=True)
class Side:
    """One run's view of a scored problem: its answer, and the program and verdict it came from."""

    answer: str | None
    correct: bool
    program: str | None  # the program the answer came from (None: a baseline, or none was written)
    verdict: str | None  # the solver's verdict, or its error category


@dataclass(frozen=True)
class Changed:
    id: str
    gold: str | None
    a: Side
    b: Side


@dataclass
class Diff:
    dataset: str
    run_a: str
    run_b: str
    both_right: int
    only_a: int
    only_b: int
    both_wrong: int
    accuracy_a: float | None  # fractions over the paired problems; None when there are none
    accuracy_b: float | None
    difference: float | None  # accuracy_a - accuracy_b
    interval: list[float] | None  # its paired bootstrap 95% interval
    p_value: float  # McNemar's exact test on only_a and only_b
    changed: list[Changed] = field(default_factory=list)
    only_in_a: list[str] = field(default_factory=list)  # problems scored in A and not in B
    only_in_b: list[str] = field(default_factory=list)

    @property
    def paired(self) -> int:
        return self.both_right + self.only_a + self.only_b + self.both_wrong

    def as_json(self) -> dict:
        return {**asdict(self), "paired": self.paired}


def _folder(run: Path, dataset: str | None) -> Path:
    folders = stage_dirs(run, dataset)
    if len(folders) > 1:
        raise UsageError(f"{run} holds {len(folders)} datasets ({', '.join(f.name for f in folders)}); pass --dataset")
    return folders[0]


def _scored(recorded: Recorded) -> dict[str, Trajectory]:
    return {t.id: t for t in recorded.trajectories if t.evaluated is not None}


def side(trajectory: Trajectory) -> Side:
    scored = trajectory.evaluated
    assert scored is not None
    program = final_program(trajectory)
    answer = trajectory.interpreted
    solved = trajectory.solved.get(answer.round) if answer is not None and answer.program is not None else None
    verdict = None
    if solved is not None:
        verdict = solved.verdict if solved.error is None else solved.error.category.value
    text = None
    if program is not None:
        text = program.program if program.program is not None else "\n---\n".join(program.programs())
    return Side(answer=scored.final, correct=scored.correct, program=text, verdict=verdict)


def diff(run_a: Path | str, run_b: Path | str, dataset: str | None = None, seed: int = stats.SEED) -> Diff:
    """Compare two runs of one dataset on the problems both scored (RUN or RUN/<dataset>; `dataset`
    chooses where a run holds several)."""
    folder_a, folder_b = _folder(Path(run_a), dataset), _folder(Path(run_b), dataset)
    if folder_a.name != folder_b.name:
        raise UsageError(f"different datasets: {run_a} is {folder_a.name}, {run_b} is {folder_b.name}")
    warnings: list[str] = []
    a, b = _scored(read_recorded(folder_a, warnings)), _scored(read_recorded(folder_b, warnings))
    common = [i for i in a if i in b]
    if not common:
        raise UsageError(f"{folder_a} and {folder_b} have no scored problem in common "
                         f"({len(a)} and {len(b)} scored)")
    right_a = [int(a[i].evaluated.correct) for i in common]  # type: ignore[union-attr]
    right_b = [int(b[i].evaluated.correct) for i in common]  # type: ignore[union-attr]
    cells = {(x, y): 0 for x in (0, 1) for y in (0, 1)}
    for x, y in zip(right_a, right_b):
        cells[x, y] += 1
    changed = [Changed(i, a[i].evaluated.gold, side(a[i]), side(b[i]))  # type: ignore[union-attr]
               for i, x, y in zip(common, right_a, right_b) if x != y]
    accuracy_a, accuracy_b = stats.mean(right_a), stats.mean(right_b)
    interval = stats.paired_difference(right_a, right_b, seed=seed)
    return Diff(
        dataset=folder_a.name, run_a=str(folder_a), run_b=str(folder_b),
        both_right=cells[1, 1], only_a=cells[1, 0], only_b=cells[0, 1], both_wrong=cells[0, 0],
        accuracy_a=accuracy_a, accuracy_b=accuracy_b,
        difference=None if accuracy_a is None or accuracy_b is None else accuracy_a - accuracy_b,
        interval=None if interval is None else list(interval), p_value=stats.mcnemar(cells[1, 0], cells[0, 1]),
        changed=changed, only_in_a=[i for i in a if i not in b], only_in_b=[i for i in b if i not in a])


# Renderings other than the terminal's (which report/render.py draws with rich).

def as_csv(result: Diff) -> str:
    """One row per changed problem, the summary figures repeated on each (a spreadsheet needs no
    second table to read them)."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(["dataset", "id", "gold", "answer_a", "correct_a", "verdict_a", "answer_b", "correct_b",
                     "verdict_b", "program_a", "program_b"])
    for c in result.changed:
        writer.writerow([result.dataset, c.id, c.gold, c.a.answer, c.a.correct, c.a.verdict, c.b.answer, c.b.correct,
                         c.b.verdict, c.a.program, c.b.program])
    return out.getvalue()


def as_json(result: Diff) -> str:
    return json.dumps(result.as_json(), indent=1)


def percent(value: float | None) -> str:
    return "–" if value is None else f"{100 * value:.2f}"


def summary_line(result: Diff) -> str:
    """The difference, its interval and the p-value in one sentence."""
    if result.interval is None or result.difference is None:
        return "no paired problem"
    low, high = result.interval
    return (f"accuracy A {percent(result.accuracy_a)}% vs B {percent(result.accuracy_b)}% on {result.paired} "
            f"paired problems: A - B = {100 * result.difference:+.2f} points, 95% CI [{100 * low:+.2f}, "
            f"{100 * high:+.2f}] (paired bootstrap); McNemar exact p = {result.p_value:.3g} "
            f"({result.only_a} only A, {result.only_b} only B)")
