"""A newcomer's first hour: a fresh clone, their own small dataset (a CSV file and a task YAML written as
the README's task-file section shows), a dry run against `logicpipe serve-scripted` with canned
replies, and `logicpipe view`'s HTML page of it, found without reading the source."""

import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path

from tests.conftest import ROOT, ctrl_c_default

TASK = """\
name: pets
source: {format: csv, path: "{split}.csv"}
fields: {id: key, context: story, question: "Is the following true? {claim}", options: null, answer: gold}
answer_space: truth
formalism: lp
prompt: proofwriter
"""

ROWS = 'key,story,claim,gold\nr1,"Rex is a dog. Every dog barks.",Rex barks.,True\nr2,Rex is a dog.,Rex is a cat.,Unknown\n'

PROGRAM = """Predicates:
Dog($x, bool) ::: Is x a dog?
{other}($x, bool)
Facts:
Dog(Rex, True) ::: Rex is a dog.
Rules:
Dog($x, True) >>> Barks($x, True)
Query:
{other}(Rex, True)
"""


# 11 s on the shared 2-core machine when quiet (27 s at load 16, 67 s at load 20): a clone, six CLI starts.
def test_a_fresh_clone_runs_and_views_a_users_own_task(tmp_path: Path):
    clone = tmp_path / "logicpipe"
    subprocess.run(["git", "clone", "--quiet", str(ROOT), str(clone)], check=True, timeout=120)
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "pets.yaml").write_text(TASK)
    (mine / "dev.csv").write_text(ROWS)
    replies = [{"id": "r1", "raw_logic_programs": [PROGRAM.format(other="Barks")]},
               {"id": "r2", "raw_logic_programs": [PROGRAM.format(other="Cat")]}]
    (mine / "replies.json").write_text(json.dumps(replies))
    # The clone's code, not this checkout's, with the environment the user has (no LOGICPIPE_DATA).
    env = {**{k: v for k, v in os.environ.items() if k != "LOGICPIPE_DATA"}, "PYTHONPATH": str(clone)}

    def logicpipe(*args: str) -> subprocess.CompletedProcess:
        done = subprocess.run([sys.executable, "-m", "logicpipe", *args], cwd=mine, env=env,
                              capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr
        return done

    where = subprocess.run([sys.executable, "-c", "import logicpipe; print(logicpipe.__file__)"], cwd=mine, env=env,
                           capture_output=True, text=True, check=True).stdout
    assert where.startswith(str(clone))
    assert "pets dev: 2 problems" in logicpipe("validate", "--task", "pets.yaml").stdout
    server = subprocess.Popen([sys.executable, "-m", "logicpipe", "serve-scripted", "--programs", "replies.json"],
                              cwd=mine, env=env, stderr=subprocess.PIPE, text=True, preexec_fn=ctrl_c_default)
    try:
        url = re.search(r"http://127\.0\.0\.1:\d+/v1", server.stderr.readline()).group(0)
        logicpipe("run", "--task", "pets.yaml", "--model", "scripted", "--base-url", url, "--out", "results")
    finally:
        server.send_signal(signal.SIGINT)
        server.communicate(timeout=60)
    metrics = json.loads((mine / "results" / "pets" / "metrics.json").read_text())
    assert (metrics["total"], metrics["executed"], metrics["accuracy"]) == (2, 2, 100.0)
    shown = logicpipe("view", "results")
    page = mine / "results" / "report.html"
    assert str(page) in shown.stderr or "results/report.html" in shown.stderr
    html = page.read_text()
    # The page found the user's task from run.json: the questions are the CSV's.
    assert "Is the following true? Rex barks." in html and "Rex is a dog. Every dog barks." in html
    assert "problem texts for pets not shown" not in html
