"""Reproduce the Logic-LM paper's Table 3 (execution) and Table 2 (accuracy) by replaying the released
programs; every cell of ours is computed from fresh runs, the paper's come from paper.json."""

from __future__ import annotations

import csv
import json
import time
from pathlib import Path

from ..data import all_datasets, resolve_file
from ..errors import DataError
from ..stages import Progress, RunConfig, baseline, run
from ..stages.context import quiet

MODELS = ("gpt-4", "text-davinci-003")


def paper() -> dict:
    return json.loads((Path(__file__).parent / "paper.json").read_text())


def replay_all(out: Path, data_dir: Path | None = None, workers: int = 2, models: tuple[str, ...] = MODELS,
               progress: Progress = quiet, limit: int | None = None) -> list[dict]:
    """Run every released program file that exists; return one metrics row per (dataset, model)."""
    rows = []
    for model in models:
        for spec in all_datasets():
            try:
                programs = resolve_file(f"programs/{spec.name}_dev_{model}.json", data_dir)
            except DataError:
                continue
            config = RunConfig(dataset=spec.key, split="dev", out=out / "replay" / model, data_dir=data_dir,
                               workers=workers, programs=programs, limit=limit)
            start = time.monotonic()
            report = run(config, progress)
            rows.append({"model": model, **report.metrics, "seconds": round(time.monotonic() - start, 2)})
    return rows


def run_baselines(out: Path, llm: RunConfig, data_dir: Path | None = None, limit: int | None = None,
                  progress: Progress = quiet) -> dict[tuple[str, str, str], float]:
    """Standard and CoT accuracy of the configured model on every dataset's dev split."""
    results: dict[tuple[str, str, str], float] = {}
    model = llm.model or ""
    for spec in all_datasets() if model else []:
        for mode in ("standard", "cot"):
            config = llm.model_copy(update={"dataset": spec.key, "split": "dev", "data_dir": data_dir,
                                            "limit": limit, "out": out / "baselines" / model})
            results[(spec.key, model, mode)] = baseline(config, mode, progress).metrics["accuracy"]
    return results


def table3(rows: list[dict]) -> list[dict]:
    published = paper()["table3"]
    table = []
    for row in rows:
        ref = published.get(row["model"], {}).get(row["dataset"], {})
        table.append({
            "dataset": row["dataset"], "model": row["model"], "total": row["total"],
            "exe_rate": row["exe_rate"], "paper_exe_rate": ref.get("exe_rate"),
            "diff_exe_rate": _diff(row["exe_rate"], ref.get("exe_rate")),
            "exe_acc": row["exe_acc"], "paper_exe_acc": ref.get("exe_acc"),
            "diff_exe_acc": _diff(row["exe_acc"], ref.get("exe_acc")),
            "failures": row["failures"], "paper_source": ref.get("where", "not in paper"),
        })
    return table


def table2(rows: list[dict], baselines: dict[tuple[str, str, str], float] | None = None) -> list[dict]:
    """Logic-LM accuracy per replayed file, plus Standard and CoT where a model was configured."""
    published = paper()["table2"]
    baselines = baselines or {}
    keys = [(r["dataset"], r["model"]) for r in rows]
    keys += sorted({(d, m) for d, m, _ in baselines} - set(keys))
    by_key = {(r["dataset"], r["model"]): r for r in rows}
    table = []
    for dataset, model in keys:
        row = by_key.get((dataset, model))
        ref = published.get(model, {}).get(dataset, {})
        ours = row["accuracy"] if row else None
        cells = {"dataset": dataset, "model": model, "backup": row["backup"] if row else "–",
                 "logic_lm": ours if row else "not run", "paper_logic_lm": ref.get("logic_lm"),
                 "diff_logic_lm": _diff(ours, ref.get("logic_lm")) if row else None}
        for mode in ("standard", "cot"):
            value = baselines.get((dataset, model, mode))
            cells[mode] = value if value is not None else "not run"
            cells[f"paper_{mode}"] = ref.get(mode)
            cells[f"diff_{mode}"] = _diff(value, ref.get(mode)) if value is not None else None
        cells["paper_source"] = ref.get("where", "not in paper")
        table.append(cells)
    return table


def _diff(ours: float | None, theirs: float | None) -> float | None:
    return None if ours is None or theirs is None else round(ours - theirs, 2)


def write_table(rows: list[dict], base: Path, title: str) -> None:
    base.parent.mkdir(parents=True, exist_ok=True)
    base.with_suffix(".json").write_text(json.dumps(rows, indent=2) + "\n")
    columns = list(rows[0]) if rows else []
    with open(base.with_suffix(".csv"), "w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=columns)
        writer.writeheader()
        for row in rows:
            writer.writerow({k: json.dumps(v) if isinstance(v, dict) else v for k, v in row.items()})
    lines = [f"# {title}", "", "| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    for row in rows:
        cells = [_cell(row[c]) for c in columns]
        lines.append("| " + " | ".join(cells) + " |")
    base.with_suffix(".md").write_text("\n".join(lines) + "\n")


def _cell(value: object) -> str:
    if value is None:
        return "–"
    if isinstance(value, dict):
        return ", ".join(f"{k}: {v}" for k, v in value.items()) or "none"
    if isinstance(value, float):
        return f"{value:.2f}"
    return str(value)


def chart(rows: list[dict], path: Path) -> None:
    """Accuracy per dataset, ours beside the paper's, one panel per model."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    published = paper()["table2"]
    models = [m for m in MODELS if any(r["model"] == m for r in rows)]
    fig, axes = plt.subplots(1, len(models), figsize=(6 * len(models), 4.2), squeeze=False)
    for axis, model in zip(axes[0], models):
        mine = [r for r in rows if r["model"] == model]
        names = [r["dataset"] for r in mine]
        ours = [r["accuracy"] for r in mine]
        theirs = [published.get(model, {}).get(n, {}).get("logic_lm", 0) for n in names]
        xs = range(len(names))
        axis.bar([x - 0.2 for x in xs], ours, width=0.4, label="logicpipe (replay)", color="#2b6cb0")
        axis.bar([x + 0.2 for x in xs], theirs, width=0.4, label="Logic-LM paper", color="#a0aec0")
        for x, value in zip(xs, ours):
            axis.text(x - 0.2, value + 1, f"{value:.1f}", ha="center", fontsize=8)
        axis.set_xticks(list(xs), names, rotation=20)
        axis.set_ylim(0, 105)
        axis.set_ylabel("accuracy (%)")
        axis.set_title(f"{model}: Logic-LM accuracy, dev split")
        axis.legend(loc="lower left", fontsize=8)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)


def reproduce(out: Path, data_dir: Path | None = None, workers: int = 2, progress: Progress = quiet,
              models: tuple[str, ...] = MODELS, llm: RunConfig | None = None, limit: int | None = None) -> dict:
    """Replay the released programs (Table 3, Table 2's Logic-LM rows); with `llm` (a RunConfig naming a
    model) also run the Standard and CoT baselines for Table 2."""
    start = time.monotonic()
    rows = replay_all(out, data_dir, workers, models, progress, limit)
    baselines = run_baselines(out, llm, data_dir, limit, progress) if llm is not None else {}
    write_table(table3(rows), out / "table3", "Logic-LM Table 3 reproduced: execution rate and accuracy of executed programs")
    write_table(table2(rows, baselines), out / "table2", "Logic-LM Table 2 reproduced: accuracy")
    chart(rows, out / "accuracy.png")
    return {"rows": rows, "baselines": {"/".join(k): v for k, v in baselines.items()},
            "seconds": round(time.monotonic() - start, 1)}
