"""`logicpipe optimize` through the CLI: bad input is one line before anything is written, the budget
stops a run cleanly between requests with its state and report written, a re-run goes on from there,
and the best prompt set works with `logicpipe run --prompts`."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

import pytest

from logicpipe.cli import main
from logicpipe.testing import FakeOpenAI
from tests.conftest import cli
from tests.optimize.conftest import GOOD


@dataclass
class Done:
    returncode: int
    stdout: str
    stderr: str


def in_process(capsys, *args: str) -> Done:
    """The CLI's entry point in this process (no interpreter start-up): exit code and output."""
    capsys.readouterr()
    try:
        main(list(args))
        code = 0
    except SystemExit as exc:
        code = int(exc.code or 0)
    captured = capsys.readouterr()
    return Done(code, captured.out, captured.err)


def optimize_args(fake, data_dir, out, *extra: str) -> list[str]:
    return ["optimize", "-d", "prontoqa", "--data-dir", str(data_dir), "--model", "fake", "--base-url", fake.url,
            "--train-split", "train", "--val-split", "dev", "--steps", "1", "--batch-size", "3",
            "--limit-val", "8", "--limit-test", "4", "--out", str(out), "--llm-timeout", "5", "--max-retries", "1",
            *extra]


def optimize_cli(fake, data_dir, out, *extra: str):
    return cli(*optimize_args(fake, data_dir, out, *extra))


@pytest.mark.parametrize(("extra", "says"), [
    (["--val-split", "test"], "the test split is never used"),
    (["-d", "nosuch"], "nosuch"),
    (["--max-cost", "1"], "--max-cost needs --price-prompt"),
    (["--steps", "-1"], "invalid option --steps"),
    (["--val-split", "train"], "--val-split train: prontoqa has no such split (it has dev)"),
    (["--train-split", "trian"], "--train-split trian: prontoqa has no such split (it has dev)"),
    (["--prompts", "/nonexistent/prompts"], "prompt folder /nonexistent/prompts not found"),
    (["--prompts", "logic-lm"], "Logic-LM's prompts (--prompts logic-lm) are one block of text"),
    (["--test-split", "dev"], "--test-split dev is also the train or validation split"),
    (["--test-split", "tset"], "--test-split tset: prontoqa has no such split (it has dev)"),
    (["--objective", "speed"], "invalid option --objective: Input should be 'accuracy' or 'cost'"),
    (["--candidates", "0"], "invalid option --candidates: Input should be greater than or equal to 1"),
])
def test_bad_input_is_one_line_and_writes_nothing(extra, says, data_dir, tmp_path, capsys):
    out = tmp_path / "out"
    done = in_process(capsys, "optimize", "-d", "prontoqa", "--data-dir", str(data_dir), "--model", "fake", "--base-url",
               "http://127.0.0.1:9/v1", "--out", str(out), *extra)
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error:") and says in lines[0], done.stderr
    assert not out.exists()


def test_budget_stops_cleanly_then_a_rerun_finishes_without_asking_twice(scripted, data_dir, tmp_path, capsys):
    model = scripted(rewrites={"principles": [f"- {GOOD}"]})
    out = tmp_path / "out"
    with FakeOpenAI(model) as fake:
        # Step 0 validates 8 problems; step 1 needs 3 programs, 3 losses, 12 gradients, a rewrite and 8
        # validation programs: 20 calls stop it among its gradients.
        stopped = in_process(capsys, *optimize_args(fake, data_dir, out, "--max-calls", "20"))
        assert stopped.returncode == 4, stopped.stderr  # a budget stop, as before the start is validated
        # A clean stop with its report written is a notice, not an error.
        assert stopped.stderr.strip().splitlines()[-1].startswith("stopped early: --max-calls 20 reached")
        assert not any(line.startswith("error") for line in stopped.stderr.splitlines())
        # 20 under the budget, then the 4 test problems scored on the way out (the start is the best so far,
        # so one prompt set: its second run reads the first one's records); the test is outside the budget.
        test_ids = set((out / "splits" / "test.txt").read_text().split())
        assert len(test_ids) == 4
        assert len([r for r in fake.requests if r["_logicpipe"]["problem"] not in test_ids]) == 20
        assert len(fake.requests) == 24
        assert json.loads((out / "spent.json").read_text())["sent"] == 24
        report = json.loads((out / "report.json").read_text())
        assert report["stopped"] == "--max-calls 20 reached" and report["test_problems"] == 4
        assert report["test_start"] == report["test_best"] and report["test_paired"]["mean"] == 0
        state = json.loads((out / "state.json").read_text())
        assert state["step"] == 0 and state["splits"]["carved"] is True
        assert "no 'train' split" in state["splits"]["note"]
        assert (out / "report.md").is_file() and (out / "curve.png").is_file()
        first = len(fake.requests)
        finished = in_process(capsys, *optimize_args(fake, data_dir, out, "--max-calls", "200"))
        assert finished.returncode == 0, finished.stderr
        # Everything the first run got an answer for came from the cache.
        bodies = [json.dumps({k: v for k, v in r.items() if k != "_logicpipe"}, sort_keys=True) for r in fake.requests]
        assert len(set(bodies)) == len(bodies) and len(bodies) > first
    state = json.loads((out / "state.json").read_text())
    assert state["step"] == 1 and state["best_hash"] == state["current_hash"] != state["start_hash"]
    assert "best:" in finished.stdout and state["best_dir"] in finished.stdout
    steps = [json.loads(line) for line in (out / "steps.jsonl").read_text().splitlines()]
    assert [s["step"] for s in steps] == [0, 1] and steps[1]["accepted"] == state["current_hash"]
    assert all(s["calls"] >= s["cached_calls"] for s in steps) and steps[1]["prompt_tokens"] > 0
    assert GOOD in (out / "best.diff").read_text()
    # The best prompt set is a --prompts folder for an ordinary run.
    best = out / state["best_dir"]
    assert (out / "best").resolve() == best.resolve()  # the README's OUT/best
    with FakeOpenAI(model) as fake:
        run = in_process(capsys, "run", "-d", "prontoqa", "--data-dir", str(data_dir), "--model", "fake", "--base-url", fake.url,
                  "--prompts", str(best), "--limit", "4", "--out", str(tmp_path / "run"), "--llm-cache",
                  str(tmp_path / "run-cache.sqlite"))
        assert run.returncode == 0, run.stderr
        formulate = [r for r in fake.requests if r["_logicpipe"]["purpose"] == "formulate"]
        assert len(formulate) == 4 and all(GOOD in r["messages"][0]["content"] for r in formulate)
    metrics = json.loads((tmp_path / "run" / "prontoqa" / "metrics.json").read_text())
    assert metrics["accuracy"] == 100.0


def test_budget_spent_before_the_start_is_validated_stops_with_one_line(scripted, data_dir, tmp_path, capsys):
    model = scripted(rewrites={"principles": [f"- {GOOD}"]})
    out = tmp_path / "out"
    with FakeOpenAI(model) as fake:
        # The pipeline itself is held to the budget: 5 of the 8 validation programs are asked for.
        stopped = in_process(capsys, *optimize_args(fake, data_dir, out, "--max-calls", "5", "--steps", "0"))
        assert stopped.returncode == 4
        lines = stopped.stderr.strip().splitlines()
        assert lines[-1].startswith("error: --max-calls 5 reached") and "before the start prompts" in lines[-1]
        assert len(fake.requests) == 5 and not (out / "state.json").exists()
        again = in_process(capsys, *optimize_args(fake, data_dir, out, "--steps", "0"))
        assert again.returncode == 0, again.stderr
        # The 3 programs not asked for before, nothing twice, and the 4 test problems.
        assert len(fake.requests) == 8 + 4
    assert json.loads((out / "state.json").read_text())["step"] == 0


def test_max_cost_stops_between_requests(scripted, data_dir, tmp_path, capsys):
    model = scripted(rewrites={"principles": [f"- {GOOD}"]})
    out = tmp_path / "out"
    with FakeOpenAI(model) as fake:
        # Step 0's 8 validation programs cost about 0.04 at these prices: they go (one alone first, to price a
        # request), and nothing is sent after them.
        stopped = in_process(capsys, *optimize_args(fake, data_dir, out, "--max-cost", "0.04", "--price-prompt",
                                                    "2.5", "--price-completion", "10"))
        assert stopped.returncode == 4, stopped.stderr
        assert "stopped early: --max-cost 0.04 reached" in stopped.stderr
        assert len(fake.requests) >= 8 + 4  # and the 4 test problems, outside the budget
    steps = [json.loads(line) for line in (out / "steps.jsonl").read_text().splitlines()]
    assert [s["step"] for s in steps] == [0] and steps[0]["cost"] < 0.04
    # Passed by about one request (those in flight count at the mean so far, about 0.0045), not by a window.
    spent = float(re.search(r"--max-cost 0.04 reached \(spent ([0-9.]+)\)", stopped.stderr).group(1))
    assert 0.04 <= spent < 0.05
    assert (out / "report.md").is_file()
