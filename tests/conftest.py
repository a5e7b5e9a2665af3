import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def find_data() -> Path | None:
    """Where a user's logicpipe finds Logic-LM's files: LOGICPIPE_DATA, else the download cache."""
    chosen = os.environ.get("LOGICPIPE_DATA")
    if chosen:
        return Path(chosen) if (Path(chosen) / "data").is_dir() else None
    from logicpipe.data.fetch import cache_dir
    from logicpipe.data.registry import source

    cached = cache_dir() / "logic-lm" / source().commit
    return cached if (cached / "data").is_dir() and (cached / "programs").is_dir() else None


_DATA = find_data()  # before the autouse fixture below points LOGICPIPE_CACHE at a scratch folder


@pytest.fixture(scope="session")
def data_dir() -> Path:
    if _DATA is None:
        pytest.exit("Logic-LM data not found: set LOGICPIPE_DATA to a folder with data/ and programs/, or run "
                    "`logicpipe reproduce` once to download it into the cache", returncode=4)
    return _DATA


@pytest.fixture(autouse=True)
def _isolated_cache(tmp_path_factory, monkeypatch):
    """No test touches the user's cache or the network-default download location."""
    monkeypatch.setenv("LOGICPIPE_CACHE", str(tmp_path_factory.getbasetemp() / "cache"))
    monkeypatch.setenv("LOGICPIPE_DATA_URL", "http://127.0.0.1:9/unreachable")


@pytest.fixture(scope="session", autouse=True)
def _isolated_cache_for_fixtures(tmp_path_factory):
    """The same for module and session fixtures, which pytest sets up before the one above: without it
    test_gold_reference's runs wrote FOLIO's converted gold programs and their verdicts into
    ~/.cache/logicpipe, and read them back in the next session."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("LOGICPIPE_CACHE", str(tmp_path_factory.getbasetemp() / "cache"))
        patch.setenv("LOGICPIPE_DATA_URL", "http://127.0.0.1:9/unreachable")
        yield


def ctrl_c_default() -> None:
    """Popen's preexec_fn for a child a test interrupts: SIGINT handled as Python does by default. A
    shell that starts the test run in the background (`make test &`) leaves SIGINT ignored, and an
    ignored signal stays ignored across exec, so Ctrl-C would never reach the child."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def cli(*args: str, env: dict | None = None, timeout: float = 300) -> subprocess.CompletedProcess:
    full = dict(os.environ)
    full.update(env or {})
    return subprocess.run([sys.executable, "-m", "logicpipe", *args], capture_output=True, text=True,
                          timeout=timeout, env=full, cwd=ROOT)


def program(dataset_file: str, data: Path, problem_id: str) -> str:
    import json

    for record in json.loads((data / "programs" / dataset_file).read_text()):
        if record["id"] == problem_id:
            return record["raw_logic_programs"][0]
    raise KeyError(problem_id)


def _module_scoped(item) -> bool:
    info = getattr(item, "_fixtureinfo", None)
    return info is not None and any(defs[-1].scope == "module" for defs in info.name2fixturedefs.values())


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist reads the groups into node ids
def pytest_collection_modifyitems(config, items):
    """Under pytest-xdist (make test runs four workers), tests that share one costly session resource
    stay on one worker: the Ray cluster, the viewer's run (about 10 s to make) with the headless
    browser that reads it, the one `logicpipe reproduce` run of tests/report/test_reproduce.py, and a
    module's own runs (a fixture of module scope)."""
    for item in items:
        path = str(item.path)
        if "/tests/runtime/test_ray" in path:
            item.add_marker(pytest.mark.xdist_group("ray"))
        elif "/tests/report/viewer/" in path:
            item.add_marker(pytest.mark.xdist_group("viewer"))
        elif "reproduced" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.xdist_group("reproduce"))
        elif _module_scoped(item):
            # A module's own runs (a fixture of module scope) are made once per worker that takes one of
            # its tests: kept on one worker, they are made once (test_diff's took 4 s on each of three).
            item.add_marker(pytest.mark.xdist_group(item.nodeid.split("::")[0]))
