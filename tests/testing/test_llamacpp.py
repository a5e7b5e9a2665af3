"""The real-model helpers that need no server: the parse count the real-model tests assert on, and
the settings as `logicpipe run` options (run through the CLI's own option parsing)."""

import json

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


def test_settings_are_valid_run_options(data_dir, tmp_path):
    # --limit 0 is refused after the options parsed, so this checks every option name and value.
    done = cli("run", "-d", "prontoqa", "--data-dir", str(data_dir), "--out", str(tmp_path), "--model", "m",
               "--base-url", "http://127.0.0.1:9/v1", *cli_options(), "--limit", "0")
    assert done.returncode != 0 and "invalid option --limit" in done.stderr, done.stderr
