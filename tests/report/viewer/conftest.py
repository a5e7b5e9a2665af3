"""A real run for the viewer tests: released programs replayed for LogicalDeduction and AR-LSAT, and a
ProntoQA run by a local OpenAI-compatible server that serves the released programs, except that one
program carries a script tag under its Facts: header and is repaired in refinement round 1."""

import json
from pathlib import Path

import pytest

from logicpipe.testing import FakeOpenAI, ScriptedReplies
from tests.conftest import cli

INJECTION = "</script><script>alert(1)</script>"
INJECTED_ID = "ProntoQA_1"
INJECTED_LINE = 21  # the line after "Facts:" in that program


def pytest_configure(config):
    config.addinivalue_line("markers", "browser: drives the results viewer in headless chromium "
                                       "(scripts/browser-setup.sh installs chromium, its driver and selenium)")


def _run(*args: str, env: dict) -> None:
    done = cli(*args, env=env)
    assert done.returncode == 0, done.stderr


@pytest.fixture(scope="session")
def viewer_run(data_dir, tmp_path_factory) -> Path:
    base = tmp_path_factory.mktemp("viewer")
    out = base / "run"
    # Session fixtures run before the autouse cache isolation, so isolate the cache here.
    env = {"LOGICPIPE_CACHE": str(base / "cache"), "LOGICPIPE_DATA_URL": "http://127.0.0.1:9/unreachable"}
    programs = data_dir / "programs"
    _run("run", "-d", "logicaldeduction", "--programs", str(programs / "LogicalDeduction_dev_gpt-4.json"),
         "--limit", "20", "--out", str(out), "--data-dir", str(data_dir), env=env)
    _run("run", "-d", "ar-lsat", "--programs", str(programs / "AR-LSAT_dev_gpt-4.json"),
         "--limit", "10", "--out", str(out), "--data-dir", str(data_dir), env=env)
    released = programs / "ProntoQA_dev_gpt-4.json"
    replies = ScriptedReplies.from_logic_lm(released, repairs={INJECTION: released_program(released, INJECTED_ID)})
    lines = replies.programs[INJECTED_ID][0].splitlines()
    # Under Facts:, where a line that is no fact is a parse error (Predicates: lines are documentation).
    at = INJECTED_LINE - 1
    assert lines[at - 1].strip() == "Facts:"
    replies.programs[INJECTED_ID] = ["\n".join(lines[:at] + [INJECTION] + lines[at:])]
    with FakeOpenAI(replies) as fake:
        _run("run", "-d", "prontoqa", "--limit", "20", "--out", str(out), "--data-dir", str(data_dir),
             "--model", "fake-gpt", "--base-url", fake.url, "--llm-timeout", "5",
             "--llm-cache", str(base / "llm.sqlite"), env=env)
    return out


def released_program(programs_file: Path, problem_id: str) -> str:
    return next(r["raw_logic_programs"][0] for r in json.loads(programs_file.read_text()) if r["id"] == problem_id)
