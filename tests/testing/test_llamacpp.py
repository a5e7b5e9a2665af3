"""The real-model helpers that need no server: the parse count the real-model tests assert on, and
the settings as `logicpipe run` options (run through the CLI's own option parsing)."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from logicpipe.testing.llamacpp import cli_options, parse_counts
from tests.conftest import cli


def _record(category=None):
    error = None if category is None else {"category": category, "message": "m", "transient": False}
    return json.dumps({"id": "p", "error": error, "program": "abc"})


def test_parse_counts_every_round_and_leaves_out_problems_without_a_program(tmp_path):
    (tmp_path / "solve.jsonl").write_text("\n".join([_record(), _record("parse"), _record("llm"),
                                                     _record("no_answer")]) + "\n")
    (tmp_path / "solve-1.jsonl").write_text("\n".join([_record("execution"), _record("no_program"),
                                                       _record("parse")]) + "\n")
    (tmp_path / "formulate.jsonl").write_text(_record("parse") + "\n")  # not a solve file
    assert parse_counts(tmp_path) == (3, 5)


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
