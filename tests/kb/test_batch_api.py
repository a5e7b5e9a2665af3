"""kb ask and kb validate with --batch, through the CLI and the openai client against the scripted server's
batch API (/v1/files, /v1/batches): the records of the synchronous run of the same inputs, each wave of
requests one batch, batch ids in the --out folder, each batch created once even across a kill while
polling, and the options refused in one line before anything is written."""

import json
import os
import signal
import subprocess
import sys
import time

from logicpipe.testing import FakeOpenAI
from tests.conftest import ROOT
from tests.kb.test_batch import records, write_questions
from tests.kb.test_modes import CAMPUS, CLAIMS, EXAMPLE, NOW, QUESTIONS, replies

POLL = ["--batch-poll", "0.2"]


def model(server, tmp_path, name):
    """Each run its own reply cache: a batch run is answered by its batches, never by the other run's replies."""
    return ["--model", "fake", "--base-url", server.url, "--llm-cache", str(tmp_path / f"{name}.sqlite")]


def canonical(record):
    """A record as it must agree between two runs: SWI-Prolog gives a tabled predicate's answers in no fixed
    order (connected/2 in q14), so solutions and the context's lines are compared as sets."""
    record = dict(record)
    record.pop("usage")
    for result in record.get("results", []):
        result["solutions"] = sorted(result["solutions"], key=lambda s: json.dumps(s, sort_keys=True))
    if record.get("context"):
        record["context"] = sorted(record["context"].splitlines())
    return record


def purposes(batch):
    return {identifier.split(":")[1] for identifier in batch["custom_ids"]}


def test_kb_ask_batch_gives_the_synchronous_records_with_a_batch_per_wave(kbcli, tmp_path):
    questions = tmp_path / "questions.jsonl"
    questions.write_text((EXAMPLE / "questions.jsonl").read_text())
    addressed = [qid for qid, q in QUESTIONS.items() if q["goals"]]
    with FakeOpenAI(replies(), batch_delay=0.3) as server:
        common = ["kb", "ask", str(CAMPUS), "--questions", str(questions), "--context", "model", *NOW]
        sync = kbcli(*common, "--out", str(tmp_path / "sync"), *model(server, tmp_path, "sync"))
        assert sync.returncode == 0, sync.stderr
        asked = len(server.requests)
        batch = kbcli(*common, "--out", str(tmp_path / "batch"), *model(server, tmp_path, "batch"), "--batch", *POLL)
        assert batch.returncode == 0, batch.stderr
        assert len(server.requests) == asked  # nothing sent one by one
    # Three waves: every question's goals, then the context and the answer of those the KB addresses.
    assert [(len(b["custom_ids"]), purposes(b)) for b in server.batches] == \
        [(len(QUESTIONS), {"kb-goals"}), (len(addressed), {"kb-context"}), (len(addressed), {"kb-answer"})]
    lines = [identifier for b in server.batches for identifier in b["custom_ids"]]
    assert len(set(lines)) == len(lines) == asked  # each request once, as the synchronous run asked
    ours, theirs = records(tmp_path / "batch"), records(tmp_path / "sync")
    assert [r["id"] for r in ours] == [r["id"] for r in theirs] == list(QUESTIONS)
    assert [canonical(r) for r in ours] == [canonical(r) for r in theirs]
    assert sum(r["addressed"] for r in ours) == len(addressed) and all(r["error"] is None for r in ours)
    for mine, other in zip(ours, theirs, strict=True):
        # Every reply came through the run's own batches, none from the cache; the sync run sent each itself.
        calls = mine["usage"]["calls"]
        assert (mine["usage"]["batch_calls"], mine["usage"]["cached_calls"]) == (calls, 0)
        assert (other["usage"]["batch_calls"], other["usage"]["cached_calls"]) == (0, 0)
        assert calls == other["usage"]["calls"] == (3 if mine["addressed"] else 1)
    recorded = json.loads((tmp_path / "batch" / "batches.json").read_text())["batches"]
    assert [b["id"] for b in recorded] == [b["batch"]["id"] for b in server.batches]
    assert all(b["status"] == "completed" and b["read"] for b in recorded)
    assert f"{tmp_path / 'batch'}: 3 batches created, 0 of an earlier run read" in batch.stderr

    # Re-run: every record stands; nothing is submitted, nothing sent.
    again = kbcli(*common, "--out", str(tmp_path / "batch"), *model(server, tmp_path, "batch"), "--batch", *POLL)
    assert again.returncode == 0 and "(0 new, 0 with errors)" in again.stderr, again.stderr
    assert len(server.batches) == 3


def test_kb_validate_batch_gives_the_synchronous_verdicts_in_one_batch(kbcli, tmp_path):
    marker = tmp_path / "marker"
    answers = tmp_path / "answers.jsonl"
    answers.write_text("".join(json.dumps({"id": key, "answer": f"answer {key}"}) + "\n" for key in CLAIMS))
    with FakeOpenAI(replies(marker), batch_delay=0.3) as server:
        common = ["kb", "validate", str(CAMPUS), "--answers", str(answers), *NOW]
        sync = kbcli(*common, "--out", str(tmp_path / "sync"), *model(server, tmp_path, "sync"))
        assert sync.returncode == 0, sync.stderr
        asked = len(server.requests)
        batch = kbcli(*common, "--out", str(tmp_path / "batch"), *model(server, tmp_path, "batch"), "--batch", *POLL)
        assert batch.returncode == 0, batch.stderr
        assert len(server.requests) == asked == len(CLAIMS)
    assert [(len(b["custom_ids"]), purposes(b)) for b in server.batches] == [(len(CLAIMS), {"kb-claims"})]
    ours, theirs = records(tmp_path / "batch", "validate"), records(tmp_path / "sync", "validate")
    assert [canonical(r) for r in ours] == [canonical(r) for r in theirs]
    assert [[c["verdict"] for c in r["claims"]] for r in ours] == \
        [["true", "true", "untranslatable"], ["true", "true"], ["not derivable", "true"], ["untranslatable", "true"]]
    assert [r["usage"]["batch_calls"] for r in ours] == [1] * len(CLAIMS)
    assert [r["usage"]["batch_calls"] for r in theirs] == [0] * len(CLAIMS)
    assert not marker.exists()


def test_kb_ask_killed_while_polling_resumes_its_batch_and_submits_none_again(kbcli, tmp_path):
    ids = [f"q01-{n}" for n in range(5)]
    questions = write_questions(tmp_path / "q.jsonl", ids)
    out = tmp_path / "run"
    args = ["kb", "ask", str(CAMPUS), "--questions", str(questions), "--out", str(out), *NOW]
    with FakeOpenAI(replies(), batch_delay=60) as server:
        batched = [*args, *model(server, tmp_path, "run"), "--batch", *POLL]
        process = subprocess.Popen([sys.executable, "-m", "logicpipe", *batched], cwd=ROOT, env=dict(os.environ),
                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        record = out / "batches.json"
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and process.poll() is None and not created(record):
            time.sleep(0.05)
        assert created(record) and process.poll() is None  # created, and still polling
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=30)
        assert len(server.batches) == 1 and server.batches[0]["batch"]["status"] != "completed"
        server.batch_delay = 0.2  # the provider finishes it meanwhile
        again = kbcli(*batched)
        assert again.returncode == 0, again.stderr
        # The killed run's batch of goals was polled and read, not created again; then the answers' batch.
        assert [purposes(b) for b in server.batches] == [{"kb-goals"}, {"kb-answer"}]
        assert not server.requests
        assert "1 batch created, 1 of an earlier run read" in again.stderr
    done = records(out)
    assert [r["id"] for r in done] == ids
    assert all(r["answer"] == f"ANSWER FOR {r['id']}" and r["error"] is None for r in done)
    assert all(r["usage"]["batch_calls"] == r["usage"]["calls"] == 2 for r in done)


def created(record):
    """Whether batches.json names a batch the provider created (one with an id)."""
    try:
        return any(b.get("id") for b in json.loads(record.read_text())["batches"])
    except (OSError, ValueError, KeyError):
        return False


def test_batch_size_splits_a_wave_and_a_timeout_stops_with_records_kept(kbcli, tmp_path):
    ids = [f"q01-{n}" for n in range(5)]
    questions = write_questions(tmp_path / "q.jsonl", ids)
    with FakeOpenAI(replies(), batch_delay=0.2) as server:
        split = kbcli("kb", "ask", str(CAMPUS), "--questions", str(questions), "--out", str(tmp_path / "split"), *NOW,
                      *model(server, tmp_path, "split"), "--batch", "--batch-size", "2", *POLL)
        assert split.returncode == 0, split.stderr
        assert [len(b["custom_ids"]) for b in server.batches] == [2, 2, 1, 2, 2, 1]

        # The goals' batch still running at --batch-timeout: exit 4, a re-run polls it.
        before = len(server.batches)
        server.batch_delay = 60
        args = ["kb", "ask", str(CAMPUS), "--questions", str(questions), "--out", str(tmp_path / "late"), *NOW,
                *model(server, tmp_path, "late"), "--batch", *POLL]
        late = kbcli(*args, "--batch-timeout", "1")
        assert late.returncode == 4, late.stderr
        assert "--batch: 1 batch still running after --batch-timeout 1 s" in late.stderr
        assert "5 of 5 requests not answered yet (submitted in batches); finished records are kept" in late.stderr
        # Without --batch they would be paid for twice: refused in one line, nothing sent.
        alone = kbcli(*[a for a in args if a not in ("--batch", *POLL)])
        assert alone.returncode == 2 and "1 batch not read yet" in alone.stderr and alone.stderr.count("\n") == 1
        assert not server.requests
        server.batch_delay = 0.1
        # --overwrite starts the records afresh, not the batches: the running one is polled, not sent again.
        again = kbcli(*args, "--overwrite")
        assert again.returncode == 0, again.stderr
        assert [len(b["custom_ids"]) for b in server.batches[before:]] == [5, 5] and not server.requests
    assert [r["id"] for r in records(tmp_path / "late")] == ids


def test_bad_batch_options_are_one_line_before_anything_is_written(kbcli, tmp_path):
    questions = write_questions(tmp_path / "q.jsonl", ["q01-a"])
    answers = tmp_path / "a.jsonl"
    answers.write_text('{"id": "a2", "answer": "x"}\n')
    out = tmp_path / "bad"
    common = ["--model", "m", "--base-url", "http://127.0.0.1:9/v1", "--llm-cache", str(tmp_path / "c.sqlite")]
    ask = ["kb", "ask", str(CAMPUS), "--questions", str(questions), "--out", str(out), *common, "--batch"]
    validate = ["kb", "validate", str(CAMPUS), "--answers", str(answers), "--out", str(out), *common, "--batch"]
    for args, said in (
            ([*ask, "--max-tokens-total", "10"], "give one or the other"),
            ([*validate, "--max-cost", "1", "--price-prompt", "1"], "give one or the other"),
            ([*ask, "--batch-size", "50001"], "invalid option --batch-size"),
            ([*validate, "--batch-poll", "0"], "invalid option --batch-poll"),
            ([*ask, "--batch-timeout", "nan"], "invalid option --batch-timeout"),
            (["kb", "ask", str(CAMPUS), "Who teaches cs101?", *common, "--batch"],
             "--batch needs a batch: --questions FILE and --out DIR"),
            (["kb", "validate", str(CAMPUS), "--answer", "x", *common, "--batch"],
             "--batch needs a batch: --answers FILE and --out DIR")):
        bad = kbcli(*args)
        assert bad.returncode == 2 and said in bad.stderr, (args, bad.stderr)
        assert len(bad.stderr.strip().splitlines()) == 1, bad.stderr
    assert not out.exists() and not (tmp_path / "c.sqlite").exists()
