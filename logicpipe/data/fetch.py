"""Download Logic-LM's files at a pinned commit into a user cache, verified by sha256."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from ..core.errors import DataError
from .registry import SourceSpec

CACHE_ENV = "LOGICPIPE_CACHE"
URL_ENV = "LOGICPIPE_DATA_URL"


def cache_dir() -> Path:
    base = os.environ.get(CACHE_ENV) or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "logicpipe"
    )
    return Path(base)


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def cached_file(relative: str, src: SourceSpec,
                hint: str = "set --data-dir or LOGICPIPE_DATA to local files") -> Path:
    """Return the cached copy of `relative` (e.g. data/FOLIO/dev.json), downloading it once. `hint`
    ends the message of a failed download: what the user can do instead."""
    expected = src.sha256.get(relative)
    if expected is None:
        raise DataError(f"{relative} is not one of the pinned Logic-LM files; pass --data-dir for other files")
    target = cache_dir() / "logic-lm" / src.commit / relative
    if target.exists() and _sha256(target.read_bytes()) == expected:
        return target
    remote = relative
    for prefix, replacement in src.remote_paths.items():
        if relative.startswith(prefix):
            remote = replacement + relative[len(prefix):]
            break
    url = f"{os.environ.get(URL_ENV) or src.base_url}/{remote}"
    import urllib.request  # the HTTP stack loads only for a download

    try:
        with urllib.request.urlopen(url, timeout=60) as response:
            data = response.read()
    except OSError as exc:  # urllib's URLError is one
        raise DataError(f"cannot download {url} ({exc}); {hint}") from None
    if _sha256(data) != expected:
        raise DataError(f"checksum mismatch for {url}: the download is corrupt or not the pinned version")
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_suffix(".part")
    tmp.write_bytes(data)
    os.replace(tmp, target)
    return target
