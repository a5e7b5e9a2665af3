"""The worker pool on real solver programs and on small targets defined here (the workers import
this module by name)."""

import os
import resource
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from logicpipe.run.pool import Outcome, SolverCall, WorkerPool

HOG = "Variables:\nx [IN] range(0, 200000000)\nConstraints:\nx > 1\nQuery:\nA) x == 2\n"
LOOP_FACTS = "\n".join(f"R(c{i}, True)" for i in range(80))
LOOP = (f"Facts:\n{LOOP_FACTS}\nRules:\nR($a, True) && R($b, True) && R($c, True) && R($d, True) "
        ">>> S($a, $b, $c, $d, True)\nQuery:\nS(c1, c1, c1, c1, True)\n")
GOOD = "Variables:\nx [IN] [1, 2]\nConstraints:\nx > 1\nQuery:\nA) x == 2\n"
HERE = "tests.run.test_pool"


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
        SolverCall("hang", {"solver": "lp", "program": LOOP, "limits": {"seconds": 60}}, 1.5),
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
        outcomes = {o.key: o for o in pool.map([SolverCall("short", {}, 10), SolverCall("long", {}, 100)])}
    # The hard bound plus slack, counted from the CPU time the worker had used already.
    assert 14 <= outcomes["short"].value <= 16
    assert 104 <= outcomes["long"].value <= 106


def test_running_out_of_cpu_time_is_a_timeout():
    with WorkerPool(f"{HERE}:burn_past_cpu_limit", workers=1) as pool:
        outcomes = {o.key: o for o in pool.map([SolverCall("burn", {}, 30)])}
    assert outcomes["burn"].status == "timeout" and "CPU time limit of 35 s" in outcomes["burn"].message
    assert outcomes["burn"].seconds < 5


POOL_IN_A_CHILD = textwrap.dedent("""
    import threading, time
    from logicpipe.run.pool import SolverCall, WorkerPool
    pool = WorkerPool("tests.run.test_pool:spin", workers=2)
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
