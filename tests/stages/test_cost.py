"""Cost where people look: per-problem tokens and cost in evaluate.jsonl, the totals (per problem, per
correct answer) and gold_agreement in the summary, tokens and cost in `status` and the viewer; through
the CLI against the local OpenAI-compatible server serving Logic-LM's released FOLIO programs."""

import json
import os

import pytest

from logicpipe.testing import FakeOpenAI, ScriptedReplies
from tests.conftest import cli
from tests.report.viewer.pages import by_id, payload


@pytest.fixture(scope="module")
def priced(data_dir, tmp_path_factory):
    out = tmp_path_factory.mktemp("priced")
    replies = ScriptedReplies.from_logic_lm(data_dir / "programs" / "FOLIO_dev_gpt-4.json")
    env = {"COLUMNS": "250", "LOGICPIPE_DATASETS": os.environ.get("LOGICPIPE_DATASETS", "")}
    with FakeOpenAI(replies) as fake:
        done = cli("run", "-d", "folio", "-n", "4", "--data-dir", str(data_dir), "--out", str(out), "--model", "fake",
                   "--base-url", fake.url, "--price-prompt", "2", "--price-completion", "10", "--max-rounds", "0",
                   "--llm-cache", str(out / "cache.sqlite"), env=env)
    assert done.returncode == 0, done.stderr
    return out, done


def test_each_problem_carries_its_tokens_and_cost_and_the_summary_adds_them_up(priced):
    out, done = priced
    folder = out / "folio"
    formulated = {r["id"]: r["usage"] for r in map(json.loads, (folder / "formulate.jsonl").read_text().splitlines())}
    evaluated = [json.loads(line) for line in (folder / "evaluate.jsonl").read_text().splitlines()]
    for record in evaluated:  # the one model call per problem (no refinement, no model backup)
        usage = formulated[record["id"]]
        assert record["tokens"] == usage["prompt_tokens"] + usage["completion_tokens"]
        assert record["cost"] == pytest.approx((2 * usage["prompt_tokens"] + 10 * usage["completion_tokens"]) / 1e6)
    metrics = json.loads((folder / "metrics.json").read_text())
    assert metrics["cost"] == pytest.approx(sum(r["cost"] for r in evaluated), abs=1e-6)
    assert metrics["cost_per_problem"] == pytest.approx(metrics["cost"] / 4)
    assert metrics["cost_per_correct"] == pytest.approx(metrics["cost"] / metrics["correct"])
    [line] = [line for line in done.stdout.splitlines() if line.startswith("tokens: ")]
    tokens = metrics["tokens"]
    assert line.startswith(f"tokens: {tokens['prompt_tokens']:,} prompt + {tokens['completion_tokens']:,} completion "
                           "in 4 calls (0 from the reply cache); cost: $")
    assert f"${metrics['cost_per_problem']:.6g} per problem, ${metrics['cost_per_correct']:.6g} per correct answer" in line
    held = metrics["gold_agreement"]
    assert (f"gold programs: the run's verdict agrees with the gold program's on {held['agree']} of "
            f"{held['compared']} problems where both proved an option") in done.stdout


def test_status_and_the_viewer_show_tokens_and_cost(priced, tmp_path):
    out, _ = priced
    metrics = json.loads((out / "folio" / "metrics.json").read_text())
    done = cli("status", str(out))
    assert done.returncode == 0, done.stderr
    tokens = metrics["tokens"]["prompt_tokens"] + metrics["tokens"]["completion_tokens"]
    assert f"{tokens:,} tokens, cost ${metrics['cost']:.6g}" in done.stdout + done.stderr
    [folder] = json.loads(cli("status", str(out), "--json").stdout)
    assert (folder["tokens"], folder["cost"]) == (tokens, metrics["cost"])
    page = tmp_path / "page.html"
    assert cli("view", str(out), "--out", str(page)).returncode == 0
    html = page.read_text()
    assert f"<td>${metrics['cost']:.6g}</td><td>${metrics['cost_per_correct']:.6g}</td>" in html
    first = json.loads((out / "folio" / "evaluate.jsonl").read_text().splitlines()[0])
    shown = by_id(payload(html)["problems"], first["id"])
    assert (shown["tokens"], shown["cost"]) == (first["tokens"], first["cost"])
