"""formulate, refine, the cot backup, self-consistency and baselines through the CLI, against a local
OpenAI-compatible server that serves the released programs."""

import json

import pytest

from logicpipe.testing import FakeOpenAI, Fault, ScriptedReplies
from tests.conftest import cli

FILES = {"logicaldeduction": "LogicalDeduction_dev_gpt-4.json", "prontoqa": "ProntoQA_dev_gpt-4.json",
         "folio": "FOLIO_dev_gpt-4.json", "ar-lsat": "AR-LSAT_dev_gpt-4.json",
         "proofwriter": "ProofWriter_dev_gpt-4.json"}


def records(path):
    return [json.loads(line) for line in path.read_text().splitlines()]


def llm_run(fake, data_dir, out, dataset="logicaldeduction", *extra):
    return cli("run", "-d", dataset, "--data-dir", str(data_dir), "--out", str(out), "--model", "fake-gpt",
               "--base-url", fake.url, "--llm-timeout", "1", *extra)


def test_full_run_with_faults_accounts_for_every_problem_and_rerun_is_free(data_dir, tmp_path):
    replies = ScriptedReplies.from_logic_lm(data_dir / "programs" / FILES["logicaldeduction"])
    with FakeOpenAI(replies) as fake:
        fake.inject(Fault(status=429, headers={"Retry-After": "0.2"}), Fault(status=500), Fault(malformed=True),
                    Fault(delay=2.0))
        done = llm_run(fake, data_dir, tmp_path, "logicaldeduction", "--limit", "25", "--max-concurrency", "4")
        assert done.returncode == 0, done.stderr
        first_requests = len(fake.requests)
        assert first_requests == 25 + 4
        stage_dir = tmp_path / "logicaldeduction"
        formulated = records(stage_dir / "formulate.jsonl")
        assert [r["id"] for r in formulated] == [f"logical_deduction_{i}" for i in range(25)]
        assert all(r["source"] == "llm:fake-gpt" and r["error"] is None for r in formulated)
        metrics = json.loads((stage_dir / "metrics.json").read_text())
        assert metrics["total"] == 25 and metrics["source"] == "llm:fake-gpt"
        assert metrics["tokens"]["calls"] == 25 and metrics["tokens"]["prompt_tokens"] > 0
        before = {p.name: p.read_bytes() for p in stage_dir.iterdir()}
        import shutil

        shutil.rmtree(stage_dir)
        again = llm_run(fake, data_dir, tmp_path, "logicaldeduction", "--limit", "25")
        assert again.returncode == 0, again.stderr
        assert len(fake.requests) == first_requests  # every reply came from the cache
        assert records(stage_dir / "formulate.jsonl")[0]["usage"]["cached_calls"] == 1
        assert (stage_dir / "solve.jsonl").read_bytes().count(b"\n") == 25
        assert before["evaluate.jsonl"] == (stage_dir / "evaluate.jsonl").read_bytes()


def test_llm_failure_is_a_record_not_a_crash(data_dir, tmp_path):
    replies = ScriptedReplies.from_logic_lm(data_dir / "programs" / FILES["logicaldeduction"])
    with FakeOpenAI(replies) as fake:
        fake.inject(Fault(status=500), Fault(status=500))
        done = llm_run(fake, data_dir, tmp_path, "logicaldeduction", "--limit", "3", "--max-concurrency", "1",
                       "--max-retries", "1", "--max-rounds", "0")
        assert done.returncode == 0, done.stderr
    formulated = records(tmp_path / "logicaldeduction" / "formulate.jsonl")
    failed = [r for r in formulated if r["error"]]
    assert len(failed) == 1 and failed[0]["error"]["category"] == "llm"
    assert "gave up after 2 attempts" in failed[0]["error"]["message"]
    metrics = json.loads((tmp_path / "logicaldeduction" / "metrics.json").read_text())
    assert metrics["failures"]["llm"] == 1 and metrics["total"] == 3 and metrics["executed"] == 2


# Two formalisms in `make test`; the others under -m slow (the same code path with other solvers).
@pytest.mark.parametrize("dataset", ["logicaldeduction", "prontoqa", pytest.param("folio", marks=pytest.mark.slow),
                                     pytest.param("ar-lsat", marks=pytest.mark.slow)])
def test_refinement_turns_a_broken_program_into_an_executed_one(dataset, data_dir, tmp_path):
    from logicpipe.solvers import execute_task

    programs_file = data_dir / "programs" / FILES[dataset]
    source = json.loads(programs_file.read_text())
    solver = {"logicaldeduction": "csp", "prontoqa": "lp", "folio": "fol", "ar-lsat": "smt"}[dataset]
    good = next(r for r in source
                if execute_task({"solver": solver, "program": r["raw_logic_programs"][0]}).verdict is not None)
    lines = good["raw_logic_programs"][0].splitlines()
    broken = "\n".join(lines[:-1] + ["@@@ broken line", lines[-1]])
    replies = ScriptedReplies.from_logic_lm(programs_file, repairs={"@@@ broken line": good["raw_logic_programs"][0]})
    replies.programs[good["id"]] = [broken]
    position = [r["id"] for r in source].index(good["id"]) + 1
    with FakeOpenAI(replies) as fake:
        done = llm_run(fake, data_dir, tmp_path, dataset, "--limit", str(position), "--backup", "none")
        assert done.returncode == 0, done.stderr
        refine_requests = [r for r in fake.requests if r["_logicpipe"]["purpose"] == "refine"
                           and "@@@ broken line" in r["messages"][1]["content"]]
    assert len(refine_requests) == 1
    sent = refine_requests[0]["messages"][1]["content"]
    assert good["context"] in sent and "Common errors in this language" in sent
    stage_dir = tmp_path / dataset
    first = {r["id"]: r for r in records(stage_dir / "solve.jsonl")}
    assert first[good["id"]]["error"]["category"] == "parse"
    assert "line" in first[good["id"]]["error"]["message"]
    repaired = {r["id"]: r for r in records(stage_dir / "solve-1.jsonl")}
    assert repaired[good["id"]]["error"] is None and repaired[good["id"]]["round"] == 1
    interpreted = {r["id"]: r for r in records(stage_dir / "interpret.jsonl")}
    assert interpreted[good["id"]]["executed"] and interpreted[good["id"]]["round"] == 1
    metrics = json.loads((stage_dir / "metrics.json").read_text())
    assert metrics["refinement_rounds"] >= 1
    assert metrics["exe_rate_before_refinement"] < metrics["exe_rate"]


def test_cot_backup_answers_what_did_not_execute(data_dir, tmp_path):
    source = json.loads((data_dir / "programs" / FILES["logicaldeduction"]).read_text())[:3]
    programs = {r["id"]: [r["raw_logic_programs"][0]] for r in source[1:]}
    replies = ScriptedReplies(programs, answers={source[0]["id"]: source[0]["answer"]})
    with FakeOpenAI(replies) as fake:
        done = llm_run(fake, data_dir, tmp_path, "logicaldeduction", "--limit", "3", "--backup", "cot",
                       "--max-rounds", "0")
        assert done.returncode == 0, done.stderr
    first = records(tmp_path / "logicaldeduction" / "interpret.jsonl")[0]
    assert first["executed"] is False and first["backup"] == "cot" and first["final"] == source[0]["answer"]
    assert first["usage"]["calls"] == 1
    bad = cli("run", "-d", "ld", "--data-dir", str(data_dir), "--out", str(tmp_path / "x"), "--backup", "cot",
              "--programs", str(data_dir / "programs" / FILES["logicaldeduction"]), "--limit", "2")
    assert bad.returncode == 2 and "--backup cot needs --model" in bad.stderr


def test_self_consistency_votes_over_executed_samples(data_dir, tmp_path):
    source = json.loads((data_dir / "programs" / FILES["logicaldeduction"]).read_text())[:2]
    good = {r["id"]: r["raw_logic_programs"][0] for r in source}
    # Three samples per problem: two agree, one fails to parse.
    replies = ScriptedReplies({c: [p, "Variables:\nnonsense", p] for c, p in good.items()})
    with FakeOpenAI(replies) as fake:
        done = llm_run(fake, data_dir, tmp_path, "logicaldeduction", "--limit", "2", "--num-samples", "3",
                       "--temperature", "0.7")
        assert done.returncode == 0, done.stderr
        assert len(fake.requests) == 6
    solved = records(tmp_path / "logicaldeduction" / "solve.jsonl")
    for record in solved:
        assert record["error"] is None
        assert sorted(v for v in record["explanation"]["votes"]) == sorted([record["verdict"]] * 2 + ["parse"])
    bad = cli("run", "-d", "ld", "--num-samples", "3", "--model", "m", "--data-dir", str(data_dir))
    assert bad.returncode == 2 and "temperature" in bad.stderr


@pytest.mark.parametrize("mode", ["standard", "cot"])
def test_baselines_use_the_same_client_and_evaluator(mode, data_dir, tmp_path):
    replies = ScriptedReplies.from_logic_lm(data_dir / "programs" / FILES["folio"])
    with FakeOpenAI(replies) as fake:
        done = cli("baseline", "--mode", mode, "-d", "folio", "--limit", "6", "--data-dir", str(data_dir),
                   "--out", str(tmp_path), "--model", "fake-gpt", "--base-url", fake.url)
        assert done.returncode == 0, done.stderr
        assert len(fake.requests) == 6
        system = fake.requests[0]["messages"][0]["content"]
        assert ("step by step" in system) == (mode == "cot")
    metrics = json.loads((tmp_path / f"baseline-{mode}" / "folio" / "metrics.json").read_text())
    assert metrics["total"] == 6 and metrics["accuracy"] == 100.0 and metrics["tokens"]["calls"] == 6
