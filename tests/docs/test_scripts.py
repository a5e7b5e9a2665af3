"""The benchmark scripts the docs quote, started in a fresh shell: no LOGICPIPE_DATA, nothing to download.
They find Logic-LM's files as the Makefile does (../shared/logic-lm beside the checkout), so a command
pasted from the docs runs without setting anything first."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

from .blocks import ROOT

SHARED = ROOT.parent / "shared" / "logic-lm"
READS_DATA = re.compile(r"\b(data_root|resolve_file|load_problems|program_pairs)\(")


def fresh_env() -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if key != "LOGICPIPE_DATA"}
    env["LOGICPIPE_DATA_URL"] = "http://127.0.0.1:9/unreachable"  # nothing may be downloaded
    return env


def test_every_script_that_reads_logic_lm_data_finds_it_as_make_does():
    readers = [path for path in sorted((ROOT / "scripts").glob("benchmark*.py")) if READS_DATA.search(path.read_text())]
    assert len(readers) >= 5, readers
    for path in readers:
        assert "use_shared_data()" in path.read_text(), f"{path.name} reads Logic-LM's files but not as make does"


def test_a_benchmark_runs_in_a_fresh_shell():
    if not (SHARED / "data").is_dir():
        pytest.skip(f"no {SHARED} here (the project's machines have it; elsewhere the files are downloaded)")
    done = subprocess.run([sys.executable, "scripts/benchmark.py", "--datasets", "logicaldeduction", "--limit", "3",
                           "--workers", "1", "--rounds", "1"], cwd=ROOT, env=fresh_env(), capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert re.search(r"logicaldeduction\s+csp\s+3\s.*yes", done.stdout), done.stdout
