import subprocess
import sys
from functools import partial

import pytest

from logicpipe.core.errors import PrerequisiteError
from logicpipe.runtime import LocalExecutor, make_executor
from logicpipe.runtime.executor import check_solver
from logicpipe.runtime.pool import SolverCall, WorkerPool
from tests.conftest import ROOT
from tests.runtime.test_pool import GOOD


def test_the_local_executor_is_the_pool_and_names_no_node():
    tasks = [SolverCall(f"ok{i}", {"solver": "csp", "program": GOOD}, 30) for i in range(3)]
    with make_executor("local", "logicpipe.solvers:execute_task", 2, 512) as executor:
        assert isinstance(executor, LocalExecutor)
        executor.check("csp")
        finished = list(executor.map(tasks))
    assert sorted(f.outcome.key for f in finished) == ["ok0", "ok1", "ok2"]
    assert {f.node for f in finished} == {None} and {f.outcome.value.verdict for f in finished} == {"A"}


def test_a_worker_loads_its_solvers_library_before_it_takes_a_call():
    # The command only looks for python-constraint (Solver.check); the worker's setup imports it, so the
    # first call's time bound does not pay for the import. Without the setup, no worker holds it.
    call = SolverCall("one", {"module": "constraint"}, 60)
    with WorkerPool("tests.runtime.targets:loaded", setup=partial(check_solver, "csp")) as pool:
        [outcome] = pool.map([call])
    assert outcome.status == "ok" and outcome.value is True
    with WorkerPool("tests.runtime.targets:loaded") as pool:
        [outcome] = pool.map([call])
    assert outcome.status == "ok" and outcome.value is False


def test_the_local_executor_never_imports_ray():
    code = ("import sys; from logicpipe.runtime import make_executor; "
            "make_executor('local', 'logicpipe.solvers:execute_task', 1, 512).close(); "
            "assert 'ray' not in sys.modules, 'ray was imported'")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert done.returncode == 0, done.stderr


def test_asking_for_ray_without_ray_names_the_install_command(monkeypatch):
    monkeypatch.setitem(sys.modules, "ray", None)  # makes `import ray` fail as if it were not installed
    with pytest.raises(PrerequisiteError, match=r"pip install 'logicpipe\[ray\]'"):
        make_executor("ray", "logicpipe.solvers:execute_task", 1, 512)
