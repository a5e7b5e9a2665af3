"""The adaptive in-flight limit (llm/client.py Pace), through `logicpipe run` against a real HTTP server:
a server that refuses more than 8 requests in flight, and one that is overloaded for a moment."""

import json
import re

from logicpipe.testing import FakeOpenAI, Fault, ScriptedReplies
from tests.conftest import cli
from tests.testing.test_serve_scripted import start, stop

PROGRAMS = "ProntoQA_dev_gpt-4.json"
SETTLED = re.compile(r"model requests in flight \((\S+)\): settled at (\d+) of --max-concurrency (\d+) "
                     r"\(lowest (\d+)\) after (\d+) rate limits")


def formulated(out):
    path = out / "prontoqa" / "formulate.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_a_rate_limited_server_is_kept_under_its_limit_and_no_problem_fails(data_dir, tmp_path):
    # 429 beyond 8 requests in flight; the run may send 64 at once.
    server, url = start("--programs", str(data_dir / "programs" / PROGRAMS), "--max-in-flight", "8",
                        "--latency", "0.1")
    try:
        done = cli("run", "-d", "prontoqa", "--data-dir", str(data_dir), "--out", str(tmp_path / "out"),
                   "--model", "scripted", "--base-url", url, "--llm-cache", str(tmp_path / "cache.sqlite"),
                   "--max-concurrency", "64", "--max-rounds", "0", "--limit", "120")
        assert done.returncode == 0, done.stderr
    finally:
        err = stop(server) if server.poll() is None else server.stderr.read()
    records = formulated(tmp_path / "out")
    assert len(records) == 120 and all(r["error"] is None and r["program"] for r in records), \
        [r["error"] for r in records if r["error"]][:3]
    answered, refused = map(int, re.search(r"answered (\d+) requests, refused (\d+)", err).groups())
    assert answered == 120 and refused > 0  # each problem answered once; the limit was met
    settled = SETTLED.search(done.stdout)
    assert settled is not None, done.stdout
    assert settled[1] == "scripted" and settled[3] == "64"
    assert 5 <= int(settled[2]) <= 11, done.stdout  # near the server's 8
    metrics = json.loads((tmp_path / "out" / "prontoqa" / "metrics.json").read_text())
    assert "llm" not in metrics["failures"]


def test_the_limit_shrinks_on_overload_and_grows_back_while_replies_succeed(data_dir, tmp_path):
    replies = ScriptedReplies.from_logic_lm(data_dir / "programs" / PROGRAMS)
    with FakeOpenAI(replies, latency=0.02) as fake:
        # A moment of overload: a timeout, then 503s, each wave sent at the limit the last one left.
        fake.inject(Fault(delay=1.5), *[Fault(status=503, headers={"Retry-After": "0.05"})] * 16)
        done = cli("run", "-d", "prontoqa", "--data-dir", str(data_dir), "--out", str(tmp_path / "out"),
                   "--model", "fake-gpt", "--base-url", fake.url, "--llm-cache", str(tmp_path / "cache.sqlite"),
                   "--max-concurrency", "8", "--max-rounds", "0", "--limit", "250", "--llm-timeout", "1")
        assert done.returncode == 0, done.stderr
        assert fake.peak_in_flight <= 9  # 8, and the request the client gave up on while the server slept
    assert all(r["error"] is None for r in formulated(tmp_path / "out"))
    settled = SETTLED.search(done.stdout)
    assert settled is not None, done.stdout
    assert int(settled[4]) <= 3, done.stdout  # it shrank ...
    assert settled[2] == "8", done.stdout  # ... and grew back to --max-concurrency
    assert int(settled[5]) >= 17  # every 503 and the timeout counted (a loaded machine may time out more)


def test_a_server_that_never_refuses_leaves_the_limit_and_the_summary_alone(data_dir, tmp_path):
    replies = ScriptedReplies.from_logic_lm(data_dir / "programs" / PROGRAMS)
    with FakeOpenAI(replies, latency=0.5) as fake:
        done = cli("run", "-d", "prontoqa", "--data-dir", str(data_dir), "--out", str(tmp_path / "out"),
                   "--model", "fake-gpt", "--base-url", fake.url, "--llm-cache", str(tmp_path / "cache.sqlite"),
                   "--max-concurrency", "16", "--max-rounds", "0", "--limit", "32")
        assert done.returncode == 0, done.stderr
        assert fake.peak_in_flight == 16  # the ceiling is used from the first request
    assert "model requests in flight" not in done.stdout
