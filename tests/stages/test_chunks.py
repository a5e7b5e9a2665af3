"""A run streams its problems through the stages a chunk at a time: no more than a chunk of
trajectories is alive, the files are the same as an unchunked run's, and a run killed at 90% resumes
to the same files, solving only what was missing."""

import json
import os
import random
import signal
import subprocess
import sys
import time

import pytest

from logicpipe.stages import RunConfig, run, run_stages, runner
from logicpipe.testing.puzzles import generate
from tests.conftest import ROOT

SIZE, CHUNK = 240, 40
FILES = ("formulate.jsonl", "solve.jsonl", "interpret.jsonl", "evaluate.jsonl", "metrics.json")


@pytest.fixture(scope="module")
def task(tmp_path_factory):
    return generate(tmp_path_factory.mktemp("puzzles"), SIZE)


def config(task, out):
    path, programs = task
    return RunConfig(task=path, programs=programs, out=out, workers=2)


def files(out):
    """Each file's lines, in order, as JSON without the solver's time (which no two runs share)."""
    read = {}
    for name in FILES:
        text = (out / "scale" / name).read_text()
        if name == "metrics.json":
            read[name] = [json.loads(text)]
            continue
        assert text.endswith("\n")
        read[name] = [{k: v for k, v in json.loads(line).items() if k != "seconds"} for line in text.splitlines()]
    return read


# The chunked run of the test below, in a Python of its own: gc.get_objects() walks every object of the
# process, which in a pytest worker that has run hundreds of tests takes ~0.2 s a call (10 s a test);
# here, as in a user's `logicpipe run`, it walks the run's own.
COUNT_ALIVE = """
import gc, json, sys
from pathlib import Path
from logicpipe.core.trajectory import Trajectory
from logicpipe.stages import RunConfig, run, runner

task, programs, out, runner.CHUNK = Path(sys.argv[1]), Path(sys.argv[2]), Path(sys.argv[3]), int(sys.argv[4])
alive, calls = [], 0

def count(stage, done, total):
    global calls
    calls += 1
    if calls % 20 == 0:
        alive.append(sum(isinstance(o, Trajectory) for o in gc.get_objects()))

report = run(RunConfig(task=task, programs=programs, out=out, workers=2), count)
solve = next(s for s in report.stages if s.name == "solve")
print(json.dumps({"alive": alive, "metrics": report.metrics, "solve": [solve.total, solve.new]}))
"""


def test_at_most_a_chunk_of_trajectories_is_alive_and_the_files_are_an_unchunked_runs(task, tmp_path):
    whole = run(config(task, tmp_path / "whole"))  # one chunk: the run as it always was
    assert whole.metrics["total"] == SIZE and whole.metrics["accuracy"] == 100.0
    path, programs = task
    done = subprocess.run([sys.executable, "-c", COUNT_ALIVE, str(path), str(programs), str(tmp_path / "chunked"),
                           str(CHUNK)], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    chunked = json.loads(done.stdout)
    alive = chunked["alive"]
    assert len(alive) > 10 and max(alive) <= 2 * CHUNK < SIZE, max(alive)
    assert files(tmp_path / "chunked") == files(tmp_path / "whole")
    assert chunked["metrics"] == json.loads(json.dumps(whole.metrics))
    assert chunked["solve"] == [SIZE, SIZE]


def test_a_run_killed_at_ninety_percent_resumes_to_an_uninterrupted_runs_files(task, tmp_path, monkeypatch):
    monkeypatch.setattr(runner, "CHUNK", CHUNK, raising=False)
    run(config(task, tmp_path / "whole"))
    killed = tmp_path / "killed"
    run(config(task, killed))
    # What a kill during the last chunk's solve leaves: earlier chunks complete (in input order, as each
    # stage wrote them), the last chunk's records partly written, in completion order, with a torn line.
    folder = killed / "scale"
    done = int(SIZE * 0.9)
    solve = folder.joinpath("solve.jsonl").read_text().splitlines(keepends=True)
    head, tail = solve[:SIZE - CHUNK], solve[SIZE - CHUNK:done]
    random.Random(1).shuffle(tail)
    folder.joinpath("solve.jsonl").write_text("".join(head + tail) + solve[done][:30])
    for name in ("interpret.jsonl", "evaluate.jsonl"):
        lines = folder.joinpath(name).read_text().splitlines(keepends=True)
        folder.joinpath(name).write_text("".join(lines[:SIZE - CHUNK]))
    folder.joinpath("metrics.json").unlink()
    resumed = run(config(task, killed))
    assert {s.name: s.new for s in resumed.stages} == \
        {"formulate": 0, "solve": SIZE - done, "refine": 0, "interpret": CHUNK, "evaluate": CHUNK}
    assert files(killed) == files(tmp_path / "whole")


def test_a_stage_run_alone_on_a_chunked_run_leaves_the_files_it_only_reads(task, tmp_path, monkeypatch):
    monkeypatch.setattr(runner, "CHUNK", CHUNK, raising=False)
    out = tmp_path / "run"
    whole = run(config(task, out))
    before = {p.name: p.read_bytes() for p in (out / "scale").glob("*.jsonl")}
    again = run_stages(config(task, out), ["evaluate"])
    assert {p.name: p.read_bytes() for p in (out / "scale").glob("*.jsonl")} == before
    assert again.metrics == whole.metrics
    assert again.records_read == {}  # every chunk was noted finished: its tally was taken, no record parsed


def test_a_cli_run_killed_midway_resumes_parsing_only_the_chunks_it_had_not_finished(tmp_path, monkeypatch):
    size = 12 * CHUNK
    path, programs = generate(tmp_path / "puzzles", size)
    out = tmp_path / "killed"
    # The real CLI, with chunks of CHUNK problems; its own session, so the kill takes the solver workers too.
    code = f"import sys; from logicpipe.stages import runner; runner.CHUNK = {CHUNK}; " \
           "from logicpipe.cli import main; main(sys.argv[1:])"
    process = subprocess.Popen([sys.executable, "-c", code, "run", "--task", str(path), "--programs", str(programs),
                                "--out", str(out), "--workers", "2"], cwd=ROOT, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL, start_new_session=True)
    notes = out / "scale" / "chunks.jsonl"
    deadline = time.monotonic() + 120
    # The kill lands wherever it lands after the first chunks are noted (any chunk from the 4th on):
    # the bounds below hold for every such point and fail at each one if finished chunks are re-parsed.
    while process.poll() is None and time.monotonic() < deadline:
        if notes.exists() and notes.read_bytes().count(b"\n") >= 3:
            break
        time.sleep(0.01)
    os.killpg(process.pid, signal.SIGKILL)
    assert process.wait() == -signal.SIGKILL, "the run ended before it could be killed half-way"
    noted = notes.read_bytes().count(b"\n")
    assert 3 <= noted < 12 and not (out / "scale" / "metrics.json").exists()
    # Each finished chunk left CHUNK whole lines in every stage file; what the kill left of the chunks
    # after it is the rest of each file's whole lines.
    left = {file.stem: file.read_bytes().count(b"\n") for file in (out / "scale").glob("*.jsonl")
            if file.name != "chunks.jsonl"}
    assert {"formulate", "solve"} <= set(left) and all(lines >= noted * CHUNK for lines in left.values()), left

    monkeypatch.setattr(runner, "CHUNK", CHUNK, raising=False)
    resumed = run(RunConfig(task=path, programs=programs, out=out, workers=2))
    whole = run(RunConfig(task=path, programs=programs, out=tmp_path / "whole", workers=2))
    assert files(out) == files(tmp_path / "whole") and resumed.metrics == whole.metrics
    assert [(s.name, s.total) for s in resumed.stages] == [(s.name, s.total) for s in whole.stages]
    # The finished chunks were taken from their notes: only the records the kill left of the chunks after
    # them were parsed (none at all when the kill came before the next chunk wrote any). Re-parsing the
    # finished chunks would read noted * CHUNK more of each file, whichever chunk the kill landed in.
    assert set(resumed.records_read) <= set(left), (resumed.records_read, left)
    assert all(n <= left[file] - noted * CHUNK for file, n in resumed.records_read.items()), \
        (noted, left, resumed.records_read)
    assert sum(s.new for s in resumed.stages if s.name == "solve") <= (12 - noted) * CHUNK
    print(f"\nkilled with {noted} of 12 chunks noted; records parsed on resume: {resumed.records_read}")
    assert whole.records_read == {}  # a clean run parses no record: it holds what it wrote
