"""The `logicpipe` command's start: a tiny main module, and the solver fork server started first."""

import subprocess
import sys

from logicpipe.__main__ import OWN_SOLVERS
from logicpipe.solvers import registry

from .conftest import ROOT


def test_the_preloaded_solvers_are_logicpipes_own_entry_points():
    assert set(OWN_SOLVERS) == {entry.module for entry in registry.entries().values() if entry.builtin}


def _python(code: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)


def test_workers_come_from_a_server_started_early_with_every_solver_loaded():
    # What the command does for a command that solves, then a pool as the solve stage makes one: its
    # worker already holds every solver (imported once, by the server) and none of the command line.
    done = _python(
        "from logicpipe.__main__ import OWN_SOLVERS\n"
        "from logicpipe.run.pool import SolverCall, WorkerPool, start_early\n"
        "start_early(['logicpipe.solvers', *OWN_SOLVERS])\n"
        "with WorkerPool('tests.run.targets:modules', preload=['logicpipe.cli']) as pool:\n"
        "    [outcome] = pool.map([SolverCall('one', {}, 60)])\n"
        "print(' '.join(outcome.value))\n")
    assert done.returncode == 0, done.stderr
    loaded = done.stdout.split()
    assert set(OWN_SOLVERS) <= set(loaded)
    assert "logicpipe.cli" not in loaded  # the later pool's preload came too late: the server was running


def test_parsing_a_command_line_loads_neither_the_runner_nor_the_model_client():
    # What a command runs loads in its body: `--help`, `list` or a run's options cost no more than that.
    done = _python("import sys\nimport logicpipe.cli\nprint(' '.join(sys.modules))")
    assert done.returncode == 0, done.stderr
    loaded = set(done.stdout.split())
    assert not loaded & {"logicpipe.stages.runner", "logicpipe.llm.client", "logicpipe.report.render",
                         "urllib.request", "asyncio"}


def test_the_stages_name_model_requests_without_the_client():
    done = _python("import sys\nimport logicpipe.stages.runner\nprint(' '.join(sys.modules))")
    assert done.returncode == 0, done.stderr
    assert not set(done.stdout.split()) & {"logicpipe.llm.client", "urllib.request", "asyncio"}


def test_python_dash_m_logicpipe_is_the_command():
    done = subprocess.run([sys.executable, "-m", "logicpipe", "--version"], cwd=ROOT, capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 0 and done.stdout.startswith("logicpipe ")
