"""A connection reset mid-reply and an oversized reply, through the CLI against the scripted server on
127.0.0.1: both are transient model errors (a record that says why, counted in the error budget, redone
by a re-run), never a crash and never a poisoned cache."""

import json
import sqlite3

import pytest

from logicpipe.core.jsonl import MAX_RECORD_BYTES
from logicpipe.testing import FakeOpenAI, Fault, ScriptedReplies
from tests.conftest import cli

PROGRAMS = "ProntoQA_dev_gpt-4.json"


def run(fake, data_dir, tmp_path, *extra):
    return cli("run", "-d", "prontoqa", "--data-dir", str(data_dir), "--out", str(tmp_path / "out"),
               "--model", "fake-gpt", "--base-url", fake.url, "--llm-cache", str(tmp_path / "cache.sqlite"),
               "--max-concurrency", "1", "--max-rounds", "0", *extra)


def formulated(tmp_path):
    path = tmp_path / "out" / "prontoqa" / "formulate.jsonl"
    return {r["id"]: r for r in map(json.loads, path.read_text().splitlines())}


def replies(data_dir):
    return ScriptedReplies.from_logic_lm(data_dir / "programs" / PROGRAMS)


def test_a_reset_mid_reply_is_retried_and_the_reply_arrives(data_dir, tmp_path):
    with FakeOpenAI(replies(data_dir)) as fake:
        fake.inject(Fault(reset=True))
        done = run(fake, data_dir, tmp_path, "--limit", "2")
        assert done.returncode == 0, done.stderr
        assert len(fake.requests) == 3  # the reset one was asked again
    records = formulated(tmp_path)
    assert len(records) == 2 and all(r["error"] is None and r["program"] for r in records.values())


def test_resets_past_the_retries_are_a_transient_record_redone_by_a_rerun(data_dir, tmp_path):
    with FakeOpenAI(replies(data_dir)) as fake:
        fake.inject(Fault(reset=True), Fault(reset=True))
        done = run(fake, data_dir, tmp_path, "--limit", "3", "--max-retries", "1", "--max-errors", "1")
        assert done.returncode == 0, done.stderr
        assert "internal error" not in done.stderr
        failed = [r for r in formulated(tmp_path).values() if r["error"]]
        assert len(failed) == 1
        error = failed[0]["error"]
        assert error["category"] == "llm" and error["transient"] is True
        assert "gave up after 2 attempts: CutReply: the connection failed mid-reply" in error["message"]
        sent = len(fake.requests)
        again = run(fake, data_dir, tmp_path, "--limit", "3", "--max-retries", "1")
        assert again.returncode == 0, again.stderr
        assert len(fake.requests) == sent + 1  # only the failed problem is asked again
    assert formulated(tmp_path)[failed[0]["id"]]["program"]


@pytest.mark.slow  # the budget itself is tested fast in tests/stages/test_runner.py
def test_resets_count_in_the_error_budget(data_dir, tmp_path):
    with FakeOpenAI(replies(data_dir)) as fake:
        fake.inject(*[Fault(reset=True)] * 4)
        done = run(fake, data_dir, tmp_path, "--limit", "4", "--max-retries", "1", "--max-errors", "1")
    assert done.returncode == 4
    lines = done.stderr.strip().splitlines()
    assert lines[-1].startswith("error: stopped after 2 model errors, over the budget of 1 (--max-errors)")
    assert "internal error" not in done.stderr
    assert sum(r["error"] is not None for r in formulated(tmp_path).values()) == 2


def test_an_oversized_reply_is_never_cached_and_a_rerun_asks_again(data_dir, tmp_path):
    with FakeOpenAI(replies(data_dir)) as fake:
        fake.inject(Fault(oversize=5_000_000))
        done = run(fake, data_dir, tmp_path, "--limit", "2")
        assert done.returncode == 0, done.stderr
        assert len(fake.requests) == 2  # too big is not retried: the same request would get the same reply
        failed = [r for r in formulated(tmp_path).values() if r["error"]]
        assert len(failed) == 1
        error = failed[0]["error"]
        assert error["category"] == "llm" and error["transient"] is True
        assert "over the 1048576 bytes a record can hold; not cached, a re-run asks again" in error["message"]
        with sqlite3.connect(tmp_path / "cache.sqlite") as db:
            sizes = [row[0] for row in db.execute("SELECT length(value) FROM completions")]
        assert len(sizes) == 1 and max(sizes) < MAX_RECORD_BYTES // 4
        again = run(fake, data_dir, tmp_path, "--limit", "2")
        assert again.returncode == 0, again.stderr
        assert len(fake.requests) == 3
    assert all(r["error"] is None for r in formulated(tmp_path).values())


@pytest.mark.slow  # a run with samples against an oversized reply
def test_with_samples_each_reply_must_fit_the_record_that_holds_them_all(data_dir, tmp_path):
    # Four samples and the program: five copies in one record, so 700 kB each is too much.
    with FakeOpenAI(replies(data_dir)) as fake:
        fake.inject(Fault(oversize=700_000))
        done = run(fake, data_dir, tmp_path, "--limit", "1", "--num-samples", "4", "--temperature", "0.7")
        assert done.returncode == 0, done.stderr
    (record,) = formulated(tmp_path).values()
    assert len(record["samples"]) == 3  # the oversized sample is left out, the record is written
