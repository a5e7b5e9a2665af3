"""Ray on two real nodes: a head and a worker node, each in its own network namespace, joined by a veth
link. A replay through the CLI with --ray-address runs on both nodes and writes the local run's
records; a worker node killed mid-run is survived."""

import json
import subprocess
import sys
import time

import pytest

from logicpipe.testing import netns
from tests.conftest import ROOT, cli
from tests.runtime.test_ray_runs import records, without_placement

# Two `ray start`s take 15-40 s of CPU on a 2-core machine: under `make test-all` and `make test-ray-nodes`.
WHY_NOT = netns.unavailable()
pytestmark = [pytest.mark.slow, pytest.mark.skipif(WHY_NOT is not None, reason=f"two Ray nodes need namespaces: {WHY_NOT}")]

DATASET, PROGRAMS = "logicaldeduction", "LogicalDeduction_dev_gpt-4.json"
STAGES = ("solve", "interpret", "evaluate")
ALL = 300  # the dev set: long enough that a kill after 20 records lands mid-run
KILL_AFTER = 20


def replay(data_dir, out, *extra):
    return ["run", "-d", DATASET, "--data-dir", str(data_dir), "--out", str(out),
            "--programs", str(data_dir / "programs" / PROGRAMS), *extra]


@pytest.fixture(scope="module")
def local_run(data_dir, tmp_path_factory):
    out = tmp_path_factory.mktemp("local")
    done = cli(*replay(data_dir, out))
    assert done.returncode == 0, done.stderr
    assert len(records(out, "solve")) == ALL
    return out


@pytest.fixture(scope="module")
def cluster():
    with netns.Cluster(nodes=2, num_cpus=1) as made:
        yield made


@pytest.fixture
def two_nodes(cluster):
    """The module's cluster with both nodes alive (the kill test leaves the worker node dead)."""
    if not cluster.is_running(1):
        cluster.restart(1)
    return cluster


def on_ray(cluster, data_dir, out, *extra):
    """The CLI as a driver inside the head's namespace, joining the cluster by its address."""
    argv = cluster.command(0, sys.executable, "-m", "logicpipe",
                           *replay(data_dir, out, "--executor", "ray", "--ray-address", cluster.head_address, *extra))
    return subprocess.Popen(argv, cwd=ROOT, env=cluster.env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            text=True)


def same_as_local(out, local_run, count):
    ray_solved, local_solved = records(out, "solve"), records(local_run, "solve")
    assert len(ray_solved) == count
    ray_rows, local_rows = without_placement(ray_solved), without_placement(local_solved)
    differ = {key: (ray_rows[key], local_rows[key]) for key in ray_rows if ray_rows[key] != local_rows[key]}
    assert not differ, f"{len(differ)} records differ from the local run's, e.g. {next(iter(differ.values()))}"
    for stage in ("interpret", "evaluate"):
        local = records(local_run, stage)
        assert records(out, stage) == {key: local[key] for key in ray_solved}


def test_a_replay_on_two_nodes_runs_on_both_and_writes_the_local_records(two_nodes, data_dir, tmp_path, local_run):
    nodes = [n for n in two_nodes.nodes() if n["alive"]]
    assert sorted(n["address"] for n in nodes) == two_nodes.addresses  # two nodes, one per namespace
    driver = on_ray(two_nodes, data_dir, tmp_path, "--limit", "60")
    _, err = driver.communicate(timeout=300)
    assert driver.returncode == 0, err
    same_as_local(tmp_path, local_run, 60)
    ran_on = {row.get("node") for row in records(tmp_path, "solve").values()}
    assert ran_on == {n["id"] for n in nodes}  # solver calls ran on the head and on the worker node


def test_a_worker_node_killed_mid_run_is_survived(two_nodes, data_dir, tmp_path, local_run):
    worker = two_nodes.node_id(1)
    solved = tmp_path / DATASET / "solve.jsonl"
    driver = on_ray(two_nodes, data_dir, tmp_path)
    deadline, rows = time.monotonic() + 180, []
    # Wait until the worker node has answered calls, so it is busy when it dies.
    while time.monotonic() < deadline and driver.poll() is None:
        rows = [json.loads(line) for line in solved.read_text().splitlines()] if solved.exists() else []
        if len(rows) >= KILL_AFTER and any(row.get("node") == worker for row in rows):
            break
        time.sleep(0.01)
    two_nodes.kill(1)
    at_kill = len(rows)
    assert two_nodes.pids(1) == []  # the worker node's raylet, workers and solver processes are gone
    _, err = driver.communicate(timeout=300)
    assert at_kill < ALL, f"the kill came after {at_kill} records: the test did not interrupt the run"
    assert driver.returncode == 0, err
    same_as_local(tmp_path, local_run, ALL)  # every problem has a record, with the local run's answer
