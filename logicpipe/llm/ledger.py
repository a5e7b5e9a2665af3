"""FOLDER/spent.json: what every run into a folder sent and spent, kept after every reply (the spending
cap, budget.py) and after every batch read (batchapi.py), so a cap counts what any earlier run paid."""

from __future__ import annotations

import json
import os
from pathlib import Path

from ..core.errors import DataError

LEDGER = "spent.json"


def read_ledger(folder: Path) -> dict | None:
    """What every run into the folder sent and spent: sent, prompt_tokens, completion_tokens and cost
    (at the prices of the run that wrote it last; None without prices); None where there is none yet."""
    path = folder / LEDGER
    if not path.is_file():
        return None
    try:
        ledger = json.loads(path.read_text(encoding="utf-8"))
        return {"sent": int(ledger["sent"]), "prompt_tokens": int(ledger["prompt_tokens"]),
                "completion_tokens": int(ledger["completion_tokens"]), "cost": ledger.get("cost")}
    except (ValueError, KeyError, TypeError) as exc:
        raise DataError(f"{path}: not a spending record ({exc})") from None


def write_ledger(folder: Path, sent: int, prompt_tokens: int, completion_tokens: int, cost: float | None) -> None:
    """Replace the ledger (atomically: a kill leaves the old one or the new one)."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / LEDGER
    tmp = path.with_name(f".{LEDGER}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps({"sent": sent, "prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                               "cost": cost}) + "\n")
    os.replace(tmp, path)


def add_to_ledger(folder: Path, sent: int, prompt_tokens: int, completion_tokens: int) -> None:
    """Count more requests (a batch's replies) in the ledger; its cost is then unknown until a run with
    prices writes it again (a cap counts the tokens at its own prices)."""
    saved = read_ledger(folder) or {"sent": 0, "prompt_tokens": 0, "completion_tokens": 0}
    write_ledger(folder, saved["sent"] + sent, saved["prompt_tokens"] + prompt_tokens,
                 saved["completion_tokens"] + completion_tokens, None)
