"""Joining a Ray cluster that is not there ends within the connect bound, in one line, exit 2."""

import socket
import threading
import time

import pytest

from logicpipe.core.errors import UsageError
from logicpipe.runtime.ray_executor import LOOPBACK_SWITCH, _bounded
from tests.conftest import cli
from tests.data.test_taskfiles import FILES

# Ray's connect would retry for minutes; the test's own limit is well past the bound it checks.
LIMIT = 120
# Nothing leaves the machine: Ray keeps 127.0.0.1 instead of swapping in the machine's outside address.
LOOPBACK = {LOOPBACK_SWITCH: "0", "RAY_ADDRESS": ""}


def join(address: str, out, *extra: str):
    started = time.monotonic()
    done = cli("run", "--task", str(FILES / "cats.yaml"), "--programs", str(FILES / "cats_programs.json"),
               "--out", str(out), "--executor", "ray", "--ray-address", address, *extra,
               env=LOOPBACK, timeout=LIMIT)
    return done, time.monotonic() - started


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def one_line(done, address: str) -> str:
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr  # no Ray log lines, no traceback
    assert lines[0].startswith(f"error: cannot join the Ray cluster at {address}: ")
    assert "internal error" not in lines[0] and "check that its head is running" in lines[0]
    return lines[0]


def test_an_address_where_nothing_listens_is_one_line_at_once_and_nothing_is_written(tmp_path):
    address = f"127.0.0.1:{free_port()}"
    done, seconds = join(address, tmp_path / "out")
    assert "refused" in one_line(done, address).lower()
    assert seconds < 30, seconds  # the default bound
    assert not (tmp_path / "out").exists()  # refused before the lock and run.json


@pytest.fixture
def silent_listener():
    """A port that accepts connections and never says a word: Ray's connect would wait on it for minutes."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    held: list[socket.socket] = []

    def accept() -> None:
        try:
            while True:
                held.append(server.accept()[0])
        except OSError:  # closed when the test ends
            pass

    threading.Thread(target=accept, daemon=True).start()
    yield f"127.0.0.1:{server.getsockname()[1]}"
    server.close()
    for connection in held:
        connection.close()


def test_a_port_that_never_answers_as_ray_ends_at_the_connect_bound(tmp_path, silent_listener):
    # 6 s: past the 5 s after which Ray logs its first retry warning, which must not show.
    done, seconds = join(silent_listener, tmp_path / "out", "--ray-connect-timeout", "6")
    assert "within 6 s (--ray-connect-timeout)" in one_line(done, silent_listener)
    assert 6 <= seconds < 20, seconds
    assert not (tmp_path / "out").exists()


@pytest.mark.slow  # starts the session's Ray (~10 s)
def test_a_cluster_that_answers_is_joined_and_solves(tmp_path, ray_cluster):
    address = ray_cluster.get_runtime_context().gcs_address
    done, _ = join(address, tmp_path / "out")
    assert done.returncode == 0, done.stderr
    solved = (tmp_path / "out" / "cats" / "solve.jsonl").read_text().splitlines()
    assert len(solved) == 4 and all('"node":' in line for line in solved)


def test_a_join_that_hangs_past_the_deadline_is_given_up_in_one_line():
    # The last guard: ray.init itself, should it hang after the cluster answered the child's question.
    started = time.monotonic()
    with pytest.raises(UsageError, match="at 127.0.0.1:9: no Ray cluster answered within 0.5 s"):
        _bounded(threading.Event().wait, "127.0.0.1:9", started + 0.5, 0.5)
    assert time.monotonic() - started < 5
    with pytest.raises(UsageError, match=r"at 127.0.0.1:9: ConnectionError: refused; check"):
        _bounded(refuse, "127.0.0.1:9", time.monotonic() + 5, 5)


def refuse() -> None:
    raise ConnectionError("refused\nand Ray's many lines after it")
