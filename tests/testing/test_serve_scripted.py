"""`logicpipe serve-scripted`: a user's dry run of a task against canned model replies, started and
stopped as a user would, with `logicpipe run` talking to it over HTTP."""

import json
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT, cli, ctrl_c_default

FILES = ROOT / "tests" / "data" / "files"


def start(*args: str) -> tuple[subprocess.Popen, str]:
    """The server process and the base URL it printed."""
    server = subprocess.Popen([sys.executable, "-m", "logicpipe", "serve-scripted", *args], cwd=ROOT,
                              stderr=subprocess.PIPE, text=True, preexec_fn=ctrl_c_default)
    line = server.stderr.readline()
    found = re.search(r"http://127\.0\.0\.1:\d+/v1", line)
    if found is None:
        server.kill()
        raise AssertionError(f"no URL from serve-scripted: {line}{server.stderr.read()}")
    return server, found.group(0)


def stop(server: subprocess.Popen) -> str:
    server.send_signal(signal.SIGINT)
    _, err = server.communicate(timeout=60)
    assert server.returncode == 0, err
    return err


@pytest.mark.parametrize("programs", ["cats_programs.json", "cats_programs"])  # Logic-LM's JSON, or a folder
def test_a_task_dry_runs_against_canned_replies(programs: str, tmp_path: Path):
    broken = next(r for r in json.loads((FILES / "cats_programs.json").read_text()) if r["id"] == "c4")
    fixed = broken["raw_logic_programs"][0].replace("Query\nAnimal(Tom True)", "Query:\nAnimal(Tom, True)")
    (tmp_path / "repairs.json").write_text(json.dumps({"Animal(Tom True)": fixed}))
    server, url = start("--programs", str(FILES / programs), "--repairs", str(tmp_path / "repairs.json"))
    try:
        done = cli("run", "--task", str(FILES / "cats.yaml"), "--model", "scripted", "--base-url", url,
                   "--out", str(tmp_path / "run"), "--llm-timeout", "10")
        assert done.returncode == 0, done.stderr
    finally:
        err = stop(server) if server.poll() is None else server.stderr.read()
    metrics = json.loads((tmp_path / "run" / "cats" / "metrics.json").read_text())
    # Every program was written by the server; c4's broken one was repaired in round 1.
    assert (metrics["source"], metrics["total"], metrics["executed"], metrics["accuracy"]) == \
        ("llm:scripted", 4, 4, 100.0)
    assert "answered 5 requests" in err  # four programs and one repair
    refined = [json.loads(line) for line in (tmp_path / "run" / "cats" / "refine-1.jsonl").read_text().splitlines()]
    assert [(r["id"], r["program"]) for r in refined] == [("c4", fixed)]


def test_a_task_dry_runs_through_the_batch_api(tmp_path: Path):
    server, url = start("--programs", str(FILES / "cats_programs.json"), "--batch-delay", "0.3")
    try:
        done = cli("run", "--task", str(FILES / "cats.yaml"), "--model", "scripted", "--base-url", url,
                   "--out", str(tmp_path / "run"), "--max-rounds", "0", "--batch", "--batch-poll", "0.2")
        assert done.returncode == 0, done.stderr
    finally:
        err = stop(server) if server.poll() is None else server.stderr.read()
    assert "answered 0 requests, and 1 batch of the batch API" in err
    metrics = json.loads((tmp_path / "run" / "cats" / "metrics.json").read_text())
    assert (metrics["source"], metrics["total"]) == ("llm:scripted", 4)
    assert [b["status"] for b in json.loads((tmp_path / "run" / "cats" / "batches.json").read_text())["batches"]] == \
        ["completed"]


def test_bad_replies_file_or_port_is_one_error_line(tmp_path: Path):
    (tmp_path / "bad.json").write_text("{not json")
    done = cli("serve-scripted", "--programs", str(tmp_path / "bad.json"))
    assert done.returncode == 2 and done.stderr.startswith(f"error: {tmp_path / 'bad.json'}: malformed JSON")
    server, url = start("--programs", str(FILES / "cats_programs.json"))
    try:
        port = url.split(":")[2].split("/")[0]
        taken = cli("serve-scripted", "--programs", str(FILES / "cats_programs.json"), "--port", port)
        assert taken.returncode == 2 and taken.stderr.startswith(f"error: cannot serve on 127.0.0.1:{port}: ")
    finally:
        stop(server)


KB = ROOT / "examples" / "kb"


def kb(*args: str) -> subprocess.CompletedProcess:
    return cli("kb", *args[:1], str(KB / "campus.pl"), *args[1:], "--model", "scripted", "--percepts",
               str(KB / "now.txt"))


def test_kb_ask_and_validate_dry_run_against_canned_replies(tmp_path: Path):
    """Goals, answers and claims come from the files, keyed by the question's or answer's text; the
    proofs are the KB's own, so a scripted goal's bindings are what campus.pl derives."""
    scripted = [json.loads(line) for line in (KB / "questions.jsonl").read_text().splitlines()]
    (tmp_path / "more.jsonl").write_text(json.dumps(
        {"question": "Which professors teach Carol?", "goals": "taught_by(carol, P).",
         "context": "Hopper, Noether and Knuth teach her.", "answer": "Hopper, Noether and Knuth."}) + "\n"
        # Its prompt holds q04's question too ("Who teaches Carol?"): the longer, whole question wins.
        + json.dumps({"question": "Who teaches Carol? Name one.", "goals": ["teaches(P, cs201)."], "answer": "Hopper."})
        + "\n")
    server, url = start("--kb-replies", str(KB / "questions.jsonl"), "--kb-replies", str(KB / "answers.jsonl"),
                        "--kb-replies", str(tmp_path / "more.jsonl"))
    try:
        asked = {}
        for question in [scripted[1]["question"], scripted[10]["question"], "Who is the dean?",
                         "Who teaches Carol? Name one."]:
            done = kb("ask", question, "--base-url", url, "--format", "json")
            assert done.returncode == 0, done.stderr
            asked[question] = json.loads(done.stdout)
        done = kb("ask", "Which professors teach Carol?", "--base-url", url, "--format", "json", "--context", "model")
        assert done.returncode == 0, done.stderr
        with_context = json.loads(done.stdout)
        batch = kb("ask", "--questions", str(KB / "questions.jsonl"), "--out", str(tmp_path / "batch"),
                   "--base-url", url)
        assert batch.returncode == 0, batch.stderr
        validated = {}
        for line in (KB / "answers.jsonl").read_text().splitlines():
            answer = json.loads(line)["answer"]
            done = kb("validate", "--answer", answer, "--base-url", url, "--format", "json")
            validated[answer] = (done.returncode, json.loads(done.stdout))
    finally:
        stop(server)
    bob = asked[scripted[1]["question"]]  # "Which courses can Bob take now?": eligible(bob, C).
    assert bob["goals"] == ["eligible(bob, C)"] and bob["answer"] == scripted[1]["answer"]
    assert [s["bindings"] for s in bob["results"][0]["solutions"]] == scripted[1]["bindings"]
    for question in (scripted[10]["question"], "Who is the dean?"):  # scripted UNANSWERABLE, and not scripted
        assert not asked[question]["addressed"] and asked[question]["answer"].startswith("The knowledge base cannot")
    assert asked["Who teaches Carol? Name one."]["answer"] == "Hopper."
    assert with_context["context"].endswith("\nHopper, Noether and Knuth teach her.")  # its request has no question
    assert [s["bindings"]["P"] for s in with_context["results"][0]["solutions"]] == ["hopper", "noether", "knuth"]
    records = {r["id"]: r for r in map(json.loads, (tmp_path / "batch" / "ask.jsonl").read_text().splitlines())}
    assert {key: r["answer"] for key, r in records.items() if r["addressed"]} == \
        {s["id"]: s["answer"] for s in scripted if s["goals"]}
    (right, wrong) = validated.values()
    assert right[0] == 0 and right[1]["valid"] and [c["verdict"] for c in right[1]["claims"]] == ["true", "true"]
    assert wrong[0] == 1 and not wrong[1]["valid"]
    assert [c["verdict"] for c in wrong[1]["claims"]] == ["not derivable", "true", "untranslatable"]


def test_a_bad_kb_replies_file_is_one_error_line(tmp_path: Path):
    cases = {'{"question": "Who?", "goals": [1]}': ':1: "question" must be a text and "goals" a list of goal texts',
             '{"answer": "Hopper teaches.", "claims": [{"goal": "teaches(hopper, X)"}]}': ':1: expected "answer"',
             '{"id": "q1"}': ':1: expected an object with "question"'}
    for line, expected in cases.items():
        (tmp_path / "kb.jsonl").write_text(line + "\n")
        done = cli("serve-scripted", "--kb-replies", str(tmp_path / "kb.jsonl"))
        assert done.returncode == 2 and done.stderr.startswith(f"error: {tmp_path / 'kb.jsonl'}{expected}"), done.stderr
    done = cli("serve-scripted")
    assert done.returncode == 2 and done.stderr.startswith("error: give --programs FILE (for run) or --kb-replies")
