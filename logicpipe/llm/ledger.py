"""FOLDER/spent.json: what every run into a folder sent and spent, kept after every reply (the spending
cap, budget.py) and after every batch read (batchapi.py), so a cap counts what any earlier run paid."""

from __future__ import annotations

import json
import os
from pathlib import Path

from ..core.errors import DataError

LEDGER = "spent.json"


def read_ledger(folder: Path) -> dict | None:
    """What every run into the folder sent and spent: sent, prompt_tokens, completion_tokens, cost (at
    the prices of the run that wrote it last; None without prices) and batches (the ids of the batches
    whose replies it counts; none in a ledger written before it kept them); None where there is none yet."""
    path = folder / LEDGER
    if not path.is_file():
        return None
    try:
        ledger = json.loads(path.read_text(encoding="utf-8"))
        batches = ledger.get("batches") or []
        if not isinstance(batches, list) or not all(isinstance(b, str) for b in batches):
            raise TypeError("batches is not a list of ids")
        return {"sent": int(ledger["sent"]), "prompt_tokens": int(ledger["prompt_tokens"]),
                "completion_tokens": int(ledger["completion_tokens"]), "cost": ledger.get("cost"), "batches": batches}
    except (ValueError, KeyError, TypeError) as exc:
        raise DataError(f"{path}: not a spending record ({exc})") from None


def write_ledger(folder: Path, sent: int, prompt_tokens: int, completion_tokens: int, cost: float | None,
                 batches: list[str]) -> None:
    """Replace the ledger (atomically: a kill leaves the old one or the new one). `batches`: the ids of
    the batches counted in it."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / LEDGER
    tmp = path.with_name(f".{LEDGER}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps({"sent": sent, "prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                               "cost": cost, "batches": batches}) + "\n")
    os.replace(tmp, path)


def add_batch_to_ledger(folder: Path, batch_id: str, sent: int, prompt_tokens: int, completion_tokens: int) -> None:
    """Count a batch's replies in the ledger, once: a run killed after this and before it recorded the
    batch as read reads it again on the re-run, and must not count it twice. Its cost is then unknown
    until a run with prices writes the ledger again (a cap counts the tokens at its own prices)."""
    saved = read_ledger(folder) or {"sent": 0, "prompt_tokens": 0, "completion_tokens": 0, "batches": []}
    if batch_id in saved["batches"]:
        return
    write_ledger(folder, saved["sent"] + sent, saved["prompt_tokens"] + prompt_tokens,
                 saved["completion_tokens"] + completion_tokens, None, [*saved["batches"], batch_id])
