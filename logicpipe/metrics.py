"""Scores from evaluate records, in Logic-LM's terms (Exe_Rate, Exe_Acc) plus accuracy with backup."""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING

from .records import EvaluateRecord

if TYPE_CHECKING:
    from .config import RunConfig


def _percent(part: int, whole: int) -> float:
    return round(100.0 * part / whole, 2) if whole else 0.0


def compute_metrics(records: list[EvaluateRecord], config: RunConfig) -> dict:
    total = len(records)
    executed = [r for r in records if r.executed]
    correct_executed = sum(r.correct_executed for r in executed)
    failures = Counter(r.error.category.value for r in records if r.error is not None)
    return {
        "dataset": config.spec.key,
        "split": config.split,
        "source": f"replay:{config.programs.name}" if config.programs else f"llm:{config.model}",
        "total": total,
        "executed": len(executed),
        "exe_rate": _percent(len(executed), total),
        "exe_acc": _percent(correct_executed, len(executed)),
        "correct": sum(r.correct for r in records),
        "accuracy": _percent(sum(r.correct for r in records), total),
        "failures": dict(sorted(failures.items())),
        "backup": config.backup,
        "seed": config.seed,
    }
