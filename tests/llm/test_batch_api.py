"""--batch, through the CLI and the openai client against the scripted server's batch API (/v1/files,
/v1/batches): the same records as a synchronous run, each batch created once even across a kill while
polling, a failed line retried in the next batch, an expired batch's unfinished lines only resubmitted."""

import json
import os
import signal
import subprocess
import sys
import time

from logicpipe.testing import FakeOpenAI, ScriptedReplies
from tests.conftest import ROOT, cli

PROGRAMS = "ProntoQA_dev_gpt-4.json"
MARK = "@@@ broken line"


def replies(data_dir, broken=(), unfixable=()):
    """The released programs, with a line that does not parse added to those of `broken` (refinement
    repairs them) and of `unfixable` (refinement answers with no program, so every round asks again)."""
    scripted = ScriptedReplies.from_logic_lm(data_dir / "programs" / PROGRAMS)
    for problem in (*broken, *unfixable):
        lines = scripted.programs[problem][0].splitlines()
        scripted.programs[problem] = ["\n".join(lines[:-1] + [MARK if problem in broken else "@@@ unfixable", lines[-1]])]
    scripted.repairs = {MARK: "\n".join(line for line in scripted.programs[broken[0]][0].splitlines() if line != MARK)} \
        if broken else {}
    return scripted


def common(data_dir, fake, tmp_path, name, limit=12, rounds=0):
    return ["run", "-d", "prontoqa", "--data-dir", str(data_dir), "--model", "fake-gpt", "--limit", str(limit),
            "--max-rounds", str(rounds), "--base-url", fake.url, "--llm-cache", str(tmp_path / f"{name}.sqlite"),
            "--out", str(tmp_path / name)]


def records(folder, stage):
    return {r["id"]: r for r in map(json.loads, (folder / f"{stage}.jsonl").read_text().splitlines())}


def lines_of(fake):
    return [identifier for batch in fake.batches for identifier in batch["custom_ids"]]


def test_a_batch_run_with_refinement_gives_the_synchronous_runs_records(data_dir, tmp_path):
    scripted = replies(data_dir, broken=("ProntoQA_2",), unfixable=("ProntoQA_5",))
    with FakeOpenAI(scripted, batch_delay=0.3) as fake:
        prices = ["--price-prompt", "1", "--price-completion", "2"]
        sync = cli(*common(data_dir, fake, tmp_path, "sync", rounds=2), *prices)
        assert sync.returncode == 0, sync.stderr
        asked = len(fake.requests)
        batch = cli(*common(data_dir, fake, tmp_path, "batch", rounds=2), *prices, "--batch", "--batch-poll", "0.2")
        assert batch.returncode == 0, batch.stderr
        assert len(fake.requests) == asked  # nothing sent one by one
    # formulate (12 lines), refinement round 1 (both broken programs), round 2 (the one still broken)
    sizes = [len(b["custom_ids"]) for b in fake.batches]
    assert sizes == [12, 2, 1], sizes
    assert len(set(lines_of(fake))) == len(lines_of(fake)) == asked  # each request once, as the sync run asked
    assert [i.split(":")[:2] for i in fake.batches[2]["custom_ids"]] == [["ProntoQA_5", "refine"]]
    for stage in ("formulate", "solve", "solve-1", "solve-2", "interpret"):
        ours, theirs = records(tmp_path / "batch" / "prontoqa", stage), records(tmp_path / "sync" / "prontoqa", stage)
        assert ours.keys() == theirs.keys(), stage
        for key in ours:
            for field in ("program", "answer", "verdict", "predicted", "final", "correct", "error", "round"):
                assert ours[key].get(field) == theirs[key].get(field), (stage, key, field)
    metrics = [json.loads((tmp_path / run / "prontoqa" / "metrics.json").read_text()) for run in ("batch", "sync")]
    # The batch run's cost also at the batch price (--batch-discount, 0.5 by default); the sync run has none.
    assert metrics[0].pop("batch_cost") == round(metrics[0]["cost"] * 0.5, 6) > 0 and "batch_cost" not in metrics[1]
    # Every reply came through the batches, none from the cache; the sync run sent each on its own.
    calls = metrics[0]["tokens"]["calls"]
    assert [m["tokens"]["batch_calls"] for m in metrics] == [calls, 0], metrics
    assert [m["tokens"]["cached_calls"] for m in metrics] == [0, 0], metrics
    # What the batches cost is in the folder's ledger, which a later run under a spending cap counts.
    ledger = json.loads((tmp_path / "batch" / "prontoqa" / "spent.json").read_text())
    assert (ledger["sent"], ledger["prompt_tokens"], ledger["completion_tokens"]) == \
        (calls, metrics[0]["tokens"]["prompt_tokens"], metrics[0]["tokens"]["completion_tokens"])
    for figures in metrics:
        figures["tokens"].pop("batch_calls")
        figures.pop("source")
    assert metrics[0] == metrics[1]
    assert metrics[0]["refinement_rounds"] == 2 and metrics[0]["exe_rate_before_refinement"] < metrics[0]["exe_rate"]
    recorded = json.loads((tmp_path / "batch" / "prontoqa" / "batches.json").read_text())["batches"]
    assert [b["id"] for b in recorded] == [b["batch"]["id"] for b in fake.batches]
    assert all(b["status"] == "completed" and b["read"] for b in recorded)


def test_a_run_killed_while_polling_resumes_its_batches_and_submits_none_again(data_dir, tmp_path):
    with FakeOpenAI(replies(data_dir), batch_delay=4.0) as fake:
        args = [*common(data_dir, fake, tmp_path, "run"), "--batch", "--batch-poll", "0.2"]
        process = subprocess.Popen([sys.executable, "-m", "logicpipe", *args], cwd=ROOT, env=dict(os.environ),
                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        record = tmp_path / "run" / "prontoqa" / "batches.json"
        deadline = time.monotonic() + 60
        while not created(record) and time.monotonic() < deadline and process.poll() is None:
            time.sleep(0.05)
        assert created(record) and process.poll() is None  # created, and still polling
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=30)
        assert len(fake.batches) == 1 and fake.batches[0]["batch"]["status"] != "completed"
        again = cli(*args)
        assert again.returncode == 0, again.stderr
        assert len(fake.batches) == 1  # the re-run polled the batch the killed run created
        assert len(fake.requests) == 0
    done = records(tmp_path / "run" / "prontoqa", "formulate")
    assert len(done) == 12 and all(r["error"] is None for r in done.values())


def created(record):
    """Whether batches.json names a batch by its id (it is recorded before, without one)."""
    try:
        return any(b["id"] for b in json.loads(record.read_text())["batches"])
    except (OSError, ValueError):
        return False


def test_ctrl_c_while_polling_stops_at_once_and_a_re_run_collects_the_batch(data_dir, tmp_path):
    """formulate polls from a thread of its own (the solver takes its programs as they come): Ctrl-C
    stops that polling too, rather than wait for the batch (up to --batch-timeout, a day)."""
    with FakeOpenAI(replies(data_dir), batch_delay=60) as fake:
        args = [*common(data_dir, fake, tmp_path, "run", limit=3), "--batch", "--batch-poll", "0.2"]
        # Python turns SIGINT into KeyboardInterrupt unless the parent ignores it (a test runner may).
        process = subprocess.Popen([sys.executable, "-m", "logicpipe", *args], cwd=ROOT, env=dict(os.environ),
                                   stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                                   preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
        record = tmp_path / "run" / "prontoqa" / "batches.json"
        deadline = time.monotonic() + 60
        while not created(record) and time.monotonic() < deadline and process.poll() is None:
            time.sleep(0.05)
        process.send_signal(signal.SIGINT)
        start = time.monotonic()
        _, stderr = process.communicate(timeout=60)
        assert process.returncode == 130 and time.monotonic() - start < 10, (process.returncode, stderr)
        assert stderr.strip().splitlines()[-1] == "error: interrupted; finished records are kept, re-run to resume"
        fake.batch_delay = 0.1
        again = cli(*args)
        assert again.returncode == 0, again.stderr
        assert len(fake.batches) == 1 and not fake.requests


def test_a_kill_while_a_batch_is_created_finds_it_by_its_input_file(data_dir, tmp_path):
    """Killed after the provider created the batch and before its id was written: the re-run looks it
    up by its input file and polls it; none is created twice."""
    with FakeOpenAI(replies(data_dir), batch_delay=0.5, create_delay=30) as fake:
        args = [*common(data_dir, fake, tmp_path, "run"), "--batch", "--batch-poll", "0.2"]
        process = subprocess.Popen([sys.executable, "-m", "logicpipe", *args], cwd=ROOT, env=dict(os.environ),
                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 60
        while not fake.batches and time.monotonic() < deadline and process.poll() is None:
            time.sleep(0.05)
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=30)
        record = tmp_path / "run" / "prontoqa" / "batches.json"
        assert len(fake.batches) == 1 and not created(record)  # made by the provider, its id unknown here
        fake.create_delay = 0
        again = cli(*args)
        assert again.returncode == 0, again.stderr
        assert len(fake.batches) == 1 and len(fake.requests) == 0
        assert [b["id"] for b in json.loads(record.read_text())["batches"]] == [fake.batches[0]["batch"]["id"]]
    assert len(records(tmp_path / "run" / "prontoqa", "formulate")) == 12


def test_a_create_that_failed_is_made_from_the_uploaded_file_on_the_re_run(data_dir, tmp_path):
    with FakeOpenAI(replies(data_dir, ), batch_delay=0.2) as fake:
        fake.create_errors = 1
        args = [*common(data_dir, fake, tmp_path, "run", limit=3), "--batch", "--batch-poll", "0.2"]
        failed = cli(*args)
        assert failed.returncode != 0 and "creating the batch: HTTP 500" in failed.stderr, failed.stderr
        assert not fake.batches and len(fake.files) == 1
        again = cli(*args)
        assert again.returncode == 0, again.stderr
        # Not uploaded again: the batch is made from the file the first command uploaded.
        assert len(fake.batches) == 1 and len(fake.files) == 2 and fake.batches[0]["batch"]["input_file_id"] == "file-1"
    assert len(records(tmp_path / "run" / "prontoqa", "interpret")) == 3


def test_a_failed_line_goes_in_the_next_batch_and_an_expired_batch_resubmits_its_unfinished_lines(data_dir, tmp_path):
    with FakeOpenAI(replies(data_dir), batch_delay=0.2) as fake:
        fake.line_errors = {"ProntoQA_3": 1}
        once = cli(*common(data_dir, fake, tmp_path, "once"), "--batch", "--batch-poll", "0.2")
        assert once.returncode == 0, once.stderr
        assert [[i.split(":")[0] for i in b["custom_ids"]] for b in fake.batches][1:] == [["ProntoQA_3"]]
        assert all(r["error"] is None for r in records(tmp_path / "once" / "prontoqa", "formulate").values())

        # A line that fails in every batch it may go in: a typed, transient model error record.
        before = len(fake.batches)
        fake.line_errors = {"ProntoQA_4": 99}
        always = cli(*common(data_dir, fake, tmp_path, "always"), "--batch", "--batch-poll", "0.2", "--max-retries", "1")
        assert always.returncode == 0, always.stderr
        assert [len(b["custom_ids"]) for b in fake.batches[before:]] == [12, 1]  # the first, one retry
        failed = records(tmp_path / "always" / "prontoqa", "formulate")["ProntoQA_4"]
        assert failed["error"]["category"] == "llm" and "failed in each batch" in failed["error"]["message"]
        assert "injected line error" in failed["error"]["message"]

        # An expired batch: half its lines ran; only the other half is submitted again.
        before = len(fake.batches)
        fake.line_errors = {}
        fake.batch_fates.append("expired")
        expired = cli(*common(data_dir, fake, tmp_path, "expired"), "--batch", "--batch-poll", "0.2")
        assert expired.returncode == 0, expired.stderr
        ran = fake.batches[before:]
        assert [b["batch"]["status"] for b in ran] == ["expired", "completed"]
        assert ran[1]["custom_ids"] == ran[0]["custom_ids"][6:]
        assert len(fake.requests) == 0
    assert all(r["error"] is None for r in records(tmp_path / "expired" / "prontoqa", "formulate").values())


def test_batch_size_splits_a_round_and_bad_batch_options_are_one_line(data_dir, tmp_path):
    with FakeOpenAI(replies(data_dir), batch_delay=0.2) as fake:
        split = cli(*common(data_dir, fake, tmp_path, "split", limit=5), "--batch", "--batch-size", "2",
                    "--batch-poll", "0.2")
        assert split.returncode == 0, split.stderr
        assert [len(b["custom_ids"]) for b in fake.batches] == [2, 2, 1]
        base = common(data_dir, fake, tmp_path, "bad")
        for extra, said in ((["--batch-export", str(tmp_path / "r.jsonl")], "give one or the other"),
                            (["--max-tokens-total", "10"], "give one or the other"),
                            (["--batch-size", "50001"], "--batch-size"),
                            (["--batch-poll", "0"], "--batch-poll")):
            bad = cli(*base, "--batch", *extra)
            assert bad.returncode == 2 and said in bad.stderr, (extra, bad.stderr)
            assert len(bad.stderr.strip().splitlines()) == 1, bad.stderr
        # Phased constrained decoding (CSP, SMT) needs each phase's reply before the next: refused before
        # run.json is written, which would otherwise hold the corrected command back.
        phased = [*base, "-d", "logicaldeduction", "--constrain"]
        for extra, option in ((["--batch"], "--batch"), (["--batch-export", str(tmp_path / "r.jsonl")], "--batch-export")):
            bad = cli(*phased, *extra)
            assert bad.returncode == 2 and bad.stderr == (
                f"error: {option}: constrained decoding in phases (--constrain on csp) needs each phase's reply "
                "before the next request; run it without a batch\n"), bad.stderr
        replay = cli(*[a for a in base if a not in ("--model", "fake-gpt")], "--programs", str(
            data_dir / "programs" / PROGRAMS), "--batch")
        assert replay.returncode == 2 and replay.stderr == "error: invalid option: --batch sends model requests: give --model\n", \
            replay.stderr
    assert not (tmp_path / "bad").exists()


def test_batches_running_at_the_timeout_stop_the_run_and_a_re_run_polls_them(data_dir, tmp_path):
    with FakeOpenAI(replies(data_dir), batch_delay=60) as fake:
        args = [*common(data_dir, fake, tmp_path, "run", limit=3), "--batch", "--batch-poll", "0.2"]
        late = cli(*args, "--batch-timeout", "1")
        assert late.returncode == 4, late.stderr
        assert "--batch: 1 batch still running after --batch-timeout 1 s" in late.stderr
        assert "3 of 3 requests not answered yet (submitted in batches); finished records are kept" in late.stderr
        # Without --batch, the same requests would be paid for again, one by one: refused in one line.
        record = tmp_path / "run" / "prontoqa" / "batches.json"
        for extra in ([], ["--overwrite"]):
            alone = cli(*[a for a in args if a not in ("--batch", "--batch-poll", "0.2")], *extra)
            assert alone.returncode == 2 and alone.stderr == (
                f"error: {record} names 1 batch not read yet (paid for, perhaps still running): re-run with --batch "
                f"to collect them, nothing is submitted twice (to pay for their requests again one by one, remove "
                f"{record})\n"), alone.stderr
        assert len(fake.requests) == 0
        fake.batch_delay = 0.1  # the provider finishes it meanwhile
        again = cli(*args)
        assert again.returncode == 0, again.stderr
        assert len(fake.batches) == 1 and len(fake.requests) == 0
    assert len(records(tmp_path / "run" / "prontoqa", "interpret")) == 3


def test_a_create_refused_for_a_lost_file_is_uploaded_anew(data_dir, tmp_path):
    """An entry left without an id (its create failed) whose input file the provider no longer has: the
    re-run's create is refused (a 400), which ends the entry, and its lines go in a new upload."""
    with FakeOpenAI(replies(data_dir), batch_delay=0.2) as fake:
        fake.create_errors = 1
        args = [*common(data_dir, fake, tmp_path, "run", limit=3), "--batch", "--batch-poll", "0.2"]
        assert cli(*args).returncode != 0 and not fake.batches
        del fake.files["file-1"]  # gone at the provider (deleted, or another key or organisation)
        again = cli(*args)
        assert again.returncode == 0, again.stderr
        assert len(fake.batches) == 1 and fake.batches[0]["batch"]["input_file_id"] == "file-2"
    entries = json.loads((tmp_path / "run" / "prontoqa" / "batches.json").read_text())["batches"]
    assert [(e["id"], e["status"], e["read"]) for e in entries] == [(None, "refused", True),
                                                                   ("batch_1", "completed", True)]
    assert len(records(tmp_path / "run" / "prontoqa", "interpret")) == 3


def test_overwrite_keeps_the_batches_it_paid_for(data_dir, tmp_path):
    """--overwrite starts the records afresh but not the batches: one still running is polled by the
    next run, not submitted again."""
    with FakeOpenAI(replies(data_dir), batch_delay=60) as fake:
        args = [*common(data_dir, fake, tmp_path, "run", limit=3), "--batch", "--batch-poll", "0.2"]
        late = cli(*args, "--batch-timeout", "1")
        assert late.returncode == 4, late.stderr
        fake.batch_delay = 0.1
        again = cli(*args, "--overwrite")
        assert again.returncode == 0, again.stderr
        assert len(fake.batches) == 1 and len(fake.requests) == 0
    assert len(records(tmp_path / "run" / "prontoqa", "interpret")) == 3


def billed(fake):
    """What the server's batches billed: lines answered, prompt and completion tokens (its output files)."""
    lines = [json.loads(line) for entry in fake.batches if entry["batch"]["output_file_id"]
             for line in fake.files[entry["batch"]["output_file_id"]].decode().splitlines()]
    usage = [line["response"]["body"]["usage"] for line in lines]
    return len(lines), sum(u["prompt_tokens"] for u in usage), sum(u["completion_tokens"] for u in usage)


def test_a_batch_read_again_after_a_kill_is_counted_once_in_the_ledger(data_dir, tmp_path):
    """A kill after a batch's replies were counted in spent.json and before batches.json recorded it read
    leaves it unread: the re-run reads it again (nothing is submitted) and must not count it twice."""
    with FakeOpenAI(replies(data_dir), batch_delay=0.2) as fake:
        args = [*common(data_dir, fake, tmp_path, "run", limit=4), "--batch", "--batch-poll", "0.2"]
        done = cli(*args)
        assert done.returncode == 0, done.stderr
        folder = tmp_path / "run" / "prontoqa"
        spent = json.loads((folder / "spent.json").read_text())
        assert (spent["sent"], spent["prompt_tokens"], spent["completion_tokens"]) == billed(fake) != (0, 0, 0)
        record = json.loads((folder / "batches.json").read_text())
        for entry in record["batches"]:
            entry["read"] = False  # as the kill left it: no records of the round either (--overwrite)
        (folder / "batches.json").write_text(json.dumps(record))
        again = cli(*args, "--overwrite")
        assert again.returncode == 0, again.stderr
        assert len(fake.batches) == 1 and len(fake.requests) == 0
        assert all(b["read"] for b in json.loads((folder / "batches.json").read_text())["batches"])
        assert json.loads((folder / "spent.json").read_text()) == spent


def test_the_scripted_batch_api_through_the_openai_client(data_dir):
    """Upload, create, the statuses on the way, the output file; and a cancel, answered at once."""
    import openai

    # 2 s: each status lasts 0.5 s or more, which polls 0.05 s apart see however loaded the machine.
    with FakeOpenAI(replies(data_dir), batch_delay=2.0) as fake:
        client = openai.OpenAI(base_url=fake.url, api_key="x", max_retries=0, timeout=10)
        line = {"custom_id": "ProntoQA_1:formulate:0:k1", "method": "POST", "url": "/v1/chat/completions",
                "body": {"model": "m", "messages": [{"role": "user", "content": "hi"}]}}
        uploaded = client.files.create(file=("in.jsonl", (json.dumps(line) + "\n").encode(), "application/jsonl"),
                                       purpose="batch")
        batch = client.batches.create(input_file_id=uploaded.id, endpoint="/v1/chat/completions",
                                      completion_window="24h")
        seen = [batch.status]
        while seen[-1] != "completed":
            time.sleep(0.05)
            seen.append(client.batches.retrieve(batch.id).status)
        assert [s for i, s in enumerate(seen) if i == 0 or seen[i - 1] != s] == \
            ["validating", "in_progress", "finalizing", "completed"]
        done = client.batches.retrieve(batch.id)
        out = json.loads(client.files.content(done.output_file_id).content)
        assert out["custom_id"] == line["custom_id"] and out["response"]["status_code"] == 200
        assert out["response"]["body"]["choices"][0]["message"]["content"] == scripted_program(fake, "ProntoQA_1")
        other = client.batches.create(input_file_id=uploaded.id, endpoint="/v1/chat/completions",
                                      completion_window="24h")
        assert client.batches.cancel(other.id).status == "cancelled"
        assert client.batches.retrieve(other.id).error_file_id is not None
        assert [b["batch"]["id"] for b in fake.batches] == [batch.id, other.id]
        client.close()


def scripted_program(fake, problem):
    return fake.reply.programs[problem][0]


def test_the_progress_shows_batches_ended_of_those_created(data_dir, tmp_path):
    """The run's display gets a "batches" row: ended and read, of those created (run_stages' progress)."""
    from logicpipe.stages import run_stages
    from logicpipe.stages.config import RunConfig

    seen = []
    with FakeOpenAI(replies(data_dir), batch_delay=0.3) as fake:
        config = RunConfig(dataset="prontoqa", data_dir=data_dir, out=tmp_path / "out", model="fake-gpt",
                           base_url=fake.url, llm_cache=tmp_path / "c.sqlite", limit=4, max_rounds=0, batch=True,
                           batch_poll=0.2)
        run_stages(config, ["formulate"], progress=lambda stage, done, total: seen.append((stage, done, total)))
    batches = [(done, total) for stage, done, total in seen if stage == "batches"]
    assert batches and batches[-1] == (1, 1) and (0, 1) in batches, seen
