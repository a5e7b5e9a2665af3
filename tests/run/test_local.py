import subprocess
import sys

import pytest

from logicpipe.core.errors import PrerequisiteError
from logicpipe.run import LocalExecutor, make_executor
from logicpipe.run.pool import SolverCall
from tests.conftest import ROOT
from tests.run.test_pool import GOOD


def test_the_local_executor_is_the_pool_and_names_no_node():
    tasks = [SolverCall(f"ok{i}", {"solver": "csp", "program": GOOD}, 30) for i in range(3)]
    with make_executor("local", "logicpipe.solvers:execute_task", 2, 512) as executor:
        assert isinstance(executor, LocalExecutor)
        executor.check("csp")
        finished = list(executor.map(tasks))
    assert sorted(f.outcome.key for f in finished) == ["ok0", "ok1", "ok2"]
    assert {f.node for f in finished} == {None} and {f.outcome.value.verdict for f in finished} == {"A"}


def test_the_local_executor_never_imports_ray():
    code = ("import sys; from logicpipe.run import make_executor; "
            "make_executor('local', 'logicpipe.solvers:execute_task', 1, 512).close(); "
            "assert 'ray' not in sys.modules, 'ray was imported'")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert done.returncode == 0, done.stderr


def test_asking_for_ray_without_ray_names_the_install_command(monkeypatch):
    monkeypatch.setitem(sys.modules, "ray", None)  # makes `import ray` fail as if it were not installed
    with pytest.raises(PrerequisiteError, match=r"pip install 'logicpipe\[ray\]'"):
        make_executor("ray", "logicpipe.solvers:execute_task", 1, 512)
