"""`logicpipe status RUN` through the CLI, held against the scripted provider's own record of its
batches (their ids and statuses) and the run's metrics.json."""

import json

from logicpipe.testing import FakeOpenAI
from tests.conftest import cli
from tests.llm.test_batch_api import common, replies


def status(*args):
    done = cli("status", *args)
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
        assert out["id"] in shown and "1 batches not read yet: a run going on polls them; else re-run" in shown
        # --refresh asks the provider, and writes nothing.
        before = (run_dir / "prontoqa" / "batches.json").read_text()
        fake.batch_delay = 0.1
        [fresh] = json.loads(status(str(run_dir), "--json", "--refresh", "--base-url", fake.url))
        assert fresh["batches"][0]["status"] == out["status"] == "completed"
        assert (run_dir / "prontoqa" / "batches.json").read_text() == before
        again = cli(*args)
        assert again.returncode == 0, again.stderr
    [folder] = json.loads(status(str(run_dir), "--json"))
    metrics = json.loads((run_dir / "prontoqa" / "metrics.json").read_text())
    assert folder["pending"] == 0 and folder["finished"] and folder["accuracy"] == metrics["accuracy"]
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
        assert cli(*args).returncode == 0
    [folder] = json.loads(status(str(out), "--json"))
    assert folder["pending"] == 0 and folder["stages"] == {"ask": 3} and folder["problems"] == 3
