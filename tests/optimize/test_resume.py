"""A SIGKILL in the middle of a step, then the same command again: the run goes on from the last accepted
state and sends no request whose reply the killed run had already received (it comes from the cache)."""

from __future__ import annotations

import hashlib
import json
import os
import signal
import sqlite3
import subprocess
import sys
import time

from logicpipe.testing import FakeOpenAI
from tests.conftest import ROOT
from tests.optimize.conftest import GOOD
from tests.optimize.test_cli import in_process, optimize_args


def key(body: dict, base_url: str) -> str:
    """The cache key logicpipe.llm gives a request, rebuilt from what the server received."""
    sent = {k: body[k] for k in ("model", "messages", "temperature", "max_tokens")}
    return hashlib.sha256(json.dumps({**sent, "base_url": base_url, "sample": 0}, sort_keys=True).encode()).hexdigest()


def test_sigkill_mid_step_then_rerun_resumes_without_repeating_paid_calls(scripted, data_dir, tmp_path, capsys):
    model = scripted(rewrites={"principles": [f"- {GOOD}"]})
    out = tmp_path / "out"
    command = [sys.executable, "-m", "logicpipe", "optimize", "-d", "prontoqa", "--data-dir", str(data_dir),
               "--model", "fake", "--train-split", "train", "--val-split", "dev", "--steps", "1",
               "--batch-size", "3", "--limit-val", "8", "--out", str(out), "--llm-timeout", "5",
               "--max-concurrency", "2"]
    with FakeOpenAI(model, latency=0.05) as fake:
        process = subprocess.Popen([*command, "--base-url", fake.url], cwd=ROOT, start_new_session=True,
                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            # Step 0 validates 8 problems; request 16 falls among step 1's losses and gradients.
            deadline = time.monotonic() + 120
            while len(fake.requests) < 16 and process.poll() is None and time.monotonic() < deadline:
                time.sleep(0.01)
        finally:
            os.killpg(process.pid, signal.SIGKILL)  # the CLI and its solver workers, mid-step
            process.wait()
        assert process.returncode == -signal.SIGKILL
        killed_at = len(fake.requests)
        assert 16 <= killed_at < 30
        with sqlite3.connect(out / "llm-cache.sqlite") as db:
            answered = {row[0] for row in db.execute("SELECT key FROM completions")}
        assert len(answered) >= 14
        # The keys are rebuilt right: every reply the killed run cached is one of the requests it sent.
        assert answered <= {key(r, fake.url) for r in fake.requests}
        state = json.loads((out / "state.json").read_text())
        assert state["step"] == 0  # the killed step was not recorded as done
        # What the killed run spent still counts against --max-calls: every reply it received, but for
        # those (at most --max-concurrency) cached in the instant before the kill and not yet counted.
        assert json.loads((out / "spent.json").read_text())["sent"] >= len(answered) - 2

        again = in_process(capsys, *optimize_args(fake, data_dir, out))
        assert again.returncode == 0, again.stderr
        repeated = [r for r in fake.requests[killed_at:] if key(r, fake.url) in answered]
        assert repeated == []
    state = json.loads((out / "state.json").read_text())
    assert state["step"] == 1 and state["current_hash"] != state["start_hash"]
    steps = [json.loads(line)["step"] for line in (out / "steps.jsonl").read_text().splitlines()]
    assert steps == [0, 1]
    candidates = [json.loads(line) for line in (out / "candidates.jsonl").read_text().splitlines()]
    # Two candidates raced (the default --candidates 2): one accepted, the other raced out on a slice.
    assert sorted(c["status"] for c in candidates) == ["accepted", "dropped"]
    assert [c["params_hash"] for c in candidates if c["status"] == "accepted"] == [state["current_hash"]]
