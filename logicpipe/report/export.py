"""`logicpipe export RUN --programs FILE`: a run's final programs (after refinement) in Logic-LM's
released format, so its results can be shared and replayed with `run --programs FILE` after the model
that wrote them is retired.

A problem's final program is the one its answer came from (the round interpret read); before interpret
ran, the latest program that stands (a semantic revision that lost its comparison does not). A run
that voted over K samples exports them all; a replay reads the first, as Logic-LM's own code does.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

from ..core.errors import UsageError
from ..core.records import FormulateRecord
from ..core.trajectory import Trajectory
from ..data.program_files import is_written
from ..stages.store import read_recorded, stage_dirs


@dataclass
class Exported:
    path: Path
    dataset: str
    programs: int  # problems written to the file
    problems: int  # problems the run has records for
    warnings: list[str]


def final_program(trajectory: Trajectory) -> FormulateRecord | None:
    """The record holding the program the problem's answer came from (None: it never had one)."""
    answer = trajectory.interpreted
    if answer is not None and answer.program is not None:
        record = trajectory.source(answer.round)
        if record is not None and record.programs():
            return record
    record = trajectory.latest_program()
    return record if record is not None and record.programs() else None


def export_programs(run_dir: Path, out: Path, dataset: str | None = None) -> Exported:
    """Write `run_dir`'s final programs to `out` (one dataset's: `dataset` where the run has several)."""
    if out.is_dir() or is_written(out):
        raise UsageError(f"--programs {out}: export writes Logic-LM's JSON format to a file; name a .json file")
    folders = stage_dirs(run_dir, dataset)
    if len(folders) > 1:
        runs = ", ".join(folder.relative_to(run_dir).as_posix() for folder in folders)
        hint = "give the folder of one" if dataset else "pass --dataset, or give the folder of one"
        raise UsageError(f"{run_dir} holds {len(folders)} runs ({runs}); {hint}")
    warnings: list[str] = []
    recorded = read_recorded(folders[0], warnings)
    records = []
    for trajectory in recorded.trajectories:
        final = final_program(trajectory)
        if final is not None:
            records.append({"id": trajectory.id, "raw_logic_programs": final.programs()})
    if not records:
        raise UsageError(f"{folders[0]} has no programs to export (a baseline run, or formulate never ran)")
    out.parent.mkdir(parents=True, exist_ok=True)
    partial = out.with_name(out.name + ".partial")  # a reader never sees half a file
    partial.write_text(json.dumps(records, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    os.replace(partial, out)
    return Exported(out, recorded.key, len(records), recorded.total, warnings)
