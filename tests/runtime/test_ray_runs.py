"""Whole runs on Ray: the same records as the local pool, and a killed driver resumes."""

import json
import signal
import subprocess
import sys
import time

import pytest

from logicpipe.stages import RunConfig, run_stages
from tests.conftest import ROOT

STAGES = ("solve", "interpret", "evaluate")
LIMIT = 80  # enough calls that a driver killed after its second record is killed mid-run


def config(data_dir, out, **extra):
    return RunConfig(dataset="logicaldeduction", data_dir=data_dir, out=out, limit=LIMIT, workers=2,
                     programs=data_dir / "programs" / "LogicalDeduction_dev_gpt-4.json", **extra)


def records(out, stage):
    lines = (out / "logicaldeduction" / f"{stage}.jsonl").read_text().splitlines()
    return {r["id"]: r for r in map(json.loads, lines)}


def without_placement(rows):
    return {key: {k: v for k, v in row.items() if k not in ("seconds", "node")} for key, row in rows.items()}


@pytest.fixture(scope="module")
def local_run(data_dir, tmp_path_factory):
    out = tmp_path_factory.mktemp("local")
    run_stages(config(data_dir, out), ["formulate", *STAGES])
    return out


def same_as_local(out, local_run, nodes):
    for stage in STAGES:
        assert len(records(out, stage)) == LIMIT
    ray_solved = records(out, "solve")
    assert without_placement(ray_solved) == without_placement(records(local_run, "solve"))
    assert {row["node"] for row in ray_solved.values()} <= nodes
    assert all("node" not in row for row in records(local_run, "solve").values())  # local records unchanged
    for stage in ("interpret", "evaluate"):
        assert records(out, stage) == records(local_run, stage)


def test_a_replay_on_ray_writes_the_records_the_local_pool_writes(ray_cluster, data_dir, tmp_path, local_run):
    run_stages(config(data_dir, tmp_path, executor="ray"), ["formulate", *STAGES])
    same_as_local(tmp_path, local_run, {ray_cluster.get_runtime_context().get_node_id()})


@pytest.mark.slow  # a killed Ray driver takes ~15 s to clean up
def test_a_driver_killed_mid_run_resumes_on_the_next_run(ray_cluster, data_dir, tmp_path, local_run):
    command = [sys.executable, "-m", "logicpipe", "run", "-d", "logicaldeduction", "--data-dir", str(data_dir),
               "--out", str(tmp_path), "--limit", str(LIMIT), "--programs",
               str(data_dir / "programs" / "LogicalDeduction_dev_gpt-4.json"), "--executor", "ray",
               "--ray-address", ray_cluster.get_runtime_context().gcs_address]
    solved = tmp_path / "logicaldeduction" / "solve.jsonl"
    driver = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    while not (solved.exists() and solved.read_text().count("\n") >= 2) and time.monotonic() < deadline:
        time.sleep(0.01)
    driver.send_signal(signal.SIGKILL)
    driver.wait(30)
    first = solved.read_text().count("\n")
    assert 2 <= first < LIMIT, f"the kill came after {first} records: the test did not interrupt the run"
    # The whole records the killed run wrote, as written (their `seconds` and `node` are its own).
    kept = {json.loads(line)["id"]: line for line in solved.read_text().splitlines(keepends=True)
            if line.endswith("\n")}
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    lines = solved.read_text().splitlines(keepends=True)
    assert len(lines) == LIMIT
    # The second run added only what was missing: every record of the killed run is there unchanged
    # (one solved again would carry this run's own time).
    now = {json.loads(line)["id"]: line for line in lines}
    assert [i for i, line in kept.items() if now[i] != line] == []
    same_as_local(tmp_path, local_run, {ray_cluster.get_runtime_context().get_node_id()})
