"""The problems a recorded run was made from, for `view` and `explain`: the task is the --task file,
else the task file run.json names, else the built-in dataset of the directory's name."""

from __future__ import annotations

from collections.abc import Collection
from pathlib import Path

from ..core.errors import LogicPipeError
from ..core.records import Problem
from ..data import DatasetSpec, get_dataset, index_problems, load_problems, load_task_file
from ..data.fetch import cache_dir
from ..data.loaders import data_root
from ..data.registry import source
from ..stages.store import Recorded

HINT = "pass --task or --data-dir"  # what brings the problems back, said wherever they are missing


def task_spec(recorded: Recorded, task: DatasetSpec | None) -> DatasetSpec:
    """The task of a dataset directory; `task` is the one given with --task, used where its name is
    the directory's. Raises a LogicPipeError when none is found."""
    if task is not None and task.key == recorded.key:
        return task
    recorded_file = recorded.identity.get("task_file")
    if recorded_file:
        if not Path(recorded_file).is_file():
            raise LogicPipeError(f"task file {recorded_file} (named in {recorded.stage_dir / 'run.json'}) "
                                 "not found")
        return load_task_file(recorded_file)
    if "task" in recorded.identity:  # a task-file run made before run.json named the file
        raise LogicPipeError(f"{recorded.key} was run from a task file that its run.json does not name")
    return get_dataset(recorded.identity.get("dataset") or recorded.key)


def split_of(recorded: Recorded) -> str:
    return str(recorded.identity.get("split") or recorded.metrics.get("split") or "dev")


def recorded_problems(recorded: Recorded, task: DatasetSpec | None, data_dir: Path | str | None,
                      warnings: list[str], ids: Collection[str] | None = None) -> dict[str, Problem]:
    """id -> problem as the task describes it (only those of `ids`, if given: a page of a large run);
    where the data is out of reach, a warning says why and the result is empty."""
    try:
        return load_recorded_problems(recorded, task, data_dir, warnings, ids)
    except LogicPipeError as exc:
        warnings.append(f"problem texts for {recorded.key} not shown: {exc} ({HINT})")
        return {}


def load_recorded_problems(recorded: Recorded, task: DatasetSpec | None, data_dir: Path | str | None,
                           warnings: list[str], ids: Collection[str] | None = None) -> dict[str, Problem]:
    """As recorded_problems, but a task or data out of reach is a LogicPipeError saying why. Showing a
    run never downloads: without a data folder, Logic-LM's data must be in the download cache."""
    spec = task_spec(recorded, task)
    digest = recorded.identity.get("task")
    if digest is not None and digest != spec.digest():
        warnings.append(f"{recorded.key}: the task file changed since the run (its digest is not run.json's); "
                        "the problems shown are the file's as it is now")
    split = split_of(recorded)
    data_dir = data_dir if data_dir is not None else _recorded_data(recorded)
    if spec.source.format == "logic-lm" and spec.source.path is None and data_root(data_dir) is None:
        cached = cache_dir() / "logic-lm" / source().commit / f"data/{spec.name}/{split}.json"
        if not cached.exists():
            raise LogicPipeError("no Logic-LM data here, and showing a run never downloads")
    if ids is None:
        return {p.id: p for p in load_problems(spec, split, data_dir)}
    wanted = set(ids)  # the split is checked as a run checks it, and only these problems are read
    return {p.id: p for p in index_problems(spec, split, data_dir).keep(wanted.__contains__)}


def _recorded_data(recorded: Recorded) -> str | None:
    """The data folder the run read (run.json names it since it was recorded), while it is still there;
    else None: LOGICPIPE_DATA, then the download cache."""
    used = recorded.identity.get("data_dir")
    return used if isinstance(used, str) and Path(used).is_dir() else None
