"""`logicpipe status RUN` through the CLI, held against the scripted provider's own record of its
batches (their ids and statuses) and the run's metrics.json."""

import json

from logicpipe.testing import FakeOpenAI
from tests.conftest import cli
from tests.llm.test_batch_api import common, replies

# No key and no OPENAI_BASE_URL: what --refresh asks, it asks where the run recorded.
NO_PROVIDER = {"OPENAI_API_KEY": "", "OPENAI_BASE_URL": ""}


def status(*args, env=None):
    done = cli("status", *args, env=env)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_status_shows_the_batches_still_out_and_then_the_finished_run(data_dir, tmp_path):
    run_dir = tmp_path / "run"
    with FakeOpenAI(replies(data_dir), batch_delay=60) as fake:
        args = [*common(data_dir, fake, tmp_path, "run", limit=3), "--batch", "--batch-poll", "0.2"]
        late = cli(*args, "--batch-timeout", "1")
        assert late.returncode == 4, late.stderr
        out = fake.batches[0]["batch"]
        [folder] = json.loads(status(str(run_dir), "--json"))
        assert folder["pending"] == 1 and folder["problems"] == 0 and not folder["finished"]
        [batch] = folder["batches"]
        assert (batch["id"], batch["lines"], batch["read"]) == (out["id"], 3, False)
        assert batch["status"] in ("validating", "in_progress")  # as the command last polled it
        # Given the dataset folder itself, its batches/ folder of request files is not taken for a run.
        [itself] = json.loads(status(str(run_dir / "prontoqa"), "--json"))
        assert itself["dataset"] == "prontoqa" and itself["pending"] == 1
        shown = status(str(run_dir))
        assert out["id"] in shown and "1 batch not read yet: a run going on polls them; else re-run" in shown
        # --refresh asks the provider, and writes nothing.
        before = (run_dir / "prontoqa" / "batches.json").read_text()
        fake.batch_delay = 0.1
        [fresh] = json.loads(status(str(run_dir), "--json", "--refresh", "--base-url", fake.url))
        assert fresh["batches"][0]["status"] == out["status"] == "completed"
        # Without --base-url (and no key, no OPENAI_BASE_URL), it asks the one run.json recorded.
        [fresh] = json.loads(status(str(run_dir), "--json", "--refresh", env=NO_PROVIDER))
        assert fresh["batches"][0]["status"] == "completed" and not fresh["warnings"]
        assert (run_dir / "prontoqa" / "batches.json").read_text() == before
        again = cli(*args)
        assert again.returncode == 0, again.stderr
    [folder] = json.loads(status(str(run_dir), "--json"))
    metrics = json.loads((run_dir / "prontoqa" / "metrics.json").read_text())
    assert folder["pending"] == 0 and folder["finished"] and folder["accuracy"] == metrics["accuracy"]
    assert folder["accuracy_ci"] == metrics["accuracy_ci"] and folder["total"] == metrics["total"] == 3
    low, high = metrics["accuracy_ci"]
    assert f"finished, accuracy {metrics['accuracy']:.2f}% [{low:.1f}, {high:.1f}] (n=3)" in status(str(run_dir))
    assert folder["stages"] == {"formulate": 3, "solve": 3, "interpret": 3, "evaluate": 3}
    assert (folder["batches"][0]["stored"], folder["batches"][0]["failed"]) == (3, 0)
    assert "0 not read yet" in status(str(run_dir)) and "not read yet: re-run" not in status(str(run_dir))


def test_status_of_a_folder_that_is_no_run_is_one_line(tmp_path):
    done = cli("status", str(tmp_path / "nothing"))
    assert done.returncode == 2 and done.stderr == f"error: run directory {tmp_path / 'nothing'} not found\n"
    (tmp_path / "empty").mkdir()
    done = cli("status", str(tmp_path / "empty"), "--dataset", "prontoqa")
    assert done.returncode == 2 and done.stderr.count("\n") == 1 and "holds no run records" in done.stderr


def test_status_of_a_kb_batch_counts_its_records_and_its_batches(tmp_path):
    from tests.kb.test_batch import write_questions
    from tests.kb.test_modes import CAMPUS, NOW, replies

    ids = [f"q01-{n}" for n in range(3)]
    questions = write_questions(tmp_path / "q.jsonl", ids)
    out = tmp_path / "kb"
    with FakeOpenAI(replies(), batch_delay=60) as server:
        args = ["kb", "ask", str(CAMPUS), "--questions", str(questions), "--out", str(out), *NOW, "--model", "fake",
                "--base-url", server.url, "--llm-cache", str(tmp_path / "c.sqlite"), "--batch", "--batch-poll", "0.2"]
        late = cli(*args, "--batch-timeout", "1")
        assert late.returncode == 4, late.stderr
        [folder] = json.loads(status(str(out), "--json"))
        assert folder["pending"] == 1 and folder["batches"][0]["id"] == server.batches[0]["batch"]["id"]
        server.batch_delay = 0.1
        # --refresh without --base-url asks where the kb batch recorded (run.json's stages.ask).
        [fresh] = json.loads(status(str(out), "--json", "--refresh", env=NO_PROVIDER))
        assert fresh["batches"][0]["status"] == "completed" and not fresh["warnings"]
        assert cli(*args).returncode == 0
    [folder] = json.loads(status(str(out), "--json"))
    assert folder["pending"] == 0 and folder["stages"] == {"ask": 3} and folder["problems"] == 3
    # A kb batch writes no metrics.json: whether it finished is not known, and the text says only its records.
    assert folder["finished"] is None
    [line] = [line for line in status(str(out)).splitlines() if line.startswith("kb:")]
    used = [json.loads(record)["usage"] for record in (out / "ask.jsonl").read_text().splitlines()]
    tokens = sum(u["prompt_tokens"] + u["completion_tokens"] for u in used)
    assert line == f"kb: 3 problems with records (ask 3); {tokens:,} tokens" and folder["tokens"] == tokens


def test_status_finds_the_runs_of_compare_and_baseline_and_asks_each_its_provider(data_dir, tmp_path):
    """compare writes OUT/<formalism>/<dataset>/, baseline OUT/baseline-<mode>/<dataset>/; here each
    through its own provider, so that --refresh must ask each where its run went."""
    out = tmp_path / "out"

    def batch(command, fake, *more):
        done = cli(command, *more, "-d", "prontoqa", "--limit", "2", "--data-dir", str(data_dir), "--out", str(out),
                   "--model", "fake-gpt", "--base-url", fake.url, "--llm-cache", str(tmp_path / "c.sqlite"),
                   "--batch", "--batch-poll", "0.2", "--batch-timeout", "1")
        assert done.returncode == 4, done.stderr  # its batch still out

    with FakeOpenAI(replies(data_dir), batch_delay=60) as lp, FakeOpenAI(replies(data_dir), batch_delay=60) as cot:
        batch("compare", lp, "--formalisms", "lp")
        batch("baseline", cot, "--mode", "cot")
        folders = json.loads(status(str(out), "--json"))
        assert [(f["label"], f["dataset"], f["pending"], f["finished"]) for f in folders] == [
            ("baseline-cot/prontoqa", "prontoqa", 1, False), ("lp/prontoqa", "prontoqa", 1, False)]
        shown = status(str(out))
        assert "baseline-cot/prontoqa: 0 problems with records" in shown and "lp/prontoqa: 0 problems" in shown
        # --dataset picks by the dataset folder's name; one that is not there is one line naming those that are.
        assert len(json.loads(status(str(out), "--json", "--dataset", "prontoqa"))) == 2
        wrong = cli("status", str(out), "--dataset", "folio")
        assert wrong.returncode == 2 and wrong.stderr == f"error: no dataset 'folio' in {out} (it has: prontoqa)\n"
        # --refresh: each folder's batch is asked of its own provider (both are batch_1 there).
        lp.batch_delay, cot.batch_delay = 0.1, 1000
        fresh = {f["label"]: f for f in json.loads(status(str(out), "--json", "--refresh", env=NO_PROVIDER))}
        assert fresh["lp/prontoqa"]["batches"][0]["status"] == "completed"
        assert fresh["baseline-cot/prontoqa"]["batches"][0]["status"] in ("validating", "in_progress")
        assert not fresh["lp/prontoqa"]["warnings"] and not fresh["baseline-cot/prontoqa"]["warnings"]
    # Run folders are found at any depth (stages/store.py find_runs, the rule every command shares).
    (tmp_path / "deep" / "a").mkdir(parents=True)
    (out / "lp").rename(tmp_path / "deep" / "a" / "lp")
    [folder] = json.loads(status(str(tmp_path / "deep"), "--json"))
    assert folder["label"] == "a/lp/prontoqa" and folder["pending"] == 1
    (tmp_path / "deeper").mkdir()
    (tmp_path / "deep").rename(tmp_path / "deeper" / "deep")
    [folder] = json.loads(status(str(tmp_path / "deeper"), "--json"))
    assert folder["label"] == "deep/a/lp/prontoqa" and folder["pending"] == 1
    (tmp_path / "empty" / "a" / "b" / "c").mkdir(parents=True)
    done = cli("status", str(tmp_path / "empty"))
    assert done.returncode == 2 and done.stderr.count("\n") == 1 and "holds no run records" in done.stderr
