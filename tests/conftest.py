import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def shared_data() -> Path:
    chosen = os.environ.get("LOGICPIPE_DATA")
    return Path(chosen) if chosen else ROOT.parent / "shared" / "logic-lm"


@pytest.fixture(scope="session")
def data_dir() -> Path:
    path = shared_data()
    assert (path / "data").is_dir(), f"Logic-LM data not found at {path}; set LOGICPIPE_DATA"
    return path


@pytest.fixture(autouse=True)
def _isolated_cache(tmp_path_factory, monkeypatch):
    """No test touches the user's cache or the network-default download location."""
    monkeypatch.setenv("LOGICPIPE_CACHE", str(tmp_path_factory.getbasetemp() / "cache"))
    monkeypatch.setenv("LOGICPIPE_DATA_URL", "http://127.0.0.1:9/unreachable")


def cli(*args: str, env: dict | None = None, timeout: float = 300) -> subprocess.CompletedProcess:
    full = dict(os.environ)
    full.update(env or {})
    return subprocess.run([sys.executable, "-m", "logicpipe.cli", *args], capture_output=True, text=True,
                          timeout=timeout, env=full, cwd=ROOT)


def program(dataset_file: str, data: Path, problem_id: str) -> str:
    import json

    for record in json.loads((data / "programs" / dataset_file).read_text()):
        if record["id"] == problem_id:
            return record["raw_logic_programs"][0]
    raise KeyError(problem_id)
