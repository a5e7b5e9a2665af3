"""One long-lived, isolated `swipl` process that holds a KB and answers prove requests over pipes."""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import re
import resource
import secrets
import selectors
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..core import jail
from ..core.errors import ProgramExecutionError, SolverTimeout, UsageError
from ..solvers.lp import swipl_path
from .safety import allowed_builtins

ENGINE = Path(__file__).with_name("engine.pl")
GUARD = Path(__file__).with_name("guard.pl")  # loaded by the engine; its rewriting is compiled into a KB
HOOKS = Path(__file__).with_name("hooks.pl")  # so is what it refuses to compile
# Headroom over the Prolog stacks for the executable, its libraries and the atom table.
_OVERHEAD_MB = 1024
# A jailed engine's CPU seconds (RLIMIT_CPU, a backstop behind each goal's own limits); it is replaced
# before it has been busy for half of them, so a long batch never meets the limit mid-goal.
CPU_SECONDS = 3600
# What Python waits for a prove reply beyond the goal's time limit (which the engine holds for the search
# and its trees together): for the reply to be written and read. Past it the engine is killed and
# restarted (a long builtin, such as building an 800 MB atom, does not see Prolog's own time limit).
GRACE_SECONDS = 2.0
# Of what KB code prints to the engine's standard error, only the last this many bytes are kept.
STDERR_KEPT = 64 * 1024
# A reply line longer than this is an engine gone wrong (answers are cut far below it: render.py).
MAX_REPLY_BYTES = 256 * 1024 * 1024
# Goal trees deeper than this are cut (the answers are not: SWI-Prolog finds them natively); each level
# is two levels of JSON, which Python's json module and pydantic read recursively.
MAX_TREE_DEPTH = 64


@dataclass(frozen=True)
class ProofLimits:
    """Bounds for one proof: goal-tree depth, logical inferences, wall seconds, Prolog stack MB."""

    depth: int = 64  # levels of KB calls shown in a goal tree (at most MAX_TREE_DEPTH)
    inferences: int = 2_000_000
    seconds: float = 5.0
    memory_mb: int = 512
    max_solutions: int = 10
    load_seconds: float = 60.0  # loading runs the KB's own directives


# What loads another file: a loading directive, or use_module of anything but a library.
_LOADER = r"(?:include|consult|ensure_loaded|load_files|\[)"
_OWN_MODULE = r"use_module\((?!library\()"
# KB files that load others by relative path are not copied into the cache (the copy would not find them).
# Anywhere in the text, comments included: a cached copy that missed a load would answer from stale files.
_LOADS_OTHERS = re.compile(rf":-\s*{_LOADER}|{_OWN_MODULE}")
# A directive that loads another file, at the start of a line (comments do not count): only such a KB
# is shown its folder in the jail.
_LOAD_DIRECTIVE = re.compile(rf"^\s*:-\s*(?:{_LOADER}|{_OWN_MODULE})", re.MULTILINE)


def kb_view(paths: list[Path]) -> tuple[list[Path], list[Path]]:
    """(read, hide) for the jail: each KB file alone, or the folder of one whose directives load other
    files by relative path, less that folder's hidden entries at any depth (a KB kept in a home folder
    must not show ~/.ssh, ~/.config or ~/project/.env to a goal)."""
    read: list[Path] = []
    hide: list[Path] = []
    for path in paths:
        if not _LOAD_DIRECTIVE.search(path.read_bytes().decode("utf-8", "replace")):
            read.append(path)
            continue
        folder = path.resolve().parent
        if folder not in read:
            read.append(folder)
            hide += _hidden_entries(folder)
    return read, hide


# Entries walked to find a shown folder's hidden ones, and hidden ones masked (each is an argument to
# bubblewrap, which takes a few thousand): a KB kept in a large tree is refused rather than shown with
# its hidden files unmasked, or held up by the walk.
MAX_SHOWN_ENTRIES = 20_000
MAX_HIDDEN_ENTRIES = 1_000


def _hidden_entries(folder: Path) -> list[Path]:
    """Every dot entry under `folder`, at any depth (`sub/.env` as well as `.ssh`; the inside of a hidden
    folder is masked with it). Symbolic links are neither followed nor masked: what one points to is
    either outside the jail, or inside it and masked there if hidden (and a dangling one cannot be
    masked at all)."""
    hidden: list[Path] = []
    walked = 0
    for root, folders, files in os.walk(folder):
        walked += len(folders) + len(files)
        hidden += [Path(root) / name for name in sorted(folders + files)
                   if name.startswith(".") and not (Path(root) / name).is_symlink()]
        if walked > MAX_SHOWN_ENTRIES or len(hidden) > MAX_HIDDEN_ENTRIES:
            raise UsageError(f"the KB loads other files from {folder}, which holds over {MAX_SHOWN_ENTRIES:,} "
                             f"entries or {MAX_HIDDEN_ENTRIES:,} hidden ones; the jail shows that folder to the "
                             "engine: keep the KB in a folder of its own")
        folders[:] = sorted(name for name in folders if not name.startswith("."))
    return hidden


def cache_folder() -> Path | None:
    """Where compiled KBs are kept ($LOGICPIPE_KB_CACHE, else ~/.cache/logicpipe/kb); None if unwritable."""
    folder = Path(os.environ.get("LOGICPIPE_KB_CACHE") or Path.home() / ".cache" / "logicpipe" / "kb")
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError:
        return None
    return folder if os.access(folder, os.W_OK) else None


def _cache_entry(path: Path, folder: Path, context: bytes) -> tuple[Path, Path] | None:
    """(source copy, compiled .qlf) for a KB file, keyed by its content, the engine's and `context` (the
    whole KB's and its --allow); None if the file cannot be cached."""
    text = path.read_bytes()
    if _LOADS_OTHERS.search(text.decode("utf-8", "replace")):
        return None
    key = hashlib.sha256(b"\0".join([ENGINE.read_bytes(), GUARD.read_bytes(), HOOKS.read_bytes(), text,
                                     context])).hexdigest()[:32]
    entry = folder / key
    entry.mkdir(exist_ok=True)
    source = entry / "kb.pl"
    if not source.exists():
        partial = entry / f"kb.pl.{os.getpid()}"
        partial.write_bytes(text)
        partial.replace(source)
    return source, entry / "kb.qlf"


class EngineExited(ProgramExecutionError):
    """The engine process died (a memory cap, a crash); it is replaced by a freshly loaded one."""


class PrologProcess:
    def __init__(self, files: list[tuple[Path, str]], limits: ProofLimits, allow: tuple[str, ...] = ()):
        """`files` are (path, name shown in file:line labels); `allow` names builtins (name/arity) that the
        KB's own rules may call on a goal's behalf although library(sandbox) refuses them (--allow)."""
        self.files = files
        self.limits = limits
        self.allow = allow
        # The engine's standard error is a pipe Python drains while it waits for a reply, keeping only its
        # tail: KB code may print without end (46 MB in 3.5 s), and no file fills up.
        read_end, write_end = os.pipe()
        os.set_blocking(read_end, False)
        self._stderr_read = read_end
        self._stderr = os.fdopen(write_end, "wb")
        self._stderr_tail = b""
        self._buffer = b""
        self._ready = False  # a process that never loaded is not restarted
        self.jail = jail.status()
        self._process: subprocess.Popen | None = None
        try:
            self.loaded = self._load()
        except BaseException:
            self.close()
            raise
        self._ready = True

    def _load(self, again: bool = True) -> dict[str, Any]:
        """Load the KB, through the compiled cache where it can: the first process to meet a file's
        content compiles it (under a lock, so concurrent ones wait and then load the result)."""
        builtins = [[name, arity] for name, arity in sorted(allowed_builtins())]
        folder = cache_folder()
        files: list[dict[str, Any]] = []
        locks = []
        # An entry serves only this KB as a whole, with this --allow: a file's directives run while the
        # KB compiles, so its entry must never be reused for another KB that happens to share a file.
        context = hashlib.sha256(b"\0".join([*(p.read_bytes() for p, _ in self.files),
                                             "\n".join(sorted(self.allow)).encode()])).digest()
        try:
            for path, name in self.files:
                wire: dict[str, Any] = {"path": str(path.resolve()), "name": name, "qlf": None}
                entry = _cache_entry(path, folder, context) if folder else None
                if entry:
                    source, qlf = entry
                    lock = open(qlf.with_suffix(".lock"), "w")
                    locks.append(lock)
                    fcntl.flock(lock, fcntl.LOCK_EX)
                    cached = qlf.exists() and qlf.with_suffix(".messages.json").exists()
                    wire.update(source=str(source), qlf=str(qlf), compile=not cached)
                files.append(wire)
            allow = [[name, int(arity)] for name, arity in (item.rsplit("/", 1) for item in self.allow)]
            request = {"op": "load", "files": files, "builtins": builtins, "allow": allow}
            entries = [Path(wire["qlf"]).parent for wire in files if wire["qlf"]]
            if self.jail.active and any(wire.get("compile") for wire in files):
                self._compile(request, entries)
            self._process = self._start({}, entries)
            try:
                loaded = self.request(request, self.limits.load_seconds)
            except ProgramExecutionError:
                stale = [wire for wire in files if wire["qlf"] and not wire["compile"]]
                if not stale or not again:
                    raise
                # A compiled entry that no longer loads (the KB's own load-time code can write it while
                # it compiles): dropped, and the KB compiled again from its source, once.
                for wire in stale:
                    Path(wire["qlf"]).unlink(missing_ok=True)
                    Path(wire["qlf"]).with_suffix(".messages.json").unlink(missing_ok=True)
                self._kill()
                self._buffer = b""
                for lock in locks:
                    lock.close()
                locks.clear()
                return self._load(again=False)
            failed = any(m["kind"] == "error" for m in loaded["messages"])
            for wire in files:
                if wire["qlf"] is None:
                    continue
                # A compiled file's warnings are kept beside it and shown again on every load from it.
                saved = Path(wire["qlf"]).with_suffix(".messages.json")
                if not wire["compile"]:
                    loaded["messages"] += [dict(m, file=wire["name"]) for m in json.loads(saved.read_text())]
                elif failed:  # a KB with errors is not kept compiled: the next load reports them again
                    Path(wire["qlf"]).unlink(missing_ok=True)
                else:
                    saved.write_text(json.dumps([m for m in loaded["messages"] if m["file"] == wire["name"]]))
            return loaded
        finally:
            for lock in locks:
                lock.close()

    def _compile(self, request: dict[str, Any], entries: list[Path]) -> None:
        """Compile the KB's uncached files in a jailed engine of their own, which sees a writable copy of
        each entry it compiles in the entry's place, then move each result into the cache. That engine
        ends before any goal runs, and the engine that answers goals has nothing writable outside."""
        compiling = [wire for wire in request["files"] if wire.get("compile")]
        staged: dict[str, Path] = {}
        with tempfile.TemporaryDirectory(prefix="logicpipe-kb-compile-") as scratch:
            for wire in compiling:
                copy = Path(tempfile.mkdtemp(dir=scratch))
                shutil.copyfile(wire["source"], copy / "kb.pl")
                staged[wire["qlf"]] = copy
            self._process = self._start(staged, entries)
            try:
                loaded = self.request(request, self.limits.load_seconds)
            finally:
                self._kill()
                self._process = None
                self._buffer = b""
            if any(m["kind"] == "error" for m in loaded["messages"]):
                for wire in compiling:  # not kept: the answering engine loads the sources, and says why
                    wire.update(qlf=None, compile=False)
                return
            for wire in compiling:
                shutil.move(str(staged[wire["qlf"]] / "kb.qlf"), wire["qlf"])
                Path(wire["qlf"]).with_suffix(".messages.json").write_text(
                    json.dumps([m for m in loaded["messages"] if m["file"] == wire["name"]]))
                wire["compile"] = False

    def _start(self, staged: dict[str, Path], entries: list[Path]) -> subprocess.Popen:
        memory = self.limits.memory_mb
        # Prolog threads off: no goal or rule may start one (thread_create/3 cannot be --allow'ed).
        command = [swipl_path(), "-q", f"--stack-limit={memory}m", "--threads=false",
                   "-g", "main", "-t", "halt(1)", str(ENGINE)]
        if self.jail.active:
            # The KB's own files (the folder of one that loads others by relative path), the engine's
            # files and this KB's entries in the compiled cache, all read-only.
            read, hide = kb_view([path for path, _ in self.files])
            cell = jail.Jail(read=[ENGINE.parent, *entries, *read], hide=hide,
                             write_over=[(copy, Path(qlf).parent) for qlf, copy in staged.items()],
                             memory_mb=memory + _OVERHEAD_MB, cpu_seconds=CPU_SECONDS)
            process = jail.popen(cell, command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._stderr)
        else:
            def bound() -> None:  # runs in the child: its own session, address space capped
                os.setsid()
                cap = (memory + _OVERHEAD_MB) * 1024 * 1024
                resource.setrlimit(resource.RLIMIT_AS, (cap, cap))

            process = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._stderr,
                                       preexec_fn=bound)
        self._busy = 0.0
        # Replies are marked with a secret of this process, and what KB code prints goes to stderr
        # (engine.pl main/0): a line printed for a goal (say, "@@reply {...proved...}") is no reply.
        self._mark = f"@@reply {secrets.token_hex(16)} "
        assert process.stdin is not None
        try:
            process.stdin.write((self._mark.split()[1] + "\n").encode())
            process.stdin.flush()
        except BrokenPipeError:
            pass  # it exited at once: the first request says why
        return process

    def read(self, text: str) -> dict[str, Any]:
        """{"terms": [postfix lists], "error": syntax error text or None}: `text` read by SWI-Prolog's own
        reader with the KB's operators, up to its first syntax error."""
        return self.request({"op": "read", "text": text})

    def check(self, goal: str, percepts: list[str]) -> dict[str, Any]:
        """{"ok": true} or {"ok": false, "layer", "reason", "predicate"}: whether the goal (canonical text)
        may run, by both layers of the sandbox; `percepts` are the names of percepts it brings."""
        return self.request({"op": "check", "goal": goal, "percepts": percepts})

    def prove(self, goal: str, percepts: list[dict[str, str]] | None = None) -> dict[str, Any]:
        """`goal` must be canonical text from terms.canonical; the engine checks it again as it runs."""
        limits = self.limits
        request = {"op": "prove", "goal": goal, "depth": min(limits.depth, MAX_TREE_DEPTH),
                   "inferences": limits.inferences, "time": limits.seconds,
                   "max_solutions": limits.max_solutions, "percepts": percepts or []}
        # Prolog holds the time limit itself, for the search and its trees together; the grace covers a
        # process that stops answering (a long builtin), which is then replaced by a fresh one.
        return self.request(request, limits.seconds + GRACE_SECONDS)

    @property
    def process(self) -> subprocess.Popen:
        assert self._process is not None, "the engine is started by _load"
        return self._process

    def request(self, payload: dict[str, Any], timeout: float = 30.0) -> dict[str, Any]:
        if self._ready and self._busy > CPU_SECONDS / 2:
            self._restart()  # replaced long before its CPU limit (which can only count less than this)
        stdin = self.process.stdin
        assert stdin is not None
        started = time.monotonic()
        nonce = secrets.token_hex(8)
        try:
            # As UTF-8, not \u escapes: SWI-Prolog 9.0 reads a character beyond U+FFFF, escaped as a pair of
            # surrogates, as two lone codes it then cannot write back (the engine died; a percept failed).
            stdin.write((json.dumps(dict(payload, nonce=nonce), ensure_ascii=False) + "\n").encode())
            stdin.flush()
        except BrokenPipeError:
            message = self._last_error()
            self._restart()
            raise EngineExited(f"SWI-Prolog exited: {message}") from None
        line = self._read_reply(time.monotonic() + timeout, nonce)
        self._busy += time.monotonic() - started
        try:
            reply = json.loads(line)
        except (ValueError, RecursionError) as exc:  # a reply is data, never a crash of the batch
            raise ProgramExecutionError(f"SWI-Prolog sent an unreadable reply: {exc}") from None
        if set(reply) == {"error"}:
            raise ProgramExecutionError(f"SWI-Prolog: {reply['error'].strip()}")
        return reply

    def _read_reply(self, deadline: float, nonce: str) -> str:
        stdout = self.process.stdout
        assert stdout is not None
        fd = stdout.fileno()
        with selectors.DefaultSelector() as selector:
            selector.register(fd, selectors.EVENT_READ)
            selector.register(self._stderr_read, selectors.EVENT_READ)
            while True:
                while b"\n" in self._buffer:
                    raw, self._buffer = self._buffer.split(b"\n", 1)
                    text = raw.decode("utf-8", "replace")
                    if text.startswith(self._mark):
                        answered, _, reply = text[len(self._mark):].partition(" ")
                        if answered == nonce:
                            return reply
                        # A reply to another request (a second reply to the last one, or one written
                        # ahead): code that should not run has run in the engine. It is replaced.
                        self._restart()
                        raise ProgramExecutionError("the engine sent a reply to another request: it is no "
                                                    "longer trusted, and was replaced")
                left = deadline - time.monotonic()
                ready = selector.select(left) if left > 0 else []
                if not ready:
                    self._restart()
                    raise SolverTimeout("SWI-Prolog did not answer in time")
                if len(ready) > 1 or ready[0][0].fd != fd:   # stderr has something: keep its tail
                    self._drain_stderr()
                    if all(key.fd != fd for key, _ in ready):
                        continue
                chunk = os.read(fd, 65536)
                if not chunk:
                    message = self._last_error()
                    self._restart()
                    raise EngineExited(f"SWI-Prolog exited: {message}")
                self._buffer += chunk
                if len(self._buffer) > MAX_REPLY_BYTES:  # an engine writing without end is no reply
                    self._restart()
                    raise ProgramExecutionError(f"SWI-Prolog wrote more than {MAX_REPLY_BYTES} bytes without a reply")

    @property
    def stderr_tail(self) -> bytes:
        """The last STDERR_KEPT bytes the engine wrote to its standard error (what KB code printed)."""
        self._drain_stderr()
        return self._stderr_tail

    def _drain_stderr(self) -> None:
        while True:
            try:
                chunk = os.read(self._stderr_read, 1 << 20)
            except BlockingIOError:
                return
            if not chunk:
                return
            self._stderr_tail = (self._stderr_tail + chunk)[-STDERR_KEPT:]

    def _last_error(self) -> str:
        # Only the end: what KB code printed may be hundreds of MB, and the last line is the engine's.
        self._drain_stderr()
        lines = [line for line in self._stderr_tail.decode("utf-8", "replace").splitlines() if line.strip()]
        return lines[-1][-1000:] if lines else f"exit status {self.process.poll()}"

    def restart(self) -> None:
        """Replace the engine by a freshly loaded one (after a request it could not answer)."""
        self._restart()

    def _restart(self) -> None:
        """Replace a hung or dead process by a freshly loaded one (none while the first load runs)."""
        self._kill()
        self._buffer = b""
        if self._ready:
            self._load()

    def _kill(self) -> None:
        if self._process is None:
            return
        if self._process.poll() is None:
            try:
                os.killpg(self._process.pid, 9)
            except ProcessLookupError:
                pass
        self._process.wait()

    def close(self) -> None:
        if self._process is not None and self._process.stdin and self._process.poll() is None:
            try:
                self._process.stdin.close()
                self._process.wait(timeout=5)
            except (OSError, subprocess.TimeoutExpired):
                self._kill()
        self._stderr.close()
        os.close(self._stderr_read)

    def __enter__(self) -> PrologProcess:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
