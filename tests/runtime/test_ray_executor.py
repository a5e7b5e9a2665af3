"""The Ray executor on one local Ray: bounds, failures, retries and the per-node solver check."""

import pytest

from logicpipe.core.errors import PrerequisiteError
from logicpipe.runtime.pool import SolverCall
from logicpipe.runtime.ray_executor import RayExecutor
from tests.runtime.test_pool import GOOD, HOG, LOOP

# Ray starts a cluster (~10 s) and notices dead workers slowly: under `make test-all`, not `make test`.
pytestmark = pytest.mark.slow

MISBEHAVE = "tests.runtime.targets:misbehave"


def run(tasks, target="logicpipe.solvers:execute_task", memory_mb=400, retries=1):
    with RayExecutor(target, memory_mb, retries=retries) as executor:
        return {f.outcome.key: f for f in executor.map(tasks)}


def test_calls_on_ray_stay_bounded_in_time_and_memory_and_say_which_node_ran_them(ray_cluster):
    tasks = [SolverCall("hog", {"solver": "csp", "program": HOG}, 60),
             SolverCall("hang", {"solver": "lp", "program": LOOP, "limits": {"seconds": 60}}, 1.5),
             *[SolverCall(f"ok{i}", {"solver": "csp", "program": GOOD}, 30) for i in range(4)]]
    finished = run(tasks)
    assert set(finished) == {t.key for t in tasks}
    assert finished["hang"].outcome.status == "timeout"
    assert finished["hog"].outcome.status in ("error", "crashed") and "memory" in finished["hog"].outcome.message
    assert all(finished[f"ok{i}"].outcome.value.verdict == "A" for i in range(4))
    assert {f.node for f in finished.values()} == {ray_cluster.get_runtime_context().get_node_id()}


def test_a_call_that_raises_or_exits_is_an_error_and_the_rest_go_on(ray_cluster):
    finished = run([SolverCall("raise", {"do": "raise"}, 20), SolverCall("exit", {"do": "exit"}, 20),
                    SolverCall("fine", {"do": "fine"}, 20)], target=MISBEHAVE)
    assert (finished["raise"].outcome.status, finished["raise"].outcome.message) == ("error", "ValueError: the solver broke")
    assert finished["exit"].outcome.status == "crashed" and "exited unexpectedly" in finished["exit"].outcome.message
    assert finished["fine"].outcome.value == "done fine"


@pytest.mark.slow  # Ray takes ~10 s to notice each dead worker
def test_a_dead_ray_worker_is_retried_then_recorded_as_crashed(ray_cluster, tmp_path):
    once = {"do": "kill-ray-worker", "marker": str(tmp_path / "killed-once")}
    finished = run([SolverCall("once", once, 20), SolverCall("always", {"do": "kill-ray-worker"}, 20)],
                   target=MISBEHAVE, retries=1)
    assert finished["once"].outcome.status == "ok" and finished["once"].outcome.value == "done kill-ray-worker"
    always = finished["always"].outcome
    assert always.status == "crashed" and always.message.startswith("Ray worker failed 2 times"), always.message
    assert finished["always"].node is None


def test_the_solver_check_runs_on_every_node_and_names_the_one_that_lacks_it(ray_cluster):
    node = ray_cluster.get_runtime_context().get_node_id()
    assert [n["NodeManagerAddress"] for n in ray_cluster.nodes()] == ["127.0.0.1"]
    with RayExecutor("logicpipe.solvers:execute_task", 512) as executor:
        for solver in ("lp", "fol", "csp", "smt"):
            executor.check(solver)
        with pytest.raises(PrerequisiteError, match=f"cannot run on 1 of 1 Ray nodes.*node {node}.*unknown solver"):
            executor.check("prolgo")
