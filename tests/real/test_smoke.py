"""The real-model check that CI runs (`make test-llm-smoke`, a few minutes): SmolLM2-135M-Instruct on
the local llama.cpp server, one server for the session, --constrain, a few problems of each formalism
through every stage. The full suite (test_smollm2.py, `make test-llm`) takes about half an hour."""

import pytest

from logicpipe.testing.llamacpp import ALIAS, cli_options, parse_counts
from tests.conftest import cli
from tests.real.test_smollm2 import records

pytestmark = [pytest.mark.llm, pytest.mark.smoke]

# One dataset per formalism; every program parses and executes (CSP and SMT written in phases, with
# declared names only: llm/declared.py).
SMOKE = {"prontoqa": 2, "folio": 2, "logicaldeduction": 1, "ar-lsat": 1}


@pytest.mark.timeout(600)
@pytest.mark.parametrize("dataset", SMOKE)
def test_constrained_programs_reach_every_stage_parse_and_execute(llama_server, data_dir, tmp_path, dataset):
    options = cli_options(True)
    rounds = options.index("--max-rounds")
    options[rounds + 1] = "0"  # refinement is exercised by the full suite; here it would double the time
    done = cli("run", "-d", dataset, "--data-dir", str(data_dir), "--out", str(tmp_path), "--limit",
               str(SMOKE[dataset]), "--model", ALIAS, "--base-url", llama_server.url, *options, timeout=600)
    assert done.returncode == 0, done.stderr
    stage_dir = tmp_path / dataset
    formulated = records(stage_dir / "formulate.jsonl")
    assert len(formulated) == SMOKE[dataset]
    for record in formulated:  # answered by the server in this run, with real token counts
        assert record["source"] == f"llm:{ALIAS}" and record["usage"]["calls"] == 1, record
        assert record["usage"]["completion_tokens"] > 0, record
    ids = sorted(r["id"] for r in formulated)
    for stage in ("solve", "interpret", "evaluate"):
        assert sorted(r["id"] for r in records(stage_dir / f"{stage}.jsonl")) == ids, stage
    parsed, total = parse_counts(stage_dir)
    assert parsed == total == SMOKE[dataset], (parsed, total)
    solved = records(stage_dir / "solve.jsonl")  # an answer, or no single answer: the program ran
    assert all(r["error"] is None or r["error"]["category"] == "no_answer" for r in solved), solved
