"""The README's quick start, pasted into a fresh clone: the block after the `<!-- quickstart -->` marker
runs verbatim in bash, in a `git clone` of this repository, with a PATH that has no logicpipe on it and
no LOGICPIPE_DATA, as a newcomer's shell would be. The fast variant lends the clone this checkout's
.venv (a link), so `make setup` finds everything in place; the slow one lets `make setup` build a
.venv of its own."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from .blocks import ROOT, quickstart_block


def fresh_clone(tmp_path: Path) -> Path:
    if not (ROOT / ".git").exists() or shutil.which("git") is None:
        if os.environ.get("CI") == "true":
            pytest.fail("the quick-start test needs a git checkout and git")
        pytest.skip("not a git checkout: nothing to clone")
    clone = tmp_path / "clone"
    done = subprocess.run(["git", "clone", "--quiet", str(ROOT), str(clone)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return clone


def newcomer_env(tmp_path: Path) -> dict[str, str]:
    env = {key: value for key, value in os.environ.items()
           if key not in ("LOGICPIPE_DATA", "VIRTUAL_ENV", "PYTHONPATH") and not key.startswith("PYTEST")}
    # A shell that has never activated a venv: no logicpipe on PATH, so the README must say how.
    env["PATH"] = os.pathsep.join(part for part in os.environ.get("PATH", "").split(os.pathsep)
                                  if part and not (Path(part) / "logicpipe").exists())
    env["LOGICPIPE_CACHE"] = str(tmp_path / "cache")
    env["LOGICPIPE_DATA_URL"] = "http://127.0.0.1:9/unreachable"  # nothing may be downloaded
    return env


def run_quickstart(clone: Path, env: dict[str, str], timeout: float) -> subprocess.CompletedProcess:
    script = "set -euo pipefail\n" + quickstart_block() + "\n"
    return subprocess.run(["bash", "-c", script], cwd=clone, env=env, capture_output=True, text=True,
                          timeout=timeout)


def check_results(clone: Path, done: subprocess.CompletedProcess) -> None:
    assert done.returncode == 0, f"stdout:\n{done.stdout[-3000:]}\nstderr:\n{done.stderr[-3000:]}"
    run = clone / "results" / "quickstart" / "cats"
    metrics = json.loads((run / "metrics.json").read_text())
    # The four problems of tests/data/files/cats.jsonl: three programs execute and answer right, one
    # does not parse (its record says so).
    assert (metrics["total"], metrics["executed"]) == (4, 3)
    assert metrics["failures"] == {"parse": 1}
    for stage in ("formulate", "solve", "interpret", "evaluate"):
        assert len((run / f"{stage}.jsonl").read_text().splitlines()) == 4, stage
    assert "Is the following true? Tom is an animal." in done.stdout  # explain --id c1 --task
    assert "proved" in done.stdout
    page = (clone / "results" / "quickstart" / "report.html").read_text(encoding="utf-8")
    assert "<html" in page and "c1" in page


def lend_venv(clone: Path) -> None:
    """This checkout's .venv, lent to a fresh clone (skips the test where there is none)."""
    venv = ROOT / ".venv"
    if not (venv / "bin" / "python").exists():
        pytest.skip("no .venv in this checkout to lend the clone (make setup makes one)")
    (clone / ".venv").symlink_to(venv)
    # The clone's files are newer than .venv/.installed, which would make `make setup` reinstall into
    # the lent .venv (and point its editable install at the clone): give them the lent .venv's age.
    installed = venv / ".installed"
    if installed.exists():
        stamp = installed.stat().st_mtime - 1
        os.utime(clone / "pyproject.toml", (stamp, stamp))


def test_the_readme_quickstart_runs_in_a_fresh_clone(tmp_path):
    clone = fresh_clone(tmp_path)
    lend_venv(clone)
    done = run_quickstart(clone, newcomer_env(tmp_path), timeout=300)
    check_results(clone, done)


def test_without_activation_logicpipe_is_not_on_path(tmp_path):
    # The newcomer's shell the test above starts from really lacks the CLI: the quick start's
    # `source .venv/bin/activate` is what puts it there.
    done = subprocess.run(["bash", "-c", "command -v logicpipe"], env=newcomer_env(tmp_path),
                          capture_output=True, text=True)
    assert done.returncode != 0, done.stdout


@pytest.mark.slow
def test_the_readme_quickstart_sets_up_a_fresh_clone_from_nothing(tmp_path):
    """`make setup` builds the clone's own .venv (pip install, minutes), then the rest of the block."""
    clone = fresh_clone(tmp_path)
    done = run_quickstart(clone, newcomer_env(tmp_path), timeout=1800)
    check_results(clone, done)
