"""Where the benchmark scripts find Logic-LM's data/ and programs/: as the Makefile finds them.

`--data-dir` first, then LOGICPIPE_DATA; when neither is given (a fresh shell), ../shared/logic-lm beside
this checkout if that folder holds data/ (the project's own machines), as `make` sets LOGICPIPE_DATA;
elsewhere logicpipe downloads the pinned files into its cache once, as `logicpipe reproduce` does."""

from __future__ import annotations

import os
from pathlib import Path

SHARED = Path(__file__).resolve().parent.parent.parent / "shared" / "logic-lm"


def use_shared_data() -> Path | None:
    """Set LOGICPIPE_DATA to ../shared/logic-lm when it is unset and that folder exists; return it."""
    if not os.environ.get("LOGICPIPE_DATA") and (SHARED / "data").is_dir():
        os.environ["LOGICPIPE_DATA"] = str(SHARED)
    chosen = os.environ.get("LOGICPIPE_DATA")
    return Path(chosen) if chosen else None
