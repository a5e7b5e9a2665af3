"""`logicpipe faithfulness RUN`: a FOL run's translations held against the dataset's gold formulas.

For each problem of the run (each sample, where the run voted over several, and the voted one marked),
the worker in score.py aligns the names, then decides with bounded, isolated Prover9 and counter-model
searches which gold premises the model's premises entail (recall), which model premises the gold ones
entail (precision), whether the conclusions are equivalent, and which sentences were mistranslated and how,
beside LogicLLaMA's LE and BLEU. Gold programs the audit cannot trust (not parsing, proving another label,
proving none) are left out of every figure and listed.

The gold formulas come from data/gold.py (`gold_examples`): any dataset it gives examples for has a
faithfulness report; FOLIO dev is the one today.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from ...core.errors import UsageError
from ...data.gold import Annotated, annotation_errors, gold_examples
from ...solvers.base import map_answer
from ...stages.store import METRICS_FILE, read_recorded, stage_dirs
from ..export import final_program
from ..gold import gold_verdicts
from ..problems import load_recorded_problems, split_of, task_spec

FILE = "faithfulness.jsonl"
TARGET = "logicpipe.report.faithful.score:score"
# Per Prover9 query and per counter-model search: the report's figures count what this leaves undecided.
SECONDS = 1.0
MEMORY_MB = 2048


@dataclass
class Excluded:
    id: str
    kind: str  # does_not_parse | other_label | no_answer
    reason: str


@dataclass
class Scored:
    id: str
    sample: int  # which program of the problem (0 when it has one)
    voted: bool  # the one the problem's answer came from
    correct: bool | None  # its answer is the label (None: it gave none)
    result: dict[str, Any] = field(default_factory=dict)  # score.score's, or {"error": why not scored}


@dataclass
class Report:
    run_dir: Path
    dataset: str
    problems: int  # problems the run has records for
    excluded: list[Excluded]
    rows: list[Scored]
    totals: dict[str, Any]
    samples_totals: dict[str, Any] | None  # over every sample, where a problem has several


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _payload(program: str, example: Annotated, seconds: float) -> dict[str, Any]:
    return {"program": program, "seconds": seconds,
            "gold": {"premises": [_one_line(f) for f in example.formulas],
                     "sentences": [_one_line(s) for s in example.premises] if len(example.premises) == len(example.formulas) else [],
                     "conclusion": _one_line(example.conclusion_formula)}}


def _flaws(examples: dict[str, Annotated], verdicts: dict[str, Any], labels: dict[str, str | None]) -> list[Excluded]:
    flawed = []
    for identifier, example in examples.items():
        errors = annotation_errors(example)
        verdict = verdicts.get(identifier)
        if errors:
            flawed.append(Excluded(identifier, "does_not_parse", "; ".join(errors)))
        elif verdict is None or verdict.letter is None:
            why = verdict.error if verdict is not None else "not solved"
            flawed.append(Excluded(identifier, "no_answer", f"the gold program proves no option ({why})"))
        elif verdict.letter != labels.get(identifier):
            flawed.append(Excluded(identifier, "other_label",
                                   f"the gold program proves {verdict.letter}; the label is {labels.get(identifier)}"))
    return flawed


def faithfulness(run_dir: Path, dataset: str | None = None, workers: int = 2, seconds: float = SECONDS,
                 data_dir: Path | str | None = None, memory_mb: int = MEMORY_MB) -> Report:
    """The faithfulness report of one dataset of a run (`dataset` where the run has several)."""
    from ...runtime.pool import SolverCall, WorkerPool

    folders = stage_dirs(run_dir, dataset)
    if len(folders) > 1:
        raise UsageError(f"{run_dir} holds {len(folders)} datasets ({', '.join(f.name for f in folders)}); pass --dataset")
    warnings: list[str] = []
    recorded = read_recorded(folders[0], warnings)
    spec = task_spec(recorded, None)
    solver = (recorded.identity.get("stages", {}).get("solve") or {}).get("solver") or spec.solver
    if solver != "fol":
        raise UsageError(f"{recorded.key} is a {solver} run; faithfulness holds first-order (fol) programs "
                         "against gold formulas")
    split = split_of(recorded)
    examples = gold_examples(spec, split, data_dir)
    problems = load_recorded_problems(recorded, None, data_dir, warnings)
    labels = {i: p.answer for i, p in problems.items()}
    ids = [t.id for t in recorded.trajectories]
    verdicts = gold_verdicts(spec, split, data_dir, [i for i in ids if i in examples], spec.timeout, 2048, workers)
    excluded = [e for e in _flaws(examples, verdicts, labels) if e.id in set(ids)]
    skip = {e.id for e in excluded}

    rows: list[Scored] = []
    calls: list[SolverCall] = []
    for trajectory in recorded.trajectories:
        if trajectory.id in skip:
            continue
        example = examples.get(trajectory.id)
        if example is None:
            rows.append(Scored(trajectory.id, 0, True, None, {"error": "no gold formulas for this problem"}))
            continue
        final = final_program(trajectory)
        programs = final.programs() if final is not None else []
        if not programs:
            rows.append(Scored(trajectory.id, 0, True, None, {"error": "the run has no program"}))
            continue
        sample_verdicts, chosen = _votes(trajectory, len(programs))
        options = problems[trajectory.id].options if trajectory.id in problems else []
        evaluated = trajectory.evaluated
        for index, program in enumerate(programs):
            letter = map_answer(sample_verdicts[index], options, spec.closed_world)
            correct = None if letter is None else letter == labels.get(trajectory.id)
            if index == chosen and evaluated is not None:  # the answer as evaluate scored it
                correct = evaluated.correct_executed if evaluated.predicted is not None else None
            rows.append(Scored(trajectory.id, index, index == chosen, correct))
            calls.append(SolverCall(f"{trajectory.id}\t{index}", _payload(program, example, seconds),
                                    timeout=30 + 4 * seconds * (len(example.formulas) * 4 + 4)))
    by_key = {f"{r.id}\t{r.sample}": r for r in rows}
    if calls:
        with WorkerPool(TARGET, workers, memory_mb) as pool:
            for outcome in pool.map(calls):
                row = by_key[outcome.key]
                row.result = outcome.value if outcome.status == "ok" else {
                    "error": f"{outcome.status}: {outcome.message}"}
    voted = [r for r in rows if r.voted]
    several = any(r.sample > 0 for r in rows)
    return Report(folders[0], recorded.key, len(ids), excluded, rows, totals(voted),
                  totals(rows) if several else None)


def _votes(trajectory: Any, count: int) -> tuple[list[str | None], int]:
    """Each sample's verdict and the index of the one the answer came from (the first sample with the
    winning verdict, as the solve stage's vote chooses)."""
    solve = trajectory.latest_solve()
    if solve is None:
        return [None] * count, 0
    votes = (solve.explanation or {}).get("votes")
    if count == 1 or not isinstance(votes, list) or len(votes) != count:
        return [solve.verdict] + [None] * (count - 1), 0
    chosen = next((i for i, v in enumerate(votes) if solve.verdict is not None and v == solve.verdict), 0)
    return [v if v in ("True", "False", "Unknown") or (isinstance(v, str) and len(v) == 1) else None
            for v in votes], chosen


def _rate(counts: Counter) -> float | None:
    decided = counts["yes"] + counts["no"]
    return round(100.0 * counts["yes"] / decided, 2) if decided else None


def totals(rows: list[Scored]) -> dict[str, Any]:
    """The figures over scored programs; every rate is over decided checks, `unknown` counted apart."""
    scored = [r for r in rows if r.result and not r.result.get("error")]
    recall = Counter(s for r in scored for s in r.result["recall"])
    precision = Counter(s for r in scored for s in r.result["precision"])
    conclusion = Counter(r.result["conclusion"] for r in scored)
    formulas = Counter(f["equivalent"] for r in scored for f in r.result["formulas"])
    equivalent = Counter(r.result["equivalent"] for r in scored)
    les = [f["le"] for r in scored for f in r.result["formulas"] if f["le"] is not None]
    bleus = [f["bleu"] for r in scored for f in r.result["formulas"]]
    pairs = [f for r in scored for f in r.result["formulas"]]
    return {
        "programs": len(rows), "scored": len(scored),
        "not_scored": dict(sorted(Counter(str(r.result.get("error", "not run")).split(":")[0] for r in rows
                                          if r not in scored).items())),
        "premise_recall": {**_counts(recall), "rate": _rate(recall)},
        "premise_precision": {**_counts(precision), "rate": _rate(precision)},
        "conclusion_equivalent": {**_counts(conclusion), "rate": _rate(conclusion)},
        "formulas_equivalent": {**_counts(formulas), "rate": _rate(formulas)},
        "translation_equivalent": {**_counts(equivalent), "rate": _rate(equivalent)},
        "right_for_wrong_reason": sum(1 for r in scored if r.correct and r.result["equivalent"] == "no"),
        "wrong_despite_equivalent": sum(1 for r in scored if r.correct is False and r.result["equivalent"] == "yes"),
        "right_translation_unknown": sum(1 for r in scored if r.correct and r.result["equivalent"] == "unknown"),
        "le": round(sum(les) / len(les), 4) if les else None, "le_n": len(les),
        "bleu": round(sum(bleus) / len(bleus), 4) if bleus else None, "bleu_n": len(bleus),
        "le_1_not_equivalent": sum(1 for f in pairs if f["le"] == 1.0 and f["equivalent"] == "no"),
        "le_below_1_equivalent": sum(1 for f in pairs if f["le"] is not None and f["le"] < 1.0
                                     and f["equivalent"] == "yes"),
    }


def _counts(counter: Counter) -> dict[str, int]:
    return {"yes": counter["yes"], "no": counter["no"], "unknown": counter["unknown"]}


def as_json(report: Report) -> dict[str, Any]:
    return {"run": str(report.run_dir), "dataset": report.dataset, "problems": report.problems,
            "totals": report.totals, "samples_totals": report.samples_totals,
            "excluded": [asdict(e) for e in report.excluded], "rows": [asdict(r) for r in report.rows]}


def write(report: Report) -> Path:
    """faithfulness.jsonl beside the run's records (one line per scored program, then the excluded), and
    the totals into metrics.json's `faithfulness`, which the viewer shows (until a resumed run rewrites
    metrics.json: then run this again)."""
    path = report.run_dir / FILE
    lines = [json.dumps(asdict(r), ensure_ascii=False) for r in report.rows]
    lines += [json.dumps({"excluded": asdict(e)}, ensure_ascii=False) for e in report.excluded]
    _replace(path, "".join(line + "\n" for line in lines))
    metrics_path = report.run_dir / METRICS_FILE
    if metrics_path.is_file():
        metrics = json.loads(metrics_path.read_text(encoding="utf-8"))
        metrics["faithfulness"] = {**report.totals, "excluded": [e.id for e in report.excluded],
                                   "samples": report.samples_totals}
        _replace(metrics_path, json.dumps(metrics, indent=1, ensure_ascii=False) + "\n")
    return path


def _replace(path: Path, text: str) -> None:
    part = path.with_suffix(f".{os.getpid()}.part")
    part.write_text(text, encoding="utf-8")
    os.replace(part, path)


__all__ = ["Excluded", "Report", "Scored", "as_json", "faithfulness", "totals", "write"]
