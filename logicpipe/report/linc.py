"""`logicpipe reproduce --paper linc`: replay LINC's released generations (data/linc.py) through the FOL
solver, K samples a problem and LINC's vote (the most common verdict among samples that gave one, ties to
the first seen: solve.vote, which is Counter.most_common's rule), as normal runs; then compare each
file's majority accuracy with LINC's and each sample's verdict with LINC's own.

A FOLIO file runs on the built-in FOLIO dev problems under their Logic-LM ids (a LINC replay and a
Logic-LM replay are two runs over the same ids); a ProofWriter file on a task file written beside its
run, since LINC's ProofWriter problems are not Logic-LM's.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

from ..core.errors import LogicPipeError
from ..core.jsonl import read_records
from ..core.records import SolveRecord
from ..data.linc import VERDICTS, Release, folio_ids, linc_root, proofwriter_problems, releases
from ..data.loaders import load_problems
from ..data.registry import get_dataset
from ..stages import Progress, RunConfig, run
from ..stages.context import quiet
from .reproduce import Label, _silent, write_table

_OURS = {"True": "True", "False": "False", "Unknown": "Uncertain"}


def _prepare(release: Release, folder: Path, data_dir: Path | None) -> tuple[dict, list[str]]:
    """The run options (dataset or task file) and the ids in LINC's order; the programs file written."""
    folder.mkdir(parents=True, exist_ok=True)
    generations = release.generations()
    if release.dataset == "folio":
        ids = folio_ids(generations, load_problems(get_dataset("folio"), "dev", data_dir))
        options: dict = {"dataset": "folio", "split": "dev", "ids": ids, "data_dir": data_dir}
    else:
        rows = proofwriter_problems(generations, release.references())
        ids = [row["id"] for row in rows]
        (folder / "problems.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
        task = {"name": f"linc-{release.dataset}", "title": f"LINC's {release.dataset} problems",
                "source": {"format": "jsonl", "path": "problems.jsonl"},
                "fields": {"id": "id", "context": "{premises}", "options": None, "answer": "label",
                           "question": "Based on the above information, is the following statement true, false, "
                                       "or unknown? {conclusion}"},
                "answer_space": "truth", "formalism": "fol", "prompt": "folio"}
        (folder / "task.json").write_text(json.dumps(task, indent=2) + "\n")
        options = {"task": folder / "task.json", "split": "dev"}
    with open(folder / "programs.jsonl", "w") as handle:
        for identifier, samples in zip(ids, generations):
            handle.write(json.dumps({"id": identifier, "programs": samples}) + "\n")
    return options, ids


def replay(release: Release, out: Path, data_dir: Path | None = None, workers: int = 2,
           progress: Progress = quiet, overwrite: bool = False) -> tuple[dict, list[dict]]:
    """One file replayed: its table row and the samples whose verdict differs from LINC's."""
    folder = out / "replay" / "linc" / release.stem
    options, ids = _prepare(release, folder / "input", data_dir)
    config = RunConfig(out=folder, programs=folder / "input" / "programs.jsonl", backup="none", max_errors="100%",
                       workers=workers, overwrite=overwrite, **options)
    start = time.monotonic()
    report = run(config, progress)
    seconds = time.monotonic() - start
    solved = {r.id: r for r in read_records(config.stage_dir / "solve.jsonl", SolveRecord)}
    theirs, generations = release.verdicts(), release.generations()
    agree = total = 0
    differences = []
    for number, identifier in enumerate(ids):
        record = solved[identifier]
        votes = (record.explanation or {}).get("votes") or [record.verdict]
        for sample, (ours, linc) in enumerate(zip(votes, theirs[number])):
            mine = _OURS.get(ours or "", "Error")
            total += 1
            if mine == linc:
                agree += 1
            else:
                differences.append({"file": release.stem, "problem": number, "id": identifier, "sample": sample,
                                    "logicpipe": mine, "linc": linc, "reason": _reason(generations[number][sample])})
    metrics = report.metrics
    row = {"file": release.stem, "model": release.model, "dataset": release.dataset, "shots": release.shots,
           "problems": len(ids), "accuracy": round(metrics["correct"] / metrics["total"], 4) if metrics["total"] else None,
           "linc_accuracy": None if release.accuracy() is None else round(release.accuracy() or 0.0, 4),
           "sample_agreement": round(agree / total, 4) if total else None, "samples": total,
           "differing_samples": total - agree, "seconds": round(seconds, 1)}
    return row, differences


def _reason(program: str) -> str:
    """Why logicpipe's verdict on one sample is what it is (the sample run once more, in process)."""
    from ..solvers.base import Limits
    from ..solvers.fol import FOLSolver

    solver = FOLSolver()
    try:
        result = solver.execute(solver.parse(program), Limits(seconds=10))
    except LogicPipeError as exc:
        return f"{type(exc).__name__}: {exc}"
    tried = (result.explanation or {}).get("attempts") or {}
    return result.no_answer or f"verdict {result.verdict}" + (
        f" ({', '.join(f'{target}: {how}' for target, how in tried.items())})" if tried else "")


def reproduce_linc(out: Path, data_dir: Path | None = None, workers: int = 2, progress: Progress = quiet,
                   label: Label = _silent, overwrite: bool = False) -> dict:
    start = time.monotonic()
    rows, differences = [], []
    found = releases(linc_root())
    for number, release in enumerate(found, start=1):
        label(f"LINC {release.stem}: file {number} of {len(found)}")
        row, differing = replay(release, out, data_dir, workers, progress, overwrite)
        rows.append(row)
        differences += differing
    write_table(rows, out / "linc", "LINC's released generations replayed: majority accuracy against LINC's, and the "
                "share of samples whose verdict is LINC's own")
    write_table(differences, out / "linc-differences", "Samples whose verdict differs from LINC's own, and why")
    return {"rows": rows, "differences": differences, "seconds": round(time.monotonic() - start, 1),
            "verdicts": VERDICTS}
