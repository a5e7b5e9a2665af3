"""`logicpipe serve-scripted`: a user's dry run of a task against canned model replies, started and
stopped as a user would, with `logicpipe run` talking to it over HTTP."""

import json
import re
import signal
import subprocess
import sys
from pathlib import Path

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


def test_a_task_dry_runs_against_canned_replies(tmp_path: Path):
    broken = next(r for r in json.loads((FILES / "cats_programs.json").read_text()) if r["id"] == "c4")
    fixed = broken["raw_logic_programs"][0].replace("Query\nAnimal(Tom True)", "Query:\nAnimal(Tom, True)")
    (tmp_path / "repairs.json").write_text(json.dumps({"Animal(Tom True)": fixed}))
    server, url = start("--programs", str(FILES / "cats_programs.json"), "--repairs", str(tmp_path / "repairs.json"))
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
