"""How Prover9 runs: the binary resolved once, input on stdin from a private directory, searches side by
side that end with the call and with the worker."""

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

from logicpipe.solvers import execute_task, prover9
from logicpipe.solvers.prover9 import Searches, prover9_path

PROGRAM = "Premises:\n∀x (Man(x) → Mortal(x))\nMan(socrates)\nConclusion:\nMortal(socrates)\n"
# Looking for a contradiction in the commutative group axioms keeps Prover9 busy until its limit.
ENDLESS = ("assign(max_seconds, 60).\nformulas(assumptions).\nf(f(x,y),z) = f(x,f(y,z)).\nf(e,x) = x.\n"
           "f(g(x),x) = e.\nf(x,y) = f(y,x).\nend_of_list.\n")
QUICK = "formulas(assumptions).\np(a).\nend_of_list.\nformulas(goals).\np(a).\nend_of_list.\n"


def test_the_binary_is_hashed_once_per_process(monkeypatch):
    calls = []
    real = prover9.hashlib.sha256
    monkeypatch.setattr(prover9.hashlib, "sha256", lambda data: calls.append(len(data)) or real(data))
    monkeypatch.delenv(prover9.ENV, raising=False)
    prover9._digest.cache_clear()
    paths = {prover9_path() for _ in range(5)}
    assert len(paths) == 1 and len(calls) == 1


def test_a_deleted_private_copy_is_made_again(monkeypatch, tmp_path):
    monkeypatch.delenv(prover9.ENV, raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    path = prover9_path()
    path.unlink()
    assert prover9_path() == path and path.exists()
    shutil.rmtree(tmp_path / "logicpipe")
    assert prover9_path() == path and path.exists() and path.parent.stat().st_mode & 0o077 == 0


def test_no_temporary_files_input_goes_on_stdin(monkeypatch, tmp_path):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "missing"))
    started = []
    real = subprocess.Popen

    def spy(args, **kwargs):
        started.append((args, kwargs))
        return real(args, **kwargs)

    monkeypatch.setattr(prover9.subprocess, "Popen", spy)
    assert execute_task({"solver": "fol", "program": PROGRAM}).verdict == "True"
    # A world where the man is not mortal is impossible, one where he is shows the premises consistent:
    # only the conclusion is left for Prover9.
    assert len(started) == 1
    for args, kwargs in started:
        assert len(args) == 1 and kwargs["stdin"] == subprocess.PIPE
        assert Path(kwargs["cwd"]).stat().st_mode & 0o077 == 0  # only this user can write where it runs
        assert not kwargs.get("start_new_session")  # stays in the worker's process group


def test_leaving_the_searches_kills_the_ones_still_running():
    start = time.monotonic()
    with Searches({"quick": QUICK, "endless": ENDLESS}, 60) as searches:
        first = next(iter(searches))
        processes = list(searches._processes)
    assert first.label == "quick" and first.status == "proved"
    assert all(process.returncode is not None for process in processes)
    assert time.monotonic() - start < 30


def _prover9_processes(binary: Path) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and (entry / "cmdline").read_bytes().split(b"\0")[0] == str(binary).encode():
                found.append(int(entry.name))
        except OSError:
            continue
    return found


def test_searches_die_with_their_worker(tmp_path):
    # A worker of the pool leads its own process group and is killed with it; so are its Prover9 runs.
    binary = tmp_path / "prover9-copy"
    shutil.copy(prover9_path(), binary)
    script = textwrap.dedent(f"""
        from logicpipe.solvers.prover9 import Searches
        with Searches({{"endless": {ENDLESS!r}}}, 60) as searches:
            next(iter(searches))
    """)
    worker = subprocess.Popen([sys.executable, "-c", script], start_new_session=True,
                              env={**os.environ, prover9.ENV: str(binary)})
    try:
        deadline = time.monotonic() + 30
        while not _prover9_processes(binary) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert _prover9_processes(binary), "the search never started"
    finally:
        os.killpg(worker.pid, signal.SIGKILL)
        worker.wait()
    deadline = time.monotonic() + 10
    while _prover9_processes(binary) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _prover9_processes(binary) == []


# Prover9 drops clauses heavier than its default max_weight (100), and then may run out of clauses without
# a proof that exists: that is no evidence the goal is unprovable (found by a red-team review).
WIDE = ", ".join(f"kk{i}" for i in range(120))
HEAVY = (f"Premises:\nP(ann)\nE(ann, bob)\nE(bob, cal)\n∀x (P(x) → Q(x, {WIDE}))\n"
         f"∀x ∀y (Q(x, {WIDE}) ∧ E(x, y) → Q(y, {WIDE}))\n∀x (Q(x, {WIDE}) → R(x))\nConclusion:\nR(cal)\n")


def test_a_search_that_dropped_clauses_proves_nothing_unprovable():
    out = execute_task({"solver": "fol", "program": HEAVY, "limits": {"seconds": 10}})
    # R(cal) follows, but Prover9 cannot keep the clauses that prove it: never Unknown, never False.
    assert out.verdict is None and out.error.category == "timeout", out
    assert "conclusion: incomplete" in out.error.message
    narrow = HEAVY.replace(WIDE, "kk0")
    assert execute_task({"solver": "fol", "program": narrow}).verdict == "True"


def test_only_a_search_that_kept_every_clause_is_exhausted():
    clean = "Deleted_by_rule=0.\nSos_limit_deleted=0. Sos_displaced=0. Sos_removed=0.\n"
    assert prover9._status(2, clean) == "exhausted"
    for dropped in ("Deleted_by_rule=3.", "Sos_limit_deleted=12.", "Sos_displaced=1.", "Sos_removed=40."):
        assert prover9._status(2, clean + dropped) == "incomplete"
    assert prover9._status(0, clean + "Deleted_by_rule=3.") == "proved"  # a proof stands whatever was dropped
    assert prover9._status(4, clean) == "limit"
