"""One long-lived SWI-Prolog engine per process, fed logic programs one after another.

Starting `swipl` costs tens of milliseconds, far more than saturating a typical program, so each worker
keeps one engine (lp_engine.pl) and talks to it over a line protocol on stdin/stdout. The engine starts
every program from an empty database and only stores the program's terms as data, so nothing leaks
between programs. It stays a separate process so that a Prolog crash cannot take the worker down; an
overrun kills it, and the next program starts a fresh one.
"""

from __future__ import annotations

import atexit
import ctypes
import os
import select
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path

from ..core import jail
from ..core.errors import PrerequisiteError, ProgramExecutionError, SolverTimeout

ENGINE = Path(__file__).with_name("lp_engine.pl")
_PR_SET_PDEATHSIG = 1
_END = b"END\n"
# Headroom over the Prolog stacks for the executable and its libraries (the jail's address-space cap).
_OVERHEAD_MB = 512
# A jailed engine's CPU seconds (a backstop behind each program's own deadline); an engine is replaced
# once it has been busy for half of them.
CPU_SECONDS = 3600


def swipl_path() -> str:
    path = shutil.which("swipl")
    if path is None:
        raise PrerequisiteError("SWI-Prolog (swipl) not found; install it with: apt-get install swi-prolog-nox")
    return path


def _die_with_parent() -> None:
    # The pool SIGKILLs a worker's process group on its deadline; this also covers a worker that dies
    # any other way, so no engine outlives the process that owns it.
    ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)


class PrologEngine:
    def __init__(self, stack_mb: int):
        self.stack_mb = stack_mb
        self.owner = os.getpid()
        self.errors = tempfile.TemporaryFile()
        self.busy = 0.0
        command = [swipl_path(), "-q", "--threads=false", f"--stack-limit={stack_mb}m", "-g", "serve", "-t",
                   "halt(1)", str(ENGINE)]
        if jail.status().active:  # the program is data to the engine; the jail holds if that ever fails
            cell = jail.Jail(read=[ENGINE], memory_mb=stack_mb + _OVERHEAD_MB, cpu_seconds=CPU_SECONDS)
            self.process = jail.popen(cell, command, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                      stderr=self.errors)
        else:
            self.process = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                            stderr=self.errors, preexec_fn=_die_with_parent)

    def run(self, program: str, seconds: float) -> str:
        """Send one program (data terms, one per line) and return the engine's answer up to END."""
        assert self.process.stdin is not None and self.process.stdout is not None
        started = time.monotonic()
        deadline = started + seconds
        try:
            self.process.stdin.write(program.encode() + b"end_of_program.\n")
            self.process.stdin.flush()
        except BrokenPipeError:
            raise self._died() from None
        out = self.process.stdout.fileno()
        chunks: list[bytes] = []
        tail = b""
        while not (tail == _END or tail.endswith(b"\n" + _END)):
            remaining = deadline - time.monotonic()
            if remaining <= 0 or not select.select([out], [], [], remaining)[0]:
                self.close()
                raise SolverTimeout(f"saturation did not finish within {seconds:g} s")
            chunk = os.read(out, 1 << 16)
            if not chunk:
                raise self._died()
            chunks.append(chunk)
            tail = (tail + chunk)[-(len(_END) + 1):]
        self.busy += time.monotonic() - started
        return b"".join(chunks).decode(errors="replace")

    def _died(self) -> ProgramExecutionError:
        code = self.process.wait()
        self.errors.seek(0)
        lines = self.errors.read().decode(errors="replace").strip().splitlines()
        self.close()
        return ProgramExecutionError(f"SWI-Prolog failed (exit {code}): {(lines or ['no message'])[-1]}")

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait()
        for stream in (self.process.stdin, self.process.stdout):
            if stream is not None:
                stream.close()
        self.errors.close()


_engine: PrologEngine | None = None


def run_program(program: str, seconds: float, stack_mb: int) -> str:
    """Run a program on this process's engine, starting (or restarting) it as needed."""
    global _engine
    if _engine is not None and (_engine.owner != os.getpid() or _engine.stack_mb != stack_mb
                                or _engine.process.poll() is not None or _engine.busy > CPU_SECONDS / 2):
        # A forked child must not share its parent's pipes; leave that engine to its owner.
        if _engine.owner == os.getpid():
            _engine.close()
        _engine = None
    if _engine is None:
        _engine = PrologEngine(stack_mb)
    engine = _engine
    try:
        return engine.run(program, seconds)
    except (SolverTimeout, ProgramExecutionError):
        if _engine is engine:
            _engine = None
        raise


@atexit.register
def _close_at_exit() -> None:
    """A process that ends normally (solving in process: the tests, a library caller) stops its engine
    and closes its pipes and error file, rather than leave them to be found open as the interpreter
    ends. A worker ends with os._exit, which runs no exit handler: its engine dies with it."""
    if _engine is not None and _engine.owner == os.getpid():
        _engine.close()
