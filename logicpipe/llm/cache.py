"""The on-disk SQLite cache of validated replies, keyed by everything that changes a reply."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, StrictInt, StrictStr, ValidationError


class CachedReply(BaseModel):
    model_config = ConfigDict(extra="ignore")

    text: StrictStr
    prompt_tokens: StrictInt = Field(ge=0)
    completion_tokens: StrictInt = Field(ge=0)
    batch: StrictStr | None = None  # the batch (id, output file) it was read from; None: sent on its own


class Cache:
    def __init__(self, path: Path):
        path.parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(path, timeout=30)
        self._db.execute("PRAGMA journal_mode=WAL")
        # A reply lost to a power cut is only asked again; fsync per reply would stall the event loop.
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.execute("CREATE TABLE IF NOT EXISTS completions (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
        self._db.commit()

    def get(self, key: str) -> CachedReply | None:
        """The cached reply, or None; a row that no longer validates (written by an older version that
        cached before checking) counts as a miss, so the request is sent again and the row replaced."""
        row = self._db.execute("SELECT value FROM completions WHERE key = ?", (key,)).fetchone()
        if row is None:
            return None
        try:
            return CachedReply.model_validate(json.loads(row[0]))
        except (ValueError, ValidationError, RecursionError):
            return None

    def put(self, key: str, reply: CachedReply, **extra: object) -> None:
        value = json.dumps({**reply.model_dump(), **extra})
        self._db.execute("INSERT OR REPLACE INTO completions VALUES (?, ?)", (key, value))
        self._db.commit()

    def close(self) -> None:
        self._db.close()
