"""--epochs N: a run (or a baseline) N times over the same problems, to see how much of a figure is the
model's sampling noise. Epoch 1 is the run without --epochs, in OUT/ as always (its requests, cache keys
and records are byte for byte the same); epoch k > 1 goes to OUT/epoch-k/ and its sampled requests carry
the seed k, so each epoch is its own request and its own reply-cache entry, and each epoch's folder
resumes by itself: a re-run asks nothing anew.

The summary is the mean accuracy over the epochs with its standard error clustered by problem (the
epochs of one problem are not independent: core/stats.py's clustered_stderr, as inspect_ai's epochs),
and each problem's consistency: in how many epochs it was right."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..core import stats
from .config import RunConfig
from .store import read_recorded

SUMMARY = "epochs-{dataset}.json"


def epoch_configs(config: RunConfig) -> list[RunConfig]:
    """One config per epoch: the first runs into OUT, epoch k > 1 into OUT/epoch-k."""
    return [config.model_copy(update={"epoch": k, "out": config.out if k == 1 else config.out / f"epoch-{k}"})
            for k in range(1, config.epochs + 1)]


def run_epochs(config: RunConfig, run_one: Callable[[RunConfig], Any],
               where: Callable[[RunConfig], Path] = lambda each: each.stage_dir) -> tuple[list[Any], dict[str, Any]]:
    """run_one(epoch's config) for each epoch, in turn (where(config): the dataset folder it writes);
    then the summary, also written next to the first epoch's dataset folder (epochs-<dataset>.json)."""
    configs = epoch_configs(config)
    reports = [run_one(each) for each in configs]
    folders = [where(each) for each in configs]
    result = summary(folders)
    path = folders[0].parent / SUMMARY.format(dataset=folders[0].name)
    path.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    result["path"] = str(path)
    return reports, result


def summary(folders: list[Path]) -> dict[str, Any]:
    """The epochs' figures from their folders' evaluate records, over the problems every epoch scored."""
    scored = []
    for folder in folders:
        recorded = read_recorded(folder, [])
        scored.append({t.id: t.evaluated.correct for t in recorded.trajectories if t.evaluated is not None})
    common = [pid for pid in scored[0] if all(pid in epoch for epoch in scored[1:])]
    scores = [float(epoch[pid]) for epoch in scored for pid in common]
    clusters = [pid for _ in scored for pid in common]
    mean = stats.mean(scores)
    stderr = stats.clustered_stderr(scores, clusters)
    right = Counter(sum(epoch[pid] for epoch in scored) for pid in common)
    n = len(folders)
    return {
        "epochs": n, "problems": len(common),
        "accuracy_by_epoch": [round(100 * sum(epoch[pid] for pid in common) / len(common), 2) if common else None
                              for epoch in scored],
        "mean_accuracy": None if mean is None else round(100 * mean, 2),
        "stderr_clustered": None if stderr is None else round(100 * stderr, 2),
        # problems right in k of the N epochs, k = N .. 0; those right in all or none are consistent
        "right_in": {f"{k} of {n}": right.get(k, 0) for k in range(n, -1, -1)},
        "consistent": right.get(n, 0) + right.get(0, 0),
        "folders": [str(folder) for folder in folders],
    }
