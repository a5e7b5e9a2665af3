"""Reproduce the Logic-LM paper's Table 3 (execution) and Table 2 (accuracy) by replaying the released
programs; every cell of ours is computed from fresh runs, the paper's come from paper.json. Beside them,
a LogicBench table replays the programs we wrote for LogicBench (data/logicbench_programs/), one run per
file and logic type over every question of that type, so a question without a program is counted as
what it is, a typed no_program record."""

from __future__ import annotations

import csv
import json
import time
from collections.abc import Callable
from pathlib import Path

from ..core.errors import DataError
from ..data import DatasetSpec, resolve_file
from ..data.loaders import data_root
from ..data.registry import paper_datasets
from ..stages import Progress, RunConfig, baseline, run
from ..stages.context import quiet

MODELS = ("gpt-4", "text-davinci-003")
LOGICBENCH_PROGRAMS = Path(__file__).parent.parent / "data" / "logicbench_programs"
# (task, formalism, our programs file), in the table's order; each file's logic types come from its ids.
LOGICBENCH_REPLAYS = (("logicbench-bqa", "fol", "bqa-fol.jsonl"), ("logicbench-bqa", "asp", "bqa-pf-asp.jsonl"),
                      ("logicbench-bqa", "asp", "bqa-nm-asp.jsonl"), ("logicbench-bqa", "lp", "bqa-lp.jsonl"),
                      ("logicbench-mcqa", "asp", "mcqa-pf-asp.jsonl"), ("logicbench-mcqa", "asp", "mcqa-nm-asp.jsonl"))


def paper() -> dict:
    return json.loads((Path(__file__).parent / "paper.json").read_text())


Label = Callable[[str], None]


def _silent(text: str) -> None:
    return None


def program_files(data_dir: Path | None = None, models: tuple[str, ...] = MODELS) -> list[tuple[str, DatasetSpec, Path]]:
    """The released program files to replay, as (model, dataset, file). A local data folder may lack
    some; without one the files come from the pinned download, whose failure (offline) is an error."""
    local = data_root(data_dir) is not None
    files = []
    for model in models:
        for spec in paper_datasets():
            try:
                files.append((model, spec, resolve_file(f"programs/{spec.name}_dev_{model}.json", data_dir)))
            except DataError:
                if not local:
                    raise
    if not files:
        raise DataError(f"no released program files in {data_root(data_dir)}/programs; nothing to reproduce")
    return files


def replay_all(out: Path, data_dir: Path | None = None, workers: int = 2, models: tuple[str, ...] = MODELS,
               progress: Progress = quiet, limit: int | None = None, label: Label = _silent,
               overwrite: bool = False) -> list[dict]:
    """Run every released program file that exists; return one metrics row per (dataset, model). With
    `overwrite`, each file's run starts afresh (an earlier replay with another --limit is refused else)."""
    rows = []
    files = program_files(data_dir, models)
    for number, (model, spec, programs) in enumerate(files, start=1):
        label(f"{spec.name}, {model}: file {number} of {len(files)} ({programs.name})")
        config = RunConfig(dataset=spec.key, split="dev", out=out / "replay" / model, data_dir=data_dir,
                           workers=workers, programs=programs, limit=limit, overwrite=overwrite)
        start = time.monotonic()
        report = run(config, progress)
        rows.append({"model": model, **report.metrics, "seconds": round(time.monotonic() - start, 2)})
    return rows


def replay_logicbench(out: Path, workers: int = 2, progress: Progress = quiet, label: Label = _silent,
                      overwrite: bool = False) -> list[dict]:
    """Replay each of our LogicBench program files over every question of each logic type it has programs
    for (never --limit: these runs take seconds); one row of coverage and execution per file and type."""
    from ..data import get_dataset, index_programs, load_problems
    from ..data.logicbench import LOGIC_TYPES, group

    for task in dict.fromkeys(task for task, _, _ in LOGICBENCH_REPLAYS):
        load_problems(get_dataset(task), "eval")  # LogicBench's data is there (or downloads) before a file is named
    rows = []
    for task, formalism, name in LOGICBENCH_REPLAYS:
        path = LOGICBENCH_PROGRAMS / name
        ids = list(index_programs(path))
        for logic in [t for t in LOGIC_TYPES if any(i.startswith(t + "/") for i in ids)]:
            label(f"LogicBench {task} {logic} through {formalism}: {name}")
            config = RunConfig(dataset=task, split="eval", subset=logic, formalism=formalism, programs=path,
                               out=out / "replay" / "logicbench" / path.stem / logic, workers=workers,
                               backup="none", max_errors="100%", overwrite=overwrite)
            metrics = run(config, progress).metrics
            missing = int(metrics["failures"].get("no_program", 0))
            patterns = {group(i) for i in ids if i.startswith(logic + "/")}
            rows.append({"task": task, "logic": logic, "formalism": formalism, "programs": name,
                         "patterns": f"{len(patterns)} of {len(metrics['by_pattern'])}", "questions": metrics["total"], "with_program": metrics["total"] - missing,
                         "no_program": missing, "executed": metrics["executed"], "correct": metrics["correct"],
                         "exe_rate": metrics["exe_rate"], "exe_rate_ci": metrics.get("exe_rate_ci"),
                         "exe_acc": metrics["exe_acc"], "exe_acc_ci": metrics.get("exe_acc_ci"),
                         "failures": {k: v for k, v in metrics["failures"].items() if k != "no_program"}})
    return rows


def run_baselines(out: Path, llm: RunConfig, data_dir: Path | None = None, limit: int | None = None,
                  progress: Progress = quiet, overwrite: bool = False) -> dict[tuple[str, str, str], dict]:
    """Standard and CoT accuracy of the configured model on every dataset's dev split, each with its
    95% interval and n: {"accuracy", "accuracy_ci", "total"}."""
    results: dict[tuple[str, str, str], dict] = {}
    model = llm.model or ""
    for spec in paper_datasets() if model else []:
        for mode in ("standard", "cot"):
            config = llm.model_copy(update={"dataset": spec.key, "split": "dev", "data_dir": data_dir,
                                            "limit": limit, "out": out / "baselines" / model,
                                            "overwrite": overwrite})
            metrics = baseline(config, mode, progress).metrics
            results[(spec.key, model, mode)] = {key: metrics.get(key) for key in ("accuracy", "accuracy_ci", "total")}
    return results


def table3(rows: list[dict]) -> list[dict]:
    published = paper()["table3"]
    table = []
    for row in rows:
        ref = published.get(row["model"], {}).get(row["dataset"], {})
        # Compared on the paper's definition of "executed"; ours (a Z3 program that selects no option ran
        # to the end) beside it.
        table.append({
            "dataset": row["dataset"], "model": row["model"], "total": row["total"],
            "exe_rate_logiclm": row["exe_rate_logiclm"], "exe_rate_logiclm_ci": row.get("exe_rate_logiclm_ci"),
            "paper_exe_rate": ref.get("exe_rate"), "diff_exe_rate": _diff(row["exe_rate_logiclm"], ref.get("exe_rate")),
            "executed_logiclm": row.get("executed_logiclm"),
            "exe_acc_logiclm": row["exe_acc_logiclm"], "exe_acc_logiclm_ci": row.get("exe_acc_logiclm_ci"),
            "paper_exe_acc": ref.get("exe_acc"), "diff_exe_acc": _diff(row["exe_acc_logiclm"], ref.get("exe_acc")),
            "exe_rate": row["exe_rate"], "exe_rate_ci": row.get("exe_rate_ci"), "executed": row["executed"],
            "exe_acc": row["exe_acc"], "exe_acc_ci": row.get("exe_acc_ci"),
            "failures": row["failures"], "paper_source": ref.get("where", "not in paper"),
        })
    return table


def table2(rows: list[dict], baselines: dict[tuple[str, str, str], dict] | None = None) -> list[dict]:
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
                 "logic_lm": ours if row else "not run", "logic_lm_ci": row.get("accuracy_ci") if row else None,
                 "n": row["total"] if row else None, "paper_logic_lm": ref.get("logic_lm"),
                 "diff_logic_lm": _diff(ours, ref.get("logic_lm")) if row else None}
        for mode in ("standard", "cot"):
            measured = baselines.get((dataset, model, mode))
            value = measured["accuracy"] if measured is not None else None
            cells[mode] = value if value is not None else "not run"
            cells[f"{mode}_ci"] = measured.get("accuracy_ci") if measured is not None else None
            cells[f"{mode}_n"] = measured.get("total") if measured is not None else None
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
    lines = [f"# {title}", ""]
    if any(c.endswith("_ci") for c in columns):
        lines += ["`*_ci`: the 95% interval of the figure before it (Wilson's; a seeded bootstrap for Exe_Acc, "
                  "whose denominator is itself drawn); `–`: undefined or not run. See docs/statistics.md.", ""]
    lines += ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
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
    if isinstance(value, list) and len(value) == 2:  # a 95% interval
        return f"[{value[0]:.2f}, {value[1]:.2f}]"
    return str(value)


def chart(rows: list[dict], path: Path, limit: int | None = None) -> None:
    """Per model, accuracy (top) and execution rate on the paper's definition (bottom), ours beside
    the paper's, every bar labelled."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    published = paper()
    models = [m for m in MODELS if any(r["model"] == m for r in rows)]
    panels = (("accuracy", "table2", "logic_lm", "accuracy (%)"),
              ("exe_rate_logiclm", "table3", "exe_rate", "execution rate (%)"))
    fig, axes = plt.subplots(len(panels), len(models), figsize=(6.5 * len(models), 8.4), squeeze=False)
    for column, model in enumerate(models):
        mine = [r for r in rows if r["model"] == model]
        names = [r["dataset"] for r in mine]
        xs = list(range(len(names)))
        for row_index, (ours_key, table, paper_key, ylabel) in enumerate(panels):
            axis = axes[row_index][column]
            ours = [r[ours_key] for r in mine]  # None: undefined (nothing executed), drawn as no bar
            theirs = [published[table].get(model, {}).get(n, {}).get(paper_key) for n in names]
            axis.bar([x - 0.2 for x in xs], [o or 0 for o in ours], width=0.4, label="logicpipe (replay)", color="#2b6cb0")
            axis.bar([x + 0.2 for x in xs], [t or 0 for t in theirs], width=0.4, label="Logic-LM paper",
                     color="#a0aec0")
            for x, value in zip(xs, ours):
                axis.text(x - 0.2, (value or 0) + 1, "–" if value is None else f"{value:.1f}", ha="center", fontsize=7)
            for x, value in zip(xs, theirs):
                axis.text(x + 0.2, (value or 0) + 1, "n/a" if value is None else f"{value:.1f}", ha="center",
                          fontsize=7, color="#4a5568")
            axis.set_xticks(xs, names, rotation=20)
            axis.set_ylim(0, 112)  # room above 100 for the labels
            axis.set_ylabel(ylabel)
            axis.set_title(f"{model}: Logic-LM {ylabel.split(' (')[0]}, dev split", fontsize=10)
    handles, labels = axes[0][0].get_legend_handles_labels()
    subset = f"first {limit} problems of each file only" if limit else "full dev splits"
    fig.suptitle(f"Released Logic-LM programs replayed ({subset})", fontsize=11)
    # The legend sits below the panels, clear of every bar.
    fig.legend(handles, labels, loc="lower center", ncol=2, fontsize=9, frameon=False)
    fig.tight_layout(rect=(0, 0.04, 1, 0.96))
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)


def unmade(missed: dict[str, str]) -> list[str]:
    """The tables not made, those with the same reason together: "table3, table2: why"."""
    reasons: dict[str, list[str]] = {}
    for name, why in missed.items():
        reasons.setdefault(why, []).append(name)
    return [f"{', '.join(names)}: {why}" for why, names in reasons.items()]


def reproduce(out: Path, data_dir: Path | None = None, workers: int = 2, progress: Progress = quiet,
              models: tuple[str, ...] = MODELS, llm: RunConfig | None = None, limit: int | None = None,
              label: Label = _silent, overwrite: bool = False) -> dict:
    """Replay the released programs (Table 3, Table 2's Logic-LM rows) and our LogicBench programs (the
    LogicBench table); with `llm` (a RunConfig naming a model) also run the Standard and CoT baselines for
    Table 2. `overwrite` starts each run afresh. Every table whose data is there is written: "made" names
    them, "missed" each one that could not be made with why; none made is a DataError."""
    start = time.monotonic()
    # Each table is made from the data there is: one missing dataset (offline, no download cached) costs
    # its own tables, named with the reason, and no other. What is computed is computed before the first
    # table is written: a failure leaves the earlier tables as they were.
    missed: dict[str, str] = {}
    try:
        rows = replay_all(out, data_dir, workers, models, progress, limit, label, overwrite)
    except DataError as exc:
        rows = []
        for name in ("table3", "table2", "accuracy.png"):
            missed[name] = f"Logic-LM's data or programs: {exc}"
    baselines = run_baselines(out, llm, data_dir, limit, progress, overwrite) if llm is not None else {}
    try:
        logicbench = replay_logicbench(out, workers, progress, label, overwrite)
    except DataError as exc:
        logicbench = []
        missed["logicbench"] = f"LogicBench's data: {exc}"
    if len(missed) == 4 and not baselines:
        raise DataError(f"no table could be made: {'; '.join(unmade(missed))}")
    made = []
    if rows:
        write_table(table3(rows), out / "table3", "Logic-LM Table 3 reproduced: execution rate and accuracy of "
                    "executed programs (the *_logiclm columns count as executed what Logic-LM's code does, and are "
                    "compared with the paper; exe_rate and exe_acc are logicpipe's own)")
        chart(rows, out / "accuracy.png", limit)
        made += ["table3", "accuracy.png"]
    if rows or baselines:
        write_table(table2(rows, baselines), out / "table2", "Logic-LM Table 2 reproduced: accuracy")
        made.append("table2")
        missed.pop("table2", None)
    if "logicbench" not in missed:
        write_table(logicbench, out / "logicbench", "LogicBench: our own programs replayed, per logic type "
                    "(questions is every question of the type; those without a program are no_program records)")
        made.append("logicbench")
    return {"rows": rows, "baselines": {"/".join(k): v["accuracy"] for k, v in baselines.items()}, "logicbench": logicbench,
            "made": made, "missed": missed, "seconds": round(time.monotonic() - start, 1)}
