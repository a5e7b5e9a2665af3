from logicpipe.isolation import Task, WorkerPool

HOG = "Variables:\nx [IN] range(0, 200000000)\nConstraints:\nx > 1\nQuery:\nA) x == 2\n"
LOOP_FACTS = "\n".join(f"R(c{i}, True)" for i in range(80))
LOOP = (f"Facts:\n{LOOP_FACTS}\nRules:\nR($a, True) && R($b, True) && R($c, True) && R($d, True) "
        ">>> S($a, $b, $c, $d, True)\nQuery:\nS(c1, c1, c1, c1, True)\n")
GOOD = "Variables:\nx [IN] [1, 2]\nConstraints:\nx > 1\nQuery:\nA) x == 2\n"


def test_one_bad_call_cannot_hang_or_kill_the_others():
    tasks = [
        Task("hog", {"solver": "csp", "program": HOG}, 60),
        Task("hang", {"solver": "lp", "program": LOOP, "limits": {"seconds": 60}}, 1.5),
        *[Task(f"ok{i}", {"solver": "csp", "program": GOOD}, 30) for i in range(4)],
    ]
    with WorkerPool("logicpipe.solvers:execute_task", workers=2, memory_mb=400) as pool:
        outcomes = {o.key: o for o in pool.map(tasks)}
    assert set(outcomes) == {t.key for t in tasks}
    assert outcomes["hang"].status == "timeout"
    assert outcomes["hog"].status in ("error", "crashed")
    assert "memory" in outcomes["hog"].message
    for i in range(4):
        assert outcomes[f"ok{i}"].value.verdict == "A"
        assert outcomes[f"ok{i}"].value.explanation == {"solutions": 1, "sample": [{"x": 2}], "entailed": "A"}
