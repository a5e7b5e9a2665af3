"""--epochs N against the scripted server: each epoch is its own request (a distinct sampling seed, so
its own reply-cache entry), a re-run asks nothing anew, the first epoch's records are byte for byte a
run's without --epochs, and the summary's mean and clustered standard error are core/stats.py's on the
epochs' evaluate records."""

from __future__ import annotations

import json
from collections import Counter

from logicpipe.core import stats
from logicpipe.testing import FakeOpenAI, ScriptedReplies
from tests.conftest import cli

IDS = ["ProntoQA_1", "ProntoQA_2", "ProntoQA_3"]


def _run(fake, data_dir, out, ids, *extra):
    return cli("run", "-d", "prontoqa", "--data-dir", str(data_dir), "--ids", str(ids), "--model", "scripted",
               "--base-url", fake.url, "--temperature", "0.7", "--max-rounds", "0", "--llm-cache",
               str(out) + ".sqlite", "--out", str(out), *extra)


def test_three_epochs_ask_three_distinct_requests_per_problem_once(data_dir, tmp_path):
    ids = tmp_path / "ids.txt"
    ids.write_text("\n".join(IDS) + "\n")
    programs = data_dir / "programs" / "ProntoQA_dev_gpt-4.json"
    with FakeOpenAI(ScriptedReplies.from_logic_lm(programs)) as fake:
        done = _run(fake, data_dir, tmp_path / "epochs", ids, "--epochs", "3")
        assert done.returncode == 0, done.stderr
        first = list(fake.requests)
        again = _run(fake, data_dir, tmp_path / "epochs", ids, "--epochs", "3")
        assert again.returncode == 0, again.stderr
        assert len(fake.requests) == len(first)  # a re-run pays for nothing
        fake.requests.clear()
        plain = _run(fake, data_dir, tmp_path / "plain", ids)
        assert plain.returncode == 0, plain.stderr
        plain_requests = list(fake.requests)
    per_problem = Counter(body["_logicpipe"]["problem"] for body in first)
    assert per_problem == {pid: 3 for pid in IDS}
    for pid in IDS:
        bodies = [{k: v for k, v in body.items() if k != "_logicpipe"} for body in first
                  if body["_logicpipe"]["problem"] == pid]
        assert len({json.dumps(body, sort_keys=True) for body in bodies}) == 3  # three distinct requests
        assert sorted(str(body.get("seed")) for body in bodies) == ["2", "3", "None"]
    # epoch 1 is the run without --epochs: the same requests, and the same records byte for byte
    assert sorted(json.dumps(b, sort_keys=True) for b in plain_requests) == \
        sorted(json.dumps(b, sort_keys=True) for b in first if "seed" not in b)
    for name in ("formulate.jsonl", "interpret.jsonl", "evaluate.jsonl", "run.json"):
        assert (tmp_path / "epochs" / "prontoqa" / name).read_bytes() == (tmp_path / "plain" / "prontoqa" / name).read_bytes(), name

    def untimed(folder):  # a solver's seconds differ from run to run; nothing else may
        return [{k: v for k, v in json.loads(line).items() if k != "seconds"}
                for line in (folder / "prontoqa" / "solve.jsonl").read_text().splitlines()]

    assert untimed(tmp_path / "epochs") == untimed(tmp_path / "plain")
    for k in (2, 3):
        identity = json.loads((tmp_path / "epochs" / f"epoch-{k}" / "prontoqa" / "run.json").read_text())
        assert identity["stages"]["formulate"]["seed"] == k
    # the summary: mean accuracy and its standard error clustered by problem, from the epochs' records
    summary = json.loads((tmp_path / "epochs" / "epochs-prontoqa.json").read_text())
    folders = [tmp_path / "epochs" / "prontoqa", *(tmp_path / "epochs" / f"epoch-{k}" / "prontoqa" for k in (2, 3))]
    scores, clusters = [], []
    for folder in folders:
        for line in (folder / "evaluate.jsonl").read_text().splitlines():
            record = json.loads(line)
            scores.append(float(record["correct"]))
            clusters.append(record["id"])
    assert summary["epochs"] == 3 and summary["problems"] == 3
    assert summary["mean_accuracy"] == round(100 * sum(scores) / len(scores), 2)
    assert summary["stderr_clustered"] == round(100 * stats.clustered_stderr(scores, clusters), 2)
    assert sum(summary["right_in"].values()) == 3
    assert f"3 epochs over 3 problems: mean accuracy {summary['mean_accuracy']:.2f}%" in done.stdout
    # as data frames: one row per problem and epoch
    from logicpipe import problem_rows

    rows = problem_rows(tmp_path / "epochs")
    assert Counter(row["epoch"] for row in rows) == {1: 3, 2: 3, 3: 3}


def test_epochs_need_a_model_sampled_at_a_temperature(data_dir, tmp_path):
    programs = data_dir / "programs" / "ProntoQA_dev_gpt-4.json"
    replay = cli("run", "-d", "prontoqa", "--data-dir", str(data_dir), "--programs", str(programs), "--epochs", "2",
                 "--out", str(tmp_path))
    assert replay.returncode == 2 and "--epochs above 1 needs --model and --temperature above 0" in replay.stderr
    cold = cli("baseline", "-d", "prontoqa", "--data-dir", str(data_dir), "--model", "m", "--base-url",
               "http://127.0.0.1:9/v1", "--epochs", "2", "--out", str(tmp_path))
    assert cold.returncode == 2 and "--temperature above 0" in cold.stderr
    assert not any(tmp_path.iterdir())


def test_a_baselines_epochs(data_dir, tmp_path):
    ids = tmp_path / "ids.txt"
    ids.write_text("\n".join(IDS) + "\n")
    programs = data_dir / "programs" / "ProntoQA_dev_gpt-4.json"
    with FakeOpenAI(ScriptedReplies.from_logic_lm(programs)) as fake:
        done = cli("baseline", "--mode", "standard", "-d", "prontoqa", "--data-dir", str(data_dir), "--ids", str(ids),
                   "--model", "scripted", "--base-url", fake.url, "--temperature", "0.5", "--epochs", "2",
                   "--out", str(tmp_path / "out"))
        assert done.returncode == 0, done.stderr
        seeds = Counter((body["_logicpipe"]["problem"], body.get("seed")) for body in fake.requests)
    assert seeds == {(pid, seed): 1 for pid in IDS for seed in (None, 2)}
    summary = json.loads((tmp_path / "out" / "baseline-standard" / "epochs-prontoqa.json").read_text())
    assert summary["epochs"] == 2 and summary["problems"] == 3
    assert summary["folders"][1] == str(tmp_path / "out" / "epoch-2" / "baseline-standard" / "prontoqa")
