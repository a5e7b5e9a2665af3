"""--batch-export and --batch-import, through the CLI: the requests a run cannot answer from its cache go
to a file in the OpenAI batch input format; a stand-in for `vllm run-batch` answers each line from the
scripted server and writes vLLM's output format; the run then finishes from the imported replies with
the same records as a synchronous run of the same requests into another cache."""

import json
import urllib.request

from logicpipe.testing import FakeOpenAI, ScriptedReplies
from tests.conftest import cli

PROGRAMS = "ProntoQA_dev_gpt-4.json"


def run_batch(fake, given, output, fail=()):
    """What `vllm run-batch -i given -o output` does, against the scripted server: one POST per line, its
    reply in the output format (problem and purpose go as the headers the scripted server routes on)."""
    out = []
    for line in given.read_text().splitlines():
        item = json.loads(line)
        assert item["method"] == "POST" and item["url"] == "/v1/chat/completions"
        problem, purpose, _sample, _key = item["custom_id"].split(":")
        if problem in fail:
            out.append({"id": "x", "custom_id": item["custom_id"], "response": None,
                        "error": {"code": "server_error", "message": "boom"}})
            continue
        request = urllib.request.Request(fake.url + "/chat/completions", data=json.dumps(item["body"]).encode(),
                                         headers={"Content-Type": "application/json",
                                                  "X-Logicpipe-Problem": problem, "X-Logicpipe-Purpose": purpose})
        with urllib.request.urlopen(request, timeout=30) as response:
            body = json.loads(response.read())
        out.append({"id": f"vllm-{len(out)}", "custom_id": item["custom_id"],
                    "response": {"status_code": 200, "request_id": f"r{len(out)}", "body": body}, "error": None})
    output.write_text("".join(json.dumps(o) + "\n" for o in out))


def records(folder, stage):
    return {r["id"]: r for r in map(json.loads, (folder / f"{stage}.jsonl").read_text().splitlines())}


def test_a_run_through_batch_files_gives_the_synchronous_runs_records(data_dir, tmp_path):
    common = ["-d", "prontoqa", "--data-dir", str(data_dir), "--model", "fake-gpt", "--limit", "12",
              "--max-rounds", "1"]
    given, output = tmp_path / "requests.jsonl", tmp_path / "output.jsonl"
    with FakeOpenAI(ScriptedReplies.from_logic_lm(data_dir / "programs" / PROGRAMS)) as fake:
        sync = cli("run", *common, "--base-url", fake.url, "--llm-cache", str(tmp_path / "sync.sqlite"),
                   "--out", str(tmp_path / "sync"))
        assert sync.returncode == 0, sync.stderr
        asked = len(fake.requests)
        batch = ["run", *common, "--base-url", fake.url, "--llm-cache", str(tmp_path / "batch.sqlite"),
                 "--out", str(tmp_path / "batch"), "--batch-export", str(given)]
        first = cli(*batch)
        assert first.returncode == 4 and len(fake.requests) == asked, first.stderr  # nothing sent
        # An expected stop, said as one: no `error:` line for a script to read as a failure.
        assert "error" not in first.stderr and first.stderr.splitlines()[-1].startswith("paused: --batch-export: ")
        assert "--batch-export: 12 requests written to" in first.stderr
        assert "12 of 12 requests not sent; finished records are kept" in first.stderr
        lines = [json.loads(line) for line in given.read_text().splitlines()]
        assert [line["custom_id"].split(":")[:3] for line in lines] == \
            [[f"ProntoQA_{i}", "formulate", "0"] for i in range(1, 13)]
        # One line fails in the batch: its request goes in the next file, and the rest are done.
        run_batch(fake, given, output, fail={"ProntoQA_3"})
        again = cli(*batch, "--batch-import", str(output))
        assert again.returncode == 4, again.stderr
        assert "--batch-import stored 11 replies (1 failed line); --batch-export: 1 request written" in again.stderr
        for _ in range(3):  # the failed one, then any refinement round's requests
            run_batch(fake, given, output)
            done = cli(*batch, "--batch-import", str(output))
            if done.returncode == 0:
                break
            assert done.returncode == 4, done.stderr
        assert done.returncode == 0, done.stderr
        # Every request answered: the file the last round wrote no longer holds them, to be paid for again.
        assert given.read_text() == ""
    for stage in ("formulate", "solve", "interpret"):
        ours, theirs = records(tmp_path / "batch" / "prontoqa", stage), records(tmp_path / "sync" / "prontoqa", stage)
        assert ours.keys() == theirs.keys() and len(ours) == 12
        for key in ours:
            for field in ("program", "answer", "verdict", "predicted", "correct"):
                assert ours[key].get(field) == theirs[key].get(field), (stage, key, field)
    metrics = [json.loads((tmp_path / run / "prontoqa" / "metrics.json").read_text()) for run in ("batch", "sync")]
    assert metrics[0]["accuracy"] == metrics[1]["accuracy"] and metrics[0]["exe_rate"] == metrics[1]["exe_rate"]
    # Each imported reply is a batch call of the run that imported it, not a cached one.
    tokens = metrics[1]["tokens"]
    assert tokens["batch_calls"] == tokens["cached_calls"] == 0
    assert metrics[0]["tokens"] == {**tokens, "batch_calls": tokens["calls"]}


def test_bad_batch_options_are_one_line_before_anything_is_written(data_dir, tmp_path):
    base = ["run", "-d", "prontoqa", "--data-dir", str(data_dir), "--model", "m", "--base-url", "http://127.0.0.1:9/v1",
            "--out", str(tmp_path / "out")]
    (tmp_path / "some.jsonl").write_text("")
    alone = cli(*base, "--batch-import", str(tmp_path / "some.jsonl"))
    assert alone.returncode == 2 and "--batch-import needs --batch-export" in alone.stderr
    missing = cli(*base, "--batch-export", str(tmp_path / "r.jsonl"), "--batch-import", str(tmp_path / "none.jsonl"))
    assert missing.returncode == 2 and "no such file" in missing.stderr
    capped = cli(*base, "--batch-export", str(tmp_path / "r.jsonl"), "--max-tokens-total", "10")
    assert capped.returncode == 2 and "give one or the other" in capped.stderr
    (tmp_path / "r.jsonl").write_text(json.dumps({"custom_id": "a:formulate:0:k", "method": "POST",
                                                  "url": "/v1/chat/completions", "body": {}}) + "\n")
    (tmp_path / "o.jsonl").write_text(json.dumps({"custom_id": "other:formulate:0:k2", "response": None,
                                                  "error": None}) + "\n")
    foreign = cli(*base, "--batch-export", str(tmp_path / "r.jsonl"), "--batch-import", str(tmp_path / "o.jsonl"))
    assert foreign.returncode == 2 and "is no request of" in foreign.stderr
    assert not (tmp_path / "out").exists()
