"""The runner through the real CLI: run identity, --overwrite, the error budget, retries across runs,
Ctrl-C, the directory lock and up-front validation."""

import json
import os
import signal
import subprocess
import sys
import time

from logicpipe.runtime.folder import DirectoryLock
from logicpipe.testing import FakeOpenAI, Fault, ScriptedReplies
from tests.conftest import ROOT, cli, ctrl_c_default

LD = "LogicalDeduction_dev_gpt-4.json"


def replay(data_dir, out, *extra, dataset="logicaldeduction", programs=LD):
    return cli("run", "-d", dataset, "--data-dir", str(data_dir), "--out", str(out), "--programs",
               str(data_dir / "programs" / programs), *extra)


def with_model(fake, data_dir, out, *extra):
    return cli("run", "-d", "logicaldeduction", "--data-dir", str(data_dir), "--out", str(out), "--model", "m",
               "--base-url", fake.url, "--llm-timeout", "2", "--max-retries", "0", "--max-rounds", "0", *extra)


def one_line(done):
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert done.returncode != 0 and len(lines) == 1 and lines[0].startswith("error: "), done.stderr
    return lines[0]


def records(path):
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_a_resume_with_other_options_is_refused_and_overwrite_starts_afresh(data_dir, tmp_path):
    assert replay(data_dir, tmp_path, "--limit", "4").returncode == 0
    stage_dir = tmp_path / "logicaldeduction"
    identity = json.loads((stage_dir / "run.json").read_text())
    assert identity["stages"]["formulate"]["programs"] == LD and len(identity["stages"]["formulate"]["programs_sha256"]) == 64
    assert identity["stages"]["solve"]["solver"] == "csp" and identity["limit"] == 4
    before = {p.name: p.read_bytes() for p in stage_dir.iterdir()}
    line = one_line(replay(data_dir, tmp_path, "--limit", "4", "--seed", "7", "--timeout", "9"))
    assert "solve.timeout" in line and "interpret.seed" in line and "--overwrite" in line
    line = one_line(replay(data_dir, tmp_path, "--limit", "4", programs="LogicalDeduction_dev_text-davinci-003.json"))
    assert "formulate.programs" in line
    assert "limit" in one_line(replay(data_dir, tmp_path, "--limit", "5"))
    assert {p.name: p.read_bytes() for p in stage_dir.iterdir()} == before  # refused runs write nothing
    again = replay(data_dir, tmp_path, "--limit", "4", "--seed", "7", "--overwrite")
    assert again.returncode == 0, again.stderr
    assert json.loads((stage_dir / "run.json").read_text())["stages"]["interpret"]["seed"] == 7


def test_a_server_answering_401_stops_the_run_within_seconds(data_dir, tmp_path):
    with FakeOpenAI(lambda body: "never") as fake:
        fake.inject(*[Fault(status=401)] * 50)
        start = time.monotonic()
        done = with_model(fake, data_dir, tmp_path, "--limit", "20")
        assert time.monotonic() - start < 20
    line = one_line(done)
    assert done.returncode == 4 and "fatal" in line and "401" in line
    formulated = tmp_path / "logicaldeduction" / "formulate.jsonl"
    assert not formulated.exists() or all(r["error"] is None for r in records(formulated))


def test_after_an_outage_the_same_command_completes_every_problem(data_dir, tmp_path):
    replies = ScriptedReplies.from_logic_lm(data_dir / "programs" / LD)
    with FakeOpenAI(replies) as fake:
        fake.inject(*[Fault(status=503)] * 3)
        down = with_model(fake, data_dir, tmp_path, "--limit", "6", "--max-concurrency", "1", "--max-errors", "2")
        assert down.returncode == 4 and "budget of 2" in one_line(down)
        written = records(tmp_path / "logicaldeduction" / "formulate.jsonl")
        assert [r["error"]["transient"] for r in written if r["error"]] == [True, True, True]
        up = with_model(fake, data_dir, tmp_path, "--limit", "6", "--max-concurrency", "1", "--max-errors", "2")
        assert up.returncode == 0, up.stderr
    stage_dir = tmp_path / "logicaldeduction"
    for stage in ("formulate", "solve", "interpret", "evaluate"):
        rows = records(stage_dir / f"{stage}.jsonl")
        assert [r["id"] for r in rows] == [f"logical_deduction_{i}" for i in range(6)], stage
    assert all(r["error"] is None for r in records(stage_dir / "formulate.jsonl"))
    assert json.loads((stage_dir / "metrics.json").read_text())["failures"].get("llm") is None


def test_the_error_budget_counts_or_takes_a_percentage(data_dir, tmp_path):
    with FakeOpenAI(lambda body: "no program here") as fake:
        fake.inject(*[Fault(status=500)] * 10)
        done = with_model(fake, data_dir, tmp_path, "--limit", "10", "--max-concurrency", "1", "--max-errors", "30%")
    assert done.returncode == 4 and "over the budget of 3" in one_line(done)
    assert len(records(tmp_path / "logicaldeduction" / "formulate.jsonl")) == 4


def test_ctrl_c_exits_130_and_keeps_finished_records(data_dir, tmp_path):
    # A model that answers one request at a time, 0.1 s each: the run is surely still going when the
    # signal comes (a replay of all 600 ProofWriter programs can end, on a fast machine, before it does).
    with FakeOpenAI(ScriptedReplies.from_logic_lm(data_dir / "programs" / "ProofWriter_dev_gpt-4.json"),
                    latency=0.1) as fake:
        args = ["run", "-d", "proofwriter", "--limit", "30", "--data-dir", str(data_dir), "--out", str(tmp_path),
                "--model", "scripted", "--base-url", fake.url, "--llm-cache", str(tmp_path / "cache.sqlite"),
                "--max-concurrency", "1", "--max-rounds", "0"]
        process = subprocess.Popen([sys.executable, "-m", "logicpipe", *args], cwd=ROOT, stdout=subprocess.PIPE,
                                   stderr=subprocess.PIPE, text=True, start_new_session=True,
                                   preexec_fn=ctrl_c_default)
        solve = tmp_path / "proofwriter" / "solve.jsonl"
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and not (solve.exists() and solve.read_bytes().count(b"\n") >= 3):
            time.sleep(0.02)
        os.killpg(process.pid, signal.SIGINT)
        _, stderr = process.communicate(timeout=60)
        assert process.returncode == 130, stderr
        assert stderr.strip().splitlines()[-1] == "error: interrupted; finished records are kept, re-run to resume"
        kept = len(records(solve))
        assert 3 <= kept < 30
        again = subprocess.run([sys.executable, "-m", "logicpipe", *args], cwd=ROOT, capture_output=True, text=True,
                               timeout=120)
        assert again.returncode == 0, again.stderr
    assert len(records(solve)) == 30


def test_rejected_option_combinations_leave_no_file_behind(data_dir, tmp_path):
    out = tmp_path / "out"
    for extra in (["--backup", "cot"], ["--num-samples", "3"], ["--timeout", "inf"], ["--timeout", "1e308"],
                  ["--max-errors", "lots"], ["--refine-model", "m", "--max-rounds", "0"]):
        line = one_line(replay(data_dir, out, *extra))
        assert "invalid option" in line, line
        assert not out.exists(), extra
    assert "needs --model" in one_line(replay(data_dir, out, "--backup", "cot"))
    (tmp_path / "file").write_text("x")
    assert "is a file" in one_line(replay(data_dir, tmp_path / "file"))


def test_a_cache_under_a_file_or_no_api_key_is_one_line_before_any_file(data_dir, tmp_path):
    (tmp_path / "file").write_text("x")
    out = tmp_path / "out"
    line = one_line(replay(data_dir, out, "--llm-cache", str(tmp_path / "file" / "cache.sqlite")))
    assert line == (f"error: invalid option --llm-cache: {tmp_path / 'file'} is a file, so "
                    f"{tmp_path / 'file' / 'cache.sqlite'} cannot be made under it")
    keyless = {"OPENAI_API_KEY": "", "OPENAI_BASE_URL": ""}
    for extra in (["--model", "m"], ["--model", "m", "--refine", "semantic"], ["--backup", "cot", "--model", "m"]):
        done = cli("run", "-d", "logicaldeduction", "--data-dir", str(data_dir), "--out", str(out), "--limit", "2",
                   *extra, env=keyless)
        assert "set OPENAI_API_KEY" in one_line(done), extra
    done = cli("refine", "-d", "logicaldeduction", "--data-dir", str(data_dir), "--out", str(out), "--limit", "2",
               "--model", "m", "--refine", "semantic", env=keyless)
    assert "set OPENAI_API_KEY" in one_line(done)
    assert not out.exists()  # not even OUT/<dataset>/.lock


def test_a_second_run_into_the_same_directory_is_refused(data_dir, tmp_path):
    with DirectoryLock(tmp_path / "logicaldeduction"):
        line = one_line(replay(data_dir, tmp_path, "--limit", "2"))
    assert "in use by another logicpipe run" in line
    assert replay(data_dir, tmp_path, "--limit", "2").returncode == 0


def test_rerunning_a_finished_run_writes_nothing_so_a_read_only_directory_works(data_dir, tmp_path):
    # Tests run as root, for whom permissions do not stop writes; so check that nothing is written at all:
    # no file is created, renamed, removed or modified (same inode and mtime, the directory's too).
    assert replay(data_dir, tmp_path, "--limit", "3").returncode == 0
    stage_dir = tmp_path / "logicaldeduction"

    def state():
        return {p.name: (p.stat().st_ino, p.stat().st_mtime_ns, p.stat().st_size)
                for p in [stage_dir, *stage_dir.iterdir()]}

    before = state()
    time.sleep(0.05)
    assert replay(data_dir, tmp_path, "--limit", "3").returncode == 0
    assert state() == before


def test_a_programs_file_for_another_dataset_is_an_error(data_dir, tmp_path):
    line = one_line(replay(data_dir, tmp_path, programs="FOLIO_dev_gpt-4.json"))
    assert "no program for any LogicalDeduction/dev problem" in line
    assert not tmp_path.joinpath("logicaldeduction").exists()


def test_programs_are_solved_while_the_model_writes_the_rest(data_dir, tmp_path):
    from logicpipe.stages import RunConfig, run

    events = []
    replies = ScriptedReplies.from_logic_lm(data_dir / "programs" / LD)
    with FakeOpenAI(replies, latency=0.3) as fake:
        config = RunConfig(dataset="ld", data_dir=data_dir, out=tmp_path, limit=6, model="m", base_url=fake.url,
                           max_concurrency=1, llm_cache=tmp_path / "cache.sqlite")
        report = run(config, lambda stage, done, total: events.append((stage, done)))
    formulated = [i for i, (stage, _) in enumerate(events) if stage == "formulate"]
    solved = [i for i, (stage, _) in enumerate(events) if stage == "solve"]
    assert len(formulated) == len(solved) == 6
    assert solved[0] < formulated[-1]  # the first program was solved before the model wrote the last
    assert report.metrics["executed"] == 6


def test_bad_problem_ids_and_program_text_are_clear_errors_or_safe_records(data_dir, tmp_path):
    source = json.loads((data_dir / "data" / "LogicalDeduction" / "dev.json").read_text())[:3]
    root = tmp_path / "data"
    (root / "data" / "LogicalDeduction").mkdir(parents=True)
    dev = root / "data" / "LogicalDeduction" / "dev.json"

    def run_with(problems, programs):
        dev.write_text(json.dumps(problems))
        (tmp_path / "programs.json").write_text(json.dumps(programs))
        return cli("run", "-d", "ld", "--data-dir", str(root), "--out", str(tmp_path / "out"),
                   "--programs", str(tmp_path / "programs.json"), "--overwrite")

    released = {r["id"]: r for r in json.loads((data_dir / "programs" / LD).read_text())}
    programs = [released[p["id"]] for p in source]
    assert "duplicate id, first used by row 1" in one_line(run_with([source[0], source[0]], programs))
    assert "control characters" in one_line(run_with([{**source[0], "id": "a\x1fb"}], programs))
    # A lone surrogate in a replayed program (written as an escape in the JSON file) is stored safely.
    broken = [{**programs[0], "raw_logic_programs": [programs[0]["raw_logic_programs"][0] + "\n# \ud800"]}]
    done = run_with(source[:1], broken)
    assert done.returncode == 0, done.stderr
    formulated = records(tmp_path / "out" / "logicaldeduction" / "formulate.jsonl")
    assert formulated[0]["program"].endswith("# \ufffd\n") or formulated[0]["program"].endswith("# \ufffd")


def test_overwrite_belongs_to_a_run_and_evaluate_names_the_backup_interpret_used(data_dir, tmp_path):
    assert replay(data_dir, tmp_path, "--limit", "3", "--backup", "none").returncode == 0
    stage_dir = tmp_path / "logicaldeduction"
    before = {p.name: p.read_bytes() for p in stage_dir.iterdir()}
    line = one_line(cli("evaluate", "-d", "ld", "--data-dir", str(data_dir), "--out", str(tmp_path), "--limit", "3",
                        "--overwrite"))
    assert "--overwrite starts a run afresh" in line
    assert {p.name: p.read_bytes() for p in stage_dir.iterdir()} == before
    done = cli("evaluate", "-d", "ld", "--data-dir", str(data_dir), "--out", str(tmp_path), "--limit", "3")
    assert done.returncode == 0, done.stderr
    assert json.loads((stage_dir / "metrics.json").read_text())["backup"] == "none"


def test_a_finished_replay_can_add_a_refinement_model_later(data_dir, tmp_path):
    source = json.loads((data_dir / "programs" / LD).read_text())[:2]
    broken = [{**source[0], "raw_logic_programs": ["Variables:\nx [IN] [1, 2]\nConstraints:\nx >>> 1\n"]}, source[1]]
    (tmp_path / "programs.json").write_text(json.dumps(broken))
    args = ["run", "-d", "ld", "--data-dir", str(data_dir), "--out", str(tmp_path / "out"), "--limit", "2",
            "--programs", str(tmp_path / "programs.json")]
    assert cli(*args).returncode == 0
    repairs = {"x >>> 1": source[0]["raw_logic_programs"][0]}
    with FakeOpenAI(ScriptedReplies({}, repairs=repairs)) as fake:
        done = cli(*args, "--refine-model", "m", "--base-url", fake.url, "--max-rounds", "1")
        assert done.returncode == 0, done.stderr
    interpreted = records(tmp_path / "out" / "logicaldeduction" / "interpret.jsonl")
    assert [r["executed"] for r in interpreted] == [True, True] and interpreted[0]["round"] == 1


def test_changing_only_the_backup_redoes_the_interpret_stage_alone(data_dir, tmp_path):
    assert replay(data_dir, tmp_path, "--limit", "6", dataset="folio", programs="FOLIO_dev_gpt-4.json").returncode == 0
    stage_dir = tmp_path / "folio"
    kept = {name: (stage_dir / name).read_bytes() for name in ("formulate.jsonl", "solve.jsonl")}
    done = replay(data_dir, tmp_path, "--limit", "6", "--backup", "none", dataset="folio",
                  programs="FOLIO_dev_gpt-4.json")
    assert done.returncode == 0, done.stderr
    assert {name: (stage_dir / name).read_bytes() for name in kept} == kept  # programs and verdicts stand
    stages = {line.split("│")[1].strip(): line.split("│")[3].strip() for line in done.stdout.splitlines()
              if line.count("│") == 5 and line.split("│")[1].strip() in ("formulate", "solve", "interpret")}
    assert stages == {"formulate": "0", "solve": "0", "interpret": "6"}  # new records per stage
    assert json.loads((stage_dir / "run.json").read_text())["stages"]["interpret"] == {"backup": "none", "seed": 0}
    answers = records(stage_dir / "interpret.jsonl")
    assert len(answers) == 6 and all(r["backup"] is None for r in answers)
    assert all(r["final"] is None for r in answers if not r["executed"])  # no backup: no answer where none ran
    assert json.loads((stage_dir / "metrics.json").read_text())["backup"] == "none"
    # With another option changed too, nothing is redone: refused, naming every field.
    line = one_line(replay(data_dir, tmp_path, "--limit", "6", "--backup", "random", "--timeout", "9",
                           dataset="folio", programs="FOLIO_dev_gpt-4.json"))
    assert "solve.timeout" in line and "interpret.backup" in line
    assert len(records(stage_dir / "interpret.jsonl")) == 6
