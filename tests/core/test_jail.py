"""The OS jail alone, with no language layer in front of it: plain swipl running hostile goals, and the
real `kb prove` with the language layers opened on purpose (--allow). Each side effect is first shown
to happen without the jail, so that its absence inside the jail is evidence, not a goal that never ran."""

from __future__ import annotations

import socket
import subprocess
import threading
import time
from pathlib import Path

import pytest

from logicpipe.core import jail
from logicpipe.solvers.lp import swipl_path
from tests.kb.conftest import kbcli  # noqa: F401 - the in-process CLI fixture

needs_jail = pytest.mark.skipif(not jail.status().active, reason=f"no OS jail here: {jail.status().reason}")


@pytest.fixture
def switch(monkeypatch):
    """Turn the jail off (LOGICPIPE_JAIL=0) or back on for this process, forgetting the cached probe."""

    def set_to(on: bool) -> None:
        monkeypatch.setenv(jail.ENV_SWITCH, "1" if on else "0")
        jail.status.cache_clear()

    yield set_to
    jail.status.cache_clear()


class Listener:
    """A TCP server on loopback that counts the connections it accepts (it sends nothing)."""

    def __init__(self) -> None:
        self.server = socket.socket()
        self.server.bind(("127.0.0.1", 0))
        self.server.listen(8)
        self.server.settimeout(0.2)
        self.port = self.server.getsockname()[1]
        self.accepted = 0
        self.done = threading.Event()
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while not self.done.is_set():
            try:
                connection, _ = self.server.accept()
            except OSError:
                continue
            self.accepted += 1
            connection.close()

    def count(self, expected: int) -> int:
        """The connections accepted, waiting up to 2 s for `expected` of them to arrive."""
        deadline = time.monotonic() + 2
        while self.accepted < expected and time.monotonic() < deadline:
            time.sleep(0.02)
        return self.accepted

    def close(self) -> None:
        self.done.set()
        self.server.close()


def _goals(seen: Path, port: int) -> dict[str, str]:
    """Hostile goals, each with the side effect it would have; `seen` is a folder the jail shows read-only."""
    return {
        "shell": f"shell('touch {seen}/shell'), true",
        "open": f"open('{seen}/open', write, S), write(S, x), close(S)",
        "process_create": f"process:process_create(path(touch), ['{seen}/process_create'], [])",
        "exec": f"unix:exec(touch('{seen}/exec'))",
        # The dynamic linker, which Landlock must let the kernel execute, run as a program of its own.
        "ldso": f"unix:exec('/lib64/ld-linux-x86-64.so.2'('/usr/bin/touch', '{seen}/ldso'))",
        "fork": f"unix:fork(P), (P == child -> open('{seen}/fork', write, S), close(S) ; true)",
        "socket": f"socket:tcp_connect('127.0.0.1':{port}, S, []), close(S)",
    }


def _run(goal: str, seen: Path, jailed: bool, folder: Path | None, off: frozenset[str] = frozenset()
         ) -> subprocess.CompletedProcess:
    command = [swipl_path(), "-q", "--threads=false", "-g", f"catch(({goal}), E, (print_message(error, E)))",
               "-t", "halt"]
    if not jailed:
        return subprocess.run(command, capture_output=True, timeout=30)
    process = jail.popen(jail.Jail(folder, read=[seen], off=off), command, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE)
    out, err = process.communicate(timeout=30)
    return subprocess.CompletedProcess(command, process.returncode, out, err)


@needs_jail
@pytest.mark.parametrize("name", ["shell", "open", "process_create", "exec", "ldso", "fork", "socket"])
def test_the_jail_alone_stops_each_side_effect(tmp_path, name):
    seen, folder = tmp_path / "seen", tmp_path / "own"
    seen.mkdir()
    folder.mkdir()
    listener = Listener()
    try:
        goal = _goals(seen, listener.port)[name]
        _run(goal, seen, jailed=False, folder=folder)  # the goal works: without the jail it leaves its mark
        marks = sorted(p.name for p in seen.iterdir())
        assert (listener.count(1) == 1) if name == "socket" else (marks == [name]), (name, marks)
        for mark in seen.iterdir():
            mark.unlink()
        jailed = _run(goal, seen, jailed=True, folder=folder)
        assert sorted(p.name for p in seen.iterdir()) == [], jailed.stderr.decode()[-500:]
        time.sleep(0.3)  # a connection, had there been one, would have been accepted by now
        assert listener.count(0) == (1 if name == "socket" else 0)
    finally:
        listener.close()


@needs_jail
@pytest.mark.parametrize("off", ["seccomp", "landlock", "network", "readonly"])
def test_each_layer_switched_off_the_others_still_stop_every_side_effect(tmp_path, off):
    """Defence in depth: with any one layer left out, no goal above leaves a mark or reaches the host."""
    seen, folder = tmp_path / "seen", tmp_path / "own"
    seen.mkdir()
    folder.mkdir()
    listener = Listener()
    try:
        for name, goal in _goals(seen, listener.port).items():
            done = _run(goal, seen, jailed=True, folder=folder, off=frozenset({off}))
            assert sorted(p.name for p in seen.iterdir()) == [], (name, done.stderr.decode()[-400:])
        time.sleep(0.3)
        assert listener.count(0) == 0
    finally:
        listener.close()


@needs_jail
def test_the_jail_writes_its_own_folder_and_nothing_else(tmp_path):
    """A positive control: the jail's own folder is writable, so the refusals above are the jail's."""
    seen, folder = tmp_path / "seen", tmp_path / "own"
    seen.mkdir()
    folder.mkdir()
    done = _run(f"open('{folder}/mine', write, S), write(S, ok), close(S), open('{seen}/theirs', write, U), "
                "close(U)", seen, jailed=True, folder=folder)
    assert (folder / "mine").read_text() == "ok"
    assert not (seen / "theirs").exists()
    assert b"theirs" in done.stderr  # refused, and said so


PYTHON_PROBES = {
    "memfd": "import os; os.memfd_create('x')",
    "unix socket": "import socket; socket.socket(socket.AF_UNIX)",
    "exec": "import os; os.execv('/usr/bin/true', ['true'])",
    "write /tmp": "open('/tmp/x', 'w')",
    "write home": "import os; open(os.path.expanduser('~/x'), 'w')",
    # Even lowering one, which the kernel allows any process: seccomp refuses every new limit.
    "change a limit": "import resource; resource.setrlimit(resource.RLIMIT_NOFILE, (32, 64))",
}


@needs_jail
@pytest.mark.parametrize("probe", list(PYTHON_PROBES))
def test_a_program_in_the_jail_cannot(tmp_path, probe):
    """Python as the jailed program (native code, as a loaded foreign library would be): no memfd to
    exec from, no socket (not even Unix), no second execve, no write anywhere without a folder of its own,
    no raising of its limits."""
    import sys

    process = jail.popen(jail.Jail(), [sys.executable, "-I", "-S", "-c", PYTHON_PROBES[probe]],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    _, err = process.communicate(timeout=30)
    assert process.returncode == 1 and any(kind in err for kind in (b"PermissionError", b"OSError", b"ValueError")), \
        err[-300:]


@needs_jail
def test_pid_1_in_the_jail_is_the_program_not_bubblewrap(tmp_path):
    """--as-pid-1: /proc/1/cmdline shows no host paths of the jail's own set-up."""
    done = _run("read_file_to_string('/proc/1/cmdline', S, []), print_message(error, format('~w', [S]))",
                tmp_path, jailed=True, folder=None)
    assert b"swipl" in done.stderr and b"bwrap" not in done.stderr


@needs_jail
def test_limits_hold_inside_the_jail(tmp_path):
    """Address space and file size: an atom past the cap and a file past the cap fail inside the goal."""
    folder = tmp_path / "own"
    folder.mkdir()
    cell = jail.Jail(folder, memory_mb=256, file_mb=1)
    command = [swipl_path(), "-q", "--threads=false", "--stack-limit=8g", "-g",
               "catch(format(atom(_), '~*c', [400000000, 0'x]), E, (print_message(error, E))), "
               f"catch((open('{folder}/big', write, S), forall(between(1, 200000, _), write(S, xxxxxxxxxx)), "
               f"close(S)), F, (print_message(error, F)))", "-t", "halt"]
    process = jail.popen(cell, command, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    _, err = process.communicate(timeout=60)
    assert (folder / "big").stat().st_size <= 1024 * 1024
    assert b"cannot allocate memory" in err.lower() and b"xfsz" in err.lower(), err[-400:]


KB = """run(C) :- shell(C).
write_to(F) :- open(F, write, S), close(S).
"""


@needs_jail
def test_kb_prove_with_the_language_layers_opened_is_still_jailed(tmp_path, kbcli, switch):  # noqa: F811
    """--allow lets the KB's rules call open/3 (and shell/1 without the jail): the user opened the
    language layers on purpose, and the jail alone keeps the host unchanged. Without the jail the same
    command does it. In the jail --allow shell/1 is refused: the jail would stop the process, and
    SWI-Prolog would then report the command as run."""
    kb = tmp_path / "kb.pl"
    kb.write_text(KB)
    shell = [f"run('touch {tmp_path}/shelled')", "--allow", "shell/1"]
    for on, expect in ((True, []), (False, ["opened", "shelled"])):
        switch(on)
        done = kbcli("kb", "prove", str(kb), *([] if on else shell[:1]), f"write_to('{tmp_path}/opened')",
                     *([] if on else shell[1:]), "--allow", "open/3", "--allow", "close/1")
        assert sorted(p.name for p in tmp_path.iterdir() if p.name != "kb.pl") == expect, done
        for name in expect:
            (tmp_path / name).unlink()
    switch(True)
    refused = kbcli("kb", "prove", str(kb), *shell)
    assert refused.returncode == 2 and refused.stderr.startswith("error: --allow shell/1: the OS jail stops"), refused
    assert sorted(p.name for p in tmp_path.iterdir()) == ["kb.pl"]


def test_no_jail_is_one_line_and_require_jail_refuses(tmp_path, kbcli, switch):  # noqa: F811
    kb = tmp_path / "kb.pl"
    kb.write_text("p(1).\n")
    switch(False)
    done = kbcli("kb", "prove", str(kb), "p(X)")
    assert done.returncode == 0 and "X = 1" in done.stdout
    assert done.stderr.count("\n") == 1 and "OS jail: off" in done.stderr, done.stderr
    refused = kbcli("kb", "--require-jail", "prove", str(kb), "p(X)")
    assert refused.returncode == 3 and refused.stdout == ""
    assert refused.stderr.strip().splitlines() == [
        "error: --require-jail: no OS jail on this machine (switched off by LOGICPIPE_JAIL=0)"]


@needs_jail
def test_list_and_kb_check_name_the_active_layers(tmp_path, kbcli):  # noqa: F811
    kb = tmp_path / "kb.pl"
    kb.write_text("p(1).\n")
    listed = kbcli("list")
    assert "kb engine: whitelist, library(sandbox); OS jail: on (namespaces, seccomp, rlimits" in listed.stdout
    checked = kbcli("kb", "check", str(kb))
    assert "isolation: kb engine: whitelist, library(sandbox); OS jail: on" in checked.stderr


@needs_jail
def test_the_lp_solver_runs_in_the_jail():
    from logicpipe.solvers import lp_prolog

    lp_prolog.run_program("", 5.0, 64)
    assert lp_prolog._engine is not None and lp_prolog._engine.process.args[0] == "bwrap"
