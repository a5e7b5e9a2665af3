"""The built wheel is complete: installed in a clean virtual environment, away from the checkout, it
formulates with a model against the local server (the prompts travel as package data)."""

import json
import subprocess
import sys
import sysconfig
import venv

import pytest

from logicpipe.testing import FakeOpenAI, ScriptedReplies
from tests.conftest import ROOT


@pytest.mark.slow  # builds a wheel and a venv
def test_a_wheel_installed_in_a_clean_venv_formulates_with_a_model(tmp_path, data_dir):
    dist = tmp_path / "dist"
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", "-w", str(dist),
                    str(ROOT)], check=True, capture_output=True, timeout=300)
    wheel = next(dist.glob("logicpipe-*.whl"))
    clean = tmp_path / "clean"
    venv.create(clean, with_pip=False)
    site = next(clean.glob("lib/python*/site-packages"))
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-index", "--target", str(site),
                    str(wheel)], check=True, capture_output=True, timeout=300)
    # The dependencies come from the test environment; a path added by a .pth line runs none of that
    # directory's own .pth files, so the checkout's editable install stays out of sight.
    (site / "deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    python = clean / "bin" / "python"
    where = subprocess.run([str(python), "-c", "import logicpipe; print(logicpipe.__file__)"], cwd=tmp_path,
                           capture_output=True, text=True, check=True).stdout.strip()
    assert where.startswith(str(site)), where
    replies = ScriptedReplies.from_logic_lm(data_dir / "programs" / "LogicalDeduction_dev_gpt-4.json")
    with FakeOpenAI(replies) as fake:
        done = subprocess.run([str(python), "-m", "logicpipe", "run", "-d", "ld", "--limit", "3", "--model", "m",
                               "--base-url", fake.url, "--data-dir", str(data_dir), "--out", str(tmp_path / "out")],
                              cwd=tmp_path, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr
        assert len(fake.requests) == 3
    rows = [json.loads(line) for line in (tmp_path / "out" / "logicaldeduction" / "formulate.jsonl").read_text().splitlines()]
    assert all(r["prompt_id"] == "logicaldeduction" and len(r["prompt_hash"]) == 12 and r["program"] for r in rows)
    metrics = json.loads((tmp_path / "out" / "logicaldeduction" / "metrics.json").read_text())
    assert metrics["executed"] == 3
