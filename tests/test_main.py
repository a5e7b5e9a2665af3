"""The `logicpipe` command's start: a tiny main module, and the solver fork server started first."""

import json
import subprocess
import sys

from .conftest import ROOT


def _python(code: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)


def test_workers_come_from_a_server_started_early_that_has_read_the_solver_registry():
    # What the command does for a command that solves, then a pool as the solve stage makes one: its
    # workers hold the pool and the registry (read once, by the server) and none of the command line.
    done = _python(
        "from logicpipe.runtime.pool import SolverCall, WorkerPool, start_early\n"
        "start_early(['logicpipe.runtime.ready'])\n"
        "with WorkerPool('tests.runtime.targets:modules', preload=['logicpipe.cli']) as pool:\n"
        "    [outcome] = pool.map([SolverCall('one', {}, 60)])\n"
        "print(' '.join(outcome.value))\n"
        "with WorkerPool('tests.runtime.targets:registry_read') as pool:\n"
        "    [outcome] = pool.map([SolverCall('one', {}, 60)])\n"
        "print(outcome.value)\n"
        "with WorkerPool('tests.runtime.targets:collector') as pool:\n"
        "    [outcome] = pool.map([SolverCall('one', {}, 60)])\n"
        "print(*outcome.value)\n")
    assert done.returncode == 0, done.stderr
    loaded, reads, collector = done.stdout.splitlines()
    enabled, frozen = map(int, collector.split())
    assert enabled == 1 and frozen > 10_000  # what the server loaded is left out of the workers' collections
    assert {"logicpipe.runtime.ready", "logicpipe.runtime.pool", "logicpipe.solvers.registry"} <= set(loaded.split())
    assert "logicpipe.cli" not in loaded.split()  # the later pool's preload came too late: the server was running
    assert reads == "1"  # the worker, which never asked for them, holds the entry points the server read


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


def test_a_built_in_dataset_is_read_without_pyyaml():
    # The built-in task files are JSON: a command on a built-in dataset does not import PyYAML (20 ms).
    done = _python("import sys\nfrom logicpipe.data import get_dataset, all_datasets\n"
                   "get_dataset('LogicalDeduction'); all_datasets()\nprint('yaml' in sys.modules)")
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["False"]


def test_the_command_collects_garbage_once_started_and_leaves_what_it_loaded_alone():
    # The collector is off while the command line loads, then on, with the loaded objects frozen.
    done = _python("import gc, sys\n"
                   "import logicpipe.cli\n"
                   "seen = []\n"
                   "logicpipe.cli.main = lambda: seen.append((gc.isenabled(), gc.get_freeze_count()))\n"
                   "from logicpipe import __main__ as command\n"
                   "command._leave = lambda code: None\n"
                   "sys.argv = ['logicpipe', 'list']\n"
                   "command.main()\n"
                   "print(*seen[0])\n")
    assert done.returncode == 0, done.stderr
    enabled, frozen = done.stdout.split()
    assert enabled == "True" and int(frozen) > 10_000


def _run_command(data_dir, out, probe: str, prelude: str = "") -> str:
    """`logicpipe run` on three LogicalDeduction problems, as the command runs it; the last line it
    prints is `exit <code> <probe>`, the expression evaluated in the command's process as it ends."""
    programs = data_dir / "programs" / "LogicalDeduction_dev_gpt-4.json"
    done = _python(
        prelude + "import sys\n"
        "from logicpipe import __main__ as command\n"
        f"command._leave = lambda code: print('exit', code, {probe})\n"
        f"sys.argv = ['logicpipe', 'run', '-d', 'logicaldeduction', '--data-dir', {str(data_dir)!r}, '--limit', '3',\n"
        f"            '--programs', {str(programs)!r}, '--out', {str(out)!r}]\n"
        "command.main()\n")
    assert done.returncode == 0, done.stderr
    solved = [json.loads(line) for line in (out / "logicaldeduction" / "solve.jsonl").read_text().splitlines()]
    assert len(solved) == 3 and all(record["verdict"] and record["verdict"] in "ABCDE" for record in solved)
    return done.stdout.splitlines()[-1]


def test_a_run_leaves_its_solvers_library_to_the_workers(data_dir, tmp_path):
    # The command checks that python-constraint is installed without importing it (10-30 ms on its
    # path); its workers import it (tests/runtime/test_local.py), and solve.
    assert _run_command(data_dir, tmp_path, "'constraint' in sys.modules") == "exit 0 False"


_TRACKERS = (
    "import os\n"
    "def trackers():  # this process's children that are multiprocessing's resource tracker\n"
    "    found = []\n"
    "    for pid in filter(str.isdigit, os.listdir('/proc')):\n"
    "        try:\n"
    "            parent = int(open(f'/proc/{pid}/stat').read().rsplit(')', 1)[1].split()[1])\n"
    "            command = open(f'/proc/{pid}/cmdline', 'rb').read()\n"
    "        except OSError:\n"
    "            continue\n"
    "        if parent == os.getpid() and b'resource_tracker' in command:\n"
    "            found.append(pid)\n"
    "    return found\n")


def test_the_command_starts_its_workers_without_a_resource_tracker(data_dir, tmp_path):
    # Python would start one with the fork server: a third process at every start, watching nothing
    # the pool makes. The run still solves; the same probe finds the tracker Python starts otherwise.
    assert _run_command(data_dir, tmp_path, "len(trackers())", prelude=_TRACKERS) == "exit 0 0"
    usual = _python(_TRACKERS + "from multiprocessing import resource_tracker\n"
                    "resource_tracker.ensure_running()\nprint(len(trackers()))\n")
    assert usual.returncode == 0 and usual.stdout.split() == ["1"], usual.stderr
