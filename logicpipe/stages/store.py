"""The trajectories of a run, rebuilt from the stage files of its folder (each read once). This is the
one reader of a run's records: the stages, and everything that shows a finished run (`explain`, `view`,
`failures`), read them through here."""

from __future__ import annotations

import json
from collections.abc import Set
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..core.errors import UsageError
from ..core.records import (
    DecisionRecord,
    EvaluateRecord,
    FormulateRecord,
    InterpretRecord,
    Problem,
    SolveRecord,
    StepRecord,
)
from ..core.trajectory import Trajectory, program_sha, step_parent
from ..data import get_dataset
from ..runtime.folder import RUN_FILE, RunFolder


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
    _take_steps(store, trajectories)
    interpreted = store.file("interpret", InterpretRecord).done
    for trajectory in trajectories:
        answer, latest = interpreted.get(trajectory.id), trajectory.latest_solve()
        if answer is None:
            continue
        if latest is not None and (answer.round, answer.program) == (latest.round, latest.program):
            trajectory.interpreted = answer
        elif latest is None and trajectory.formulated is None and answer.program == trajectory.chain_sha():
            # A baseline's answer: the model answered with no program (a chain's: from these steps' replies).
            trajectory.interpreted = answer
    return trajectories


CHAIN = "chain-"  # a chain's step files: chain-<step>.jsonl


def chain_steps(store: RunFolder) -> list[str]:
    """The steps of a chain of prompted steps whose files the folder holds, in the order its run.json
    records them (stages.chain.steps); none for any other run."""
    found = sorted(path.name[len(CHAIN):-len(".jsonl")] for path in store.path.glob(f"{CHAIN}*.jsonl"))
    if not found:
        return []
    order = (read_json(store.path / RUN_FILE, []).get("stages") or {}).get("chain", {}).get("steps") or []
    return [step for step in order if step in found] + [step for step in found if step not in order]


def _take_steps(store: RunFolder, trajectories: list[Trajectory]) -> None:
    """Each step's record, while it was asked with the earlier steps' replies the problem has now."""
    steps = chain_steps(store)
    files = [store.file(f"{CHAIN}{step}", StepRecord).done for step in steps]
    for trajectory in trajectories:
        for done in files:
            record = done.get(trajectory.id)
            if record is None or record.parent != step_parent(list(trajectory.steps.values())):
                break
            trajectory.steps[record.step] = record


def _take_solve(trajectory: Trajectory, record: SolveRecord | None, source: FormulateRecord, round_: int) -> None:
    if record is not None and record.program == program_sha(source):
        trajectory.solved[round_] = record


# Reading a finished (or stopped) run, to show it.

METRICS_FILE = "metrics.json"


@dataclass
class Recorded:
    """What one dataset directory holds, read once: its identity, metrics and one trajectory per
    problem that has any record (in the order of the latest stage that has them), scores included."""

    stage_dir: Path
    identity: dict[str, Any] = field(default_factory=dict)  # run.json; {} when absent
    metrics: dict[str, Any] = field(default_factory=dict)  # metrics.json; {} before evaluate ran
    trajectories: list[Trajectory] = field(default_factory=list)
    total: int = 0  # problems with any record; `trajectories` holds only the window asked for

    @property
    def key(self) -> str:
        return self.stage_dir.name


def read_recorded(stage_dir: Path, warnings: list[str], window: slice | None = None,
                  only: Set[str] | None = None) -> Recorded:
    """The directory as recorded; what cannot be read becomes a warning, never an error. With `window`,
    only those problems' records are parsed (the ids of all are indexed, which is cheap), and lines are
    checked only as they are read: where one shown is malformed, the directory is read again checking
    every line. With `only`, only these problems are read at all (`total` counts them alone)."""
    if window is not None:
        lazily: list[str] = []
        try:
            recorded = _read_recorded(stage_dir, lazily, window, only, lazy=True)
        except ValueError:
            return _read_recorded(stage_dir, warnings, window, only, lazy=False)
        warnings += lazily
        return recorded
    return _read_recorded(stage_dir, warnings, window, only, lazy=False)


def _read_recorded(stage_dir: Path, warnings: list[str], window: slice | None, only: Set[str] | None,
                   lazy: bool) -> Recorded:
    store = RunFolder(stage_dir, warnings=warnings, only=only, lazy=lazy)  # opened without `with`: it only reads
    try:
        ids = list(dict.fromkeys([*store.file("evaluate", EvaluateRecord).done,
                                  *store.file("interpret", InterpretRecord).done,
                                  *store.file("solve", SolveRecord).done, *store.file("formulate", FormulateRecord).done,
                                  *(i for step in chain_steps(store) for i in store.file(f"{CHAIN}{step}", StepRecord).done)]))
        # The texts are the task's, which the reader may not have: a Problem here carries only its id.
        problems = [Problem(id=i, context="", question="") for i in (ids if window is None else ids[window])]
        trajectories = load_trajectories(store, problems)
        scored = store.file("evaluate", EvaluateRecord).done
        for trajectory in trajectories:
            _take_score(trajectory, scored.get(trajectory.id))
    finally:
        store.close()
    return Recorded(stage_dir, read_json(stage_dir / RUN_FILE, warnings),
                    read_json(stage_dir / METRICS_FILE, warnings), trajectories, len(ids))


def _take_score(trajectory: Trajectory, record: EvaluateRecord | None) -> None:
    # A score stands for the answer it scored (evaluate copies these from the interpret record).
    answer = trajectory.interpreted
    if record is not None and answer is not None and \
            (record.predicted, record.final, record.executed) == (answer.predicted, answer.final, answer.executed):
        trajectory.evaluated = record


def read_json(path: Path, warnings: list[str]) -> dict[str, Any]:
    if not path.exists():
        return {}
    try:
        value = json.loads(path.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        warnings.append(f"{path}: not valid JSON ({exc})")
        return {}
    return value if isinstance(value, dict) else {}


def find_runs(path: Path, dataset: str | None = None) -> list[tuple[str, Path]]:
    """Every run folder at `path` or at any depth below it, as (label, folder) in path order: `path` alone
    when it is one (labelled with its name), else each folder below holding run.json or metrics.json,
    labelled with its path relative to `path` (`folio`, `fol/folio`, `baseline-cot/folio`, `kb-batch`).
    A run folder's own folders are not looked into (its batches/ folder is no run), nor are hidden
    folders or links to folders (a loop). With `dataset`, only the folders of that dataset's name. The
    one rule by which every command that reads runs (status, view, export, failures, explain) finds them."""
    runs_in(path)
    if is_run_folder(path):
        found = [(path.name, path)]
    else:
        found = []
        stack = [path]
        while stack:
            parent = stack.pop()
            try:
                children = sorted(parent.iterdir())
            except OSError:
                continue  # unreadable: nothing of it can be shown
            below = [d for d in children if d.is_dir() and not d.is_symlink() and not d.name.startswith(".")]
            found += [(d.relative_to(path).as_posix(), d) for d in below if is_run_folder(d)]
            stack += reversed([d for d in below if not is_run_folder(d)])
        found.sort(key=lambda item: item[0].split("/"))
    if not found:
        raise UsageError(f"{path} holds no run records (no folder with {RUN_FILE} or {METRICS_FILE} in it or "
                         "below it)")
    if dataset is None:
        return found
    keep = of_dataset(path, [folder for _, folder in found], dataset)
    return [(label, folder) for label, folder in found if folder in keep]


def stage_dirs(run_dir: Path, dataset: str | None = None) -> list[Path]:
    """The pipeline's run folders find_runs finds at or below RUN (only `dataset`'s if given): a kb
    batch holds no programs, answers or scores (`view` and `status` show it)."""
    found = find_runs(run_dir, dataset)
    runs = [folder for _, folder in found if not is_kb_batch(folder)]
    if not runs:
        raise UsageError(f"{run_dir} holds only kb batches ({', '.join(label for label, _ in found)}): "
                         f"`logicpipe view {run_dir}` or `logicpipe status {run_dir}` shows them")
    return runs


def is_kb_batch(folder: Path) -> bool:
    """A kb batch's folder (`kb ask --questions`, `kb validate --answers`): its run.json names the KB."""
    return "kb" in read_json(folder / RUN_FILE, [])


def runs_in(run_dir: Path) -> None:
    """One line for a folder that cannot hold runs: missing, or an optimisation's."""
    if not run_dir.is_dir():
        raise UsageError(f"run directory {run_dir} not found")
    if (run_dir / "state.json").is_file() and (run_dir / "prompts").is_dir():  # its steps.jsonl is no stage file
        raise UsageError(f"{run_dir} is a `logicpipe optimize` folder, not a run: its report is "
                         f"{run_dir / 'report.md'}; view a run made with `logicpipe run --prompts {run_dir / 'best'}`")


def of_dataset(run_dir: Path, folders: list[Path], dataset: str) -> list[Path]:
    """The run folders of `dataset` (a built-in's name or alias, or a task's), else one line naming those
    there are."""
    wanted = _dataset_key(dataset)
    chosen = [d for d in folders if d.name == wanted]
    if not chosen:
        have = ", ".join(dict.fromkeys(d.name for d in folders))
        raise UsageError(f"no dataset '{dataset}' in {run_dir} (it has: {have})")
    return chosen


def is_run_folder(folder: Path) -> bool:
    # Every run writes run.json before any record (a run with none yet: its first round still out in a
    # provider's batch); a folder of JSONL files without one is no run (a run's own batches/ folder).
    return (folder / METRICS_FILE).exists() or (folder / RUN_FILE).exists()


def _dataset_key(name: str) -> str:
    try:
        return get_dataset(name).key
    except UsageError:
        return name  # a task file's name
