"""The worker pool on real solver programs and on small targets defined here (the workers import
this module by name)."""

import json
import os
import resource
import signal
import subprocess
import sys
import textwrap
import time
from functools import partial

import pytest

from logicpipe.core.errors import PrerequisiteError
from logicpipe.runtime.pool import Outcome, SolverCall, WorkerPool

HOG = "Variables:\nx [IN] range(0, 200000000)\nConstraints:\nx > 1\nQuery:\nA) x == 2\n"
LOOP_FACTS = "\n".join(f"R(c{i}, True)" for i in range(80))
LOOP = (f"Facts:\n{LOOP_FACTS}\nRules:\nR($a, True) && R($b, True) && R($c, True) && R($d, True) "
        ">>> S($a, $b, $c, $d, True)\nQuery:\nS(c1, c1, c1, c1, True)\n")
GOOD = "Variables:\nx [IN] [1, 2]\nConstraints:\nx > 1\nQuery:\nA) x == 2\n"
HERE = "tests.runtime.test_pool"


def nap(payload):
    time.sleep(payload["seconds"])
    return os.getpid()


def spin(payload):
    while True:
        pass


def cpu_limit(payload):
    soft, _ = resource.getrlimit(resource.RLIMIT_CPU)
    return soft - sum(resource.getrusage(resource.RUSAGE_SELF)[:2])


def burn_past_cpu_limit(payload):
    # As a solver would that outran the CPU budget the worker set: the kernel ends it with SIGXCPU.
    used = sum(resource.getrusage(resource.RUSAGE_SELF)[:2])
    resource.setrlimit(resource.RLIMIT_CPU, (int(used) + 1, resource.RLIM_INFINITY))
    spin(payload)


def test_one_bad_call_cannot_hang_or_kill_the_others():
    tasks = [
        SolverCall("hog", {"solver": "csp", "program": HOG}, 60),
        # Its derivations fill the 400 MB bound in about 1.5 s on a fast machine: this deadline comes first.
        SolverCall("hang", {"solver": "lp", "program": LOOP, "limits": {"seconds": 60}}, 0.5),
        *[SolverCall(f"ok{i}", {"solver": "csp", "program": GOOD}, 30) for i in range(4)],
    ]
    with WorkerPool("logicpipe.solvers:execute_task", workers=2, memory_mb=400) as pool:
        outcomes = {o.key: o for o in pool.map(tasks)}
    assert set(outcomes) == {t.key for t in tasks}
    assert outcomes["hang"].status == "timeout"
    assert outcomes["hog"].status in ("error", "crashed")
    assert "memory" in outcomes["hog"].message
    for i in range(4):
        outcome = outcomes[f"ok{i}"]
        assert isinstance(outcome, Outcome) and outcome.status == "ok"
        assert outcome.value.verdict == "A" and outcome.value.error is None
        assert outcome.value.explanation == {"solutions": 1, "sample": [{"x": 2}], "entailed": "A"}


def test_a_queued_task_is_not_charged_for_the_one_before_it():
    # Each nap takes 1 s of its 1.6 s; had the second's clock started when it was queued behind the
    # first, it would time out.
    tasks = [SolverCall(f"nap{i}", {"seconds": 1.0}, 1.6) for i in range(3)]
    with WorkerPool(f"{HERE}:nap", workers=1) as pool:
        outcomes = list(pool.map(tasks))
    assert [o.status for o in outcomes] == ["ok"] * 3
    assert len({o.value for o in outcomes}) == 1  # one worker ran them all
    assert all(0.95 < o.seconds < 1.6 for o in outcomes)


def test_tasks_queued_behind_a_timeout_go_to_a_fresh_worker():
    tasks = [SolverCall("stuck", {"seconds": 30}, 0.5), *[SolverCall(f"ok{i}", {"seconds": 0}, 5) for i in range(3)]]
    with WorkerPool(f"{HERE}:nap", workers=1) as pool:
        outcomes = {o.key: o for o in pool.map(tasks)}
    assert outcomes["stuck"].status == "timeout" and "0.5 s" in outcomes["stuck"].message
    assert [outcomes[f"ok{i}"].status for i in range(3)] == ["ok"] * 3


def test_each_task_runs_under_its_own_cpu_limit():
    with WorkerPool(f"{HERE}:cpu_limit", workers=1) as pool:
        outcomes = {o.key: o for o in pool.map([SolverCall("short", {}, 10), SolverCall("short again", {}, 10),
                                                SolverCall("long", {}, 100), SolverCall("short after", {}, 10)])}
    # The hard bound plus slack, counted from the CPU time the worker had used already (a limit already
    # set is kept, not set again).
    for key in ("short", "short again", "short after"):
        assert 14 <= outcomes[key].value <= 16
    assert 104 <= outcomes["long"].value <= 106


def test_running_out_of_cpu_time_is_a_timeout():
    with WorkerPool(f"{HERE}:burn_past_cpu_limit", workers=1) as pool:
        outcomes = {o.key: o for o in pool.map([SolverCall("burn", {}, 30)])}
    assert outcomes["burn"].status == "timeout" and "CPU time limit of 35 s" in outcomes["burn"].message
    assert outcomes["burn"].seconds < 5


POOL_IN_A_CHILD = textwrap.dedent("""
    import threading, time
    from logicpipe.runtime.pool import SolverCall, WorkerPool
    pool = WorkerPool("tests.runtime.test_pool:spin", workers=2)
    threading.Thread(target=lambda: list(pool.map([SolverCall(str(i), {}, 600) for i in range(4)])), daemon=True).start()
    while len(pool.pids) < 2:
        time.sleep(0.05)
    print(*pool.pids, flush=True)
    time.sleep(600)
""")


def _alive(pid):
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except FileNotFoundError:
        return False


@pytest.mark.parametrize("how", [signal.SIGKILL, signal.SIGTERM], ids=["SIGKILL", "SIGTERM"])
def test_workers_die_with_their_parent(how):
    child = subprocess.Popen([sys.executable, "-c", POOL_IN_A_CHILD], stdout=subprocess.PIPE, text=True,
                             cwd=os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
    try:
        pids = [int(p) for p in child.stdout.readline().split()]
        assert len(pids) == 2
        time.sleep(0.5)  # the workers are spinning now
        assert all(_alive(pid) for pid in pids)
        child.send_signal(how)
        child.wait(10)
        deadline = time.monotonic() + 5
        while any(_alive(pid) for pid in pids) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not any(_alive(pid) for pid in pids)
    finally:
        child.kill()
        child.wait()


def refuse() -> str:
    return "the solver's binary is missing on this machine"


def test_workers_that_cannot_start_stop_the_pool_with_the_reason_and_no_outcome():
    tasks = [SolverCall(f"t{i}", {"seconds": 0}, 30) for i in range(6)]
    with WorkerPool(f"{HERE}:nap", workers=2, setup=refuse) as pool:
        seen = []
        with pytest.raises(PrerequisiteError, match="^solver workers cannot start: the solver's binary is missing"):
            for outcome in pool.map(tasks):
                seen.append(outcome)
    assert seen == []  # no call is blamed for a worker that never ran one


def test_a_target_that_does_not_import_is_named():
    with WorkerPool("tests.runtime.no_such_module:call", workers=1) as pool:
        with pytest.raises(PrerequisiteError, match="ModuleNotFoundError: No module named 'tests.runtime.no_such_module'"):
            list(pool.map([SolverCall("a", {}, 30)]))


def test_a_worker_that_dies_before_it_can_say_why_is_told_by_its_exit_code():
    with WorkerPool("tests.runtime.dies_on_import:call", workers=1) as pool:
        with pytest.raises(PrerequisiteError, match=r"exit code 7\) before it ran any program"):
            list(pool.map([SolverCall("a", {}, 30)]))


def test_one_worker_that_fails_to_start_costs_no_call(tmp_path):
    # The first worker's setup fails once (a marker file remembers); its calls go to the next worker.
    marker = tmp_path / "failed-once"
    with WorkerPool(f"{HERE}:nap", workers=1, setup=partial(_fail_once, str(marker))) as pool:
        outcomes = list(pool.map([SolverCall(f"t{i}", {"seconds": 0}, 30) for i in range(3)]))
    assert marker.exists()
    assert sorted(o.key for o in outcomes) == ["t0", "t1", "t2"] and {o.status for o in outcomes} == {"ok"}


def _fail_once(marker: str) -> str | None:
    if os.path.exists(marker):
        return None
    open(marker, "w").close()
    return "a passing fault"


def console(*args: str, cwd, data_dir) -> subprocess.CompletedProcess:
    """The installed `logicpipe` command, as a user runs it from `cwd`."""
    command = os.path.join(os.path.dirname(sys.executable), "logicpipe")
    env = {**os.environ, "LOGICPIPE_DATA": str(data_dir)}
    return subprocess.run([command, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


def solved(out, dataset):
    path = out / dataset / "solve.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def test_a_logicpipe_folder_in_the_working_directory_changes_nothing_in_the_workers(data_dir, tmp_path):
    # A results folder (no __init__.py) and a stale checkout (one that fails on import) by that name.
    (tmp_path / "logicpipe").mkdir()
    (tmp_path / "logicpipe" / "notes.txt").write_text("not a package")
    (tmp_path / "z3").mkdir()
    (tmp_path / "z3" / "__init__.py").write_text("raise ImportError('the shadowing z3 folder was imported')\n")
    programs = data_dir / "programs" / "ProntoQA_dev_gpt-4.json"
    done = console("run", "-d", "prontoqa", "-n", "4", "-w", "2", "--programs", str(programs), "--max-rounds", "0",
                   "--out", str(tmp_path / "out"), cwd=tmp_path, data_dir=data_dir)
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    records = solved(tmp_path / "out", "prontoqa")
    assert len(records) == 4 and all(r["error"] is None and r["verdict"] for r in records)


# A pool started by a script with no `if __name__ == "__main__":` guard. Each worker that ran the
# script again (as Python does for a new process's main module) would start a pool inside itself.
UNGUARDED = textwrap.dedent("""
    import os
    from logicpipe.runtime.pool import SolverCall, WorkerPool
    with WorkerPool("tests.runtime.test_pool:nap", workers=2) as pool:
        outcomes = pool.map([SolverCall(str(i), {"seconds": 0}, 60) for i in range(4)])
    print(sorted(o.status for o in outcomes), all(o.value != os.getpid() for o in outcomes))
""")


@pytest.mark.parametrize("how", ["stdin", "script"])
def test_workers_start_from_python_fed_on_stdin_and_from_an_unguarded_script(how, tmp_path):
    # On stdin the main module is `<stdin>`, which a worker cannot re-run: every worker died on start.
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env = {**os.environ, "PYTHONPATH": root}
    if how == "stdin":
        done = subprocess.run([sys.executable, "-"], input=UNGUARDED, cwd=tmp_path, env=env,
                              capture_output=True, text=True, timeout=120)
    else:
        (tmp_path / "start.py").write_text(UNGUARDED)
        done = subprocess.run([sys.executable, "start.py"], cwd=tmp_path, env=env, capture_output=True, text=True,
                              timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["['ok',", "'ok',", "'ok',", "'ok']", "True"]
