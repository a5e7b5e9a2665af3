"""Task functions that misbehave on purpose, for the executor tests (run inside isolation workers)."""

import os
import signal
import sys
from pathlib import Path


def misbehave(payload: dict) -> str:
    action = payload["do"]
    if action == "raise":
        raise ValueError("the solver broke")
    if action == "exit":
        os._exit(3)
    if action == "kill-ray-worker":
        # The isolation worker's parent is the pool's fork server, whose parent is the Ray worker.
        # With a marker path, only the first attempt kills, so Ray's retry can succeed.
        marker = payload.get("marker")
        if marker is None or not Path(marker).exists():
            if marker is not None:
                Path(marker).touch()
            server = os.getppid()
            os.kill(int(Path(f"/proc/{server}/stat").read_text().rsplit(")", 1)[1].split()[1]), signal.SIGKILL)
    return f"done {action}"


def modules(payload: dict) -> list[str]:
    """The logicpipe modules a worker holds when it takes its first call."""
    return sorted(name for name in sys.modules if name.startswith("logicpipe"))


def loaded(payload: dict) -> bool:
    """Whether this worker holds the module the payload names when it takes the call."""
    return payload["module"] in sys.modules


def registry_read(payload: dict) -> int:
    """Whether this worker holds the installed solvers' entry points (1) before it has asked for them."""
    from logicpipe.solvers import registry

    return registry.entries.cache_info().currsize


def collector(payload: dict) -> list[int]:
    """Whether this worker's garbage collector runs (1), and how many objects it leaves alone (frozen)."""
    import gc

    return [int(gc.isenabled()), gc.get_freeze_count()]
