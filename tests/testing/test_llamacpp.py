"""The real-model helpers that need no server: the parse count the real-model tests assert on, and
the settings as `logicpipe run` options (run through the CLI's own option parsing)."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from logicpipe.core.records import FormulateRecord, SolveRecord, StageError
from logicpipe.core.trajectory import program_sha
from logicpipe.testing.llamacpp import cli_options, parse_counts
from tests.conftest import cli


def _write(path, records):
    path.write_text("".join(record.model_dump_json() + "\n" for record in records))


def _solved(formulated, category=None, round_=0):
    error = None if category is None else StageError(category=category, message="m")
    return SolveRecord(id=formulated.id, dataset="d", solver="lp", error=error, round=round_,
                       program=program_sha(formulated))


def test_parse_counts_every_round_and_leaves_out_problems_without_a_program(tmp_path):
    first = {i: FormulateRecord(id=i, dataset="d", program=f"program {i}", source="llm:m") for i in
             ("ok", "parse", "answer", "again", "twice", "redone")}
    first["llm"] = FormulateRecord(id="llm", dataset="d", source="llm:m",
                                   error=StageError(category="llm", message="m"))
    round0 = {"ok": None, "parse": "parse", "llm": "llm", "answer": "no_answer", "again": "parse", "twice": "parse",
              "redone": "parse"}
    repairs = {i: FormulateRecord(id=i, dataset="d", program=f"repair {i}", source="refine:m", round=1,
                                  parent=program_sha(first[i])) for i in ("parse", "again", "twice", "redone")}
    round1 = {"parse": "execution", "again": "no_program", "twice": "parse", "redone": "parse"}
    _write(tmp_path / "formulate.jsonl", first.values())
    _write(tmp_path / "solve.jsonl", [_solved(first[i], c) for i, c in round0.items()])
    _write(tmp_path / "refine-1.jsonl", repairs.values())
    # A redone record replaces the one before it; a record of a program nobody repaired is stale.
    _write(tmp_path / "solve-1.jsonl", [*(_solved(repairs[i], c, 1) for i, c in round1.items()),
                                        _solved(repairs["redone"], None, 1), _solved(first["ok"], "parse", 1)])
    # Round 0: 6 programs, 2 parsed (llm left out); round 1: 3 programs, 2 parsed (no_program left out).
    assert parse_counts(tmp_path) == (4, 9)


@pytest.mark.parametrize("constrain", [False, True])
def test_settings_are_valid_run_options(data_dir, tmp_path, constrain):
    # --limit 0 is refused after the options parsed, so this checks every option name and value.
    done = cli("run", "-d", "prontoqa", "--data-dir", str(data_dir), "--out", str(tmp_path), "--model", "m",
               "--base-url", "http://127.0.0.1:9/v1", *cli_options(constrain), "--limit", "0")
    assert done.returncode != 0 and "invalid option --limit" in done.stderr, done.stderr


def test_the_server_process_ends_with_the_process_that_started_it():
    """A killed test run has no fixture teardown: the server it started must not outlive it."""
    code = ("import subprocess, time\n"
            "from logicpipe.testing.llamacpp import _die_with_parent\n"
            "child = subprocess.Popen(['sleep', '60'], preexec_fn=_die_with_parent, start_new_session=True)\n"
            "print(child.pid, flush=True)\n"
            "time.sleep(60)\n")
    parent = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    assert parent.stdout is not None
    child = int(parent.stdout.readline())
    parent.kill()
    parent.wait()
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        status = Path(f"/proc/{child}/status")
        # Gone, or dead and waiting for init to reap it.
        if not status.exists() or "State:\tZ" in status.read_text():
            return
        time.sleep(0.1)
    os.kill(child, signal.SIGKILL)
    pytest.fail("the child outlived its killed parent")
