import json
import os
import signal
import subprocess
import sys
import time

from tests.conftest import ROOT, cli


def ld_args(data_dir, out, *extra):
    return ["run", "--dataset", "logicaldeduction", "--programs",
            str(data_dir / "programs" / "LogicalDeduction_dev_gpt-4.json"), "--data-dir", str(data_dir),
            "--out", str(out), *extra]


def test_run_end_to_end_on_a_slice_and_resume_is_a_no_op(data_dir, tmp_path):
    done = cli(*ld_args(data_dir, tmp_path, "--limit", "40", "--workers", "2"))
    assert done.returncode == 0, done.stderr
    stage_dir = tmp_path / "logicaldeduction"
    metrics = json.loads((stage_dir / "metrics.json").read_text())
    assert metrics["total"] == 40 and metrics["executed"] == 40
    assert 0 < metrics["exe_acc"] <= 100 and metrics["backup"] == "random"
    for stage in ("formulate", "solve", "interpret", "evaluate"):
        ids = [json.loads(line)["id"] for line in (stage_dir / f"{stage}.jsonl").read_text().splitlines()]
        assert len(ids) == 40 == len(set(ids))
    before = {p.name: p.read_bytes() for p in stage_dir.iterdir()}
    again = cli(*ld_args(data_dir, tmp_path, "--limit", "40", "--workers", "2"))
    assert again.returncode == 0, again.stderr
    assert {p.name: p.read_bytes() for p in stage_dir.iterdir()} == before


def test_individual_stage_commands_chain(data_dir, tmp_path):
    common = ["--dataset", "LogicalDeduction", "--data-dir", str(data_dir), "--out", str(tmp_path), "--limit", "5"]
    programs = ["--programs", str(data_dir / "programs" / "LogicalDeduction_dev_gpt-4.json")]
    assert cli("solve", *common).returncode == 2  # nothing formulated yet
    for stage in ("formulate", "solve", "interpret", "evaluate"):
        done = cli(stage, *common, *(programs if stage == "formulate" else []))
        assert done.returncode == 0, done.stderr
    assert json.loads((tmp_path / "logicaldeduction" / "metrics.json").read_text())["total"] == 5


def test_missing_program_becomes_a_record_not_a_drop(data_dir, tmp_path):
    done = cli(*ld_args(data_dir, tmp_path))
    assert done.returncode == 0, done.stderr
    metrics = json.loads((tmp_path / "logicaldeduction" / "metrics.json").read_text())
    assert metrics["total"] == 300 and metrics["failures"]["no_program"] == 1
    assert metrics["exe_acc"] >= 87.0


def _one_line_error(done):
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert done.returncode != 0
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("error: ")
    return lines[0]


def test_bad_inputs_give_one_clear_line(data_dir, tmp_path):
    line = _one_line_error(cli("run", "--dataset", "folo", "--data-dir", str(data_dir)))
    assert "unknown dataset 'folo'" in line and "did you mean 'folio'" in line
    line = _one_line_error(cli("run", "--dataset", "folio", "--data-dir", str(tmp_path / "missing")))
    assert "does not exist" in line
    line = _one_line_error(cli("run", "--dataset", "folio", "--frobnicate"))
    assert "No such option" in line
    line = _one_line_error(cli("run", "--dataset", "folio", "--split", "nope", "--data-dir", str(data_dir)))
    assert "no split 'nope'" in line
    line = _one_line_error(cli("run", "--dataset", "folio", "--workers", "0", "--data-dir", str(data_dir)))
    assert "--workers" in line


def test_malformed_json_line_is_reported_and_nothing_is_lost(data_dir, tmp_path):
    assert cli(*ld_args(data_dir, tmp_path, "--limit", "5")).returncode == 0
    solve = tmp_path / "logicaldeduction" / "solve.jsonl"
    lines = solve.read_text().splitlines()
    lines[2] = lines[2][:-10]
    solve.write_text("\n".join(lines) + "\n")
    kept = solve.read_bytes()
    line = _one_line_error(cli(*ld_args(data_dir, tmp_path, "--limit", "5")))
    assert "solve.jsonl:3: malformed record" in line
    assert solve.read_bytes() == kept


def test_malformed_programs_file(data_dir, tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text('[{"id": 1,')
    line = _one_line_error(cli("run", "-d", "ld", "--programs", str(bad), "--data-dir", str(data_dir),
                               "--out", str(tmp_path / "o")))
    assert "bad.json: malformed JSON" in line


def test_missing_solver_binary_is_one_line(data_dir, tmp_path):
    env = {"LOGICPIPE_PROVER9": str(tmp_path / "no-prover9")}
    line = _one_line_error(cli("run", "-d", "folio", "--limit", "2", "--data-dir", str(data_dir), "--out",
                               str(tmp_path), "--programs", str(data_dir / "programs" / "FOLIO_dev_gpt-4.json"),
                               env=env))
    assert "LOGICPIPE_PROVER9" in line


def test_sigkill_mid_run_loses_and_duplicates_nothing(data_dir, tmp_path):
    args = ["run", "-d", "proofwriter", "--limit", "120", "--data-dir", str(data_dir), "--programs",
            str(data_dir / "programs" / "ProofWriter_dev_gpt-4.json")]
    reference = cli(*args, "--out", str(tmp_path / "clean"))
    assert reference.returncode == 0, reference.stderr
    out = tmp_path / "killed"
    process = subprocess.Popen([sys.executable, "-m", "logicpipe", *args, "--out", str(out)], cwd=ROOT,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    solve = out / "proofwriter" / "solve.jsonl"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if solve.exists() and len(solve.read_bytes().splitlines()) >= 10:
            break
        time.sleep(0.02)
    os.killpg(process.pid, signal.SIGKILL)
    process.wait()
    partial = len(solve.read_bytes().splitlines())
    assert 10 <= partial < 120, "the kill must land mid-solve"
    kept = {json.loads(line)["id"]: line for line in solve.read_text().splitlines(keepends=True) if line.endswith("\n")}
    resumed = cli(*args, "--out", str(out))
    assert resumed.returncode == 0, resumed.stderr
    # What the killed run had solved stays as it wrote it (a record solved again has its own seconds).
    now = {json.loads(line)["id"]: line for line in solve.read_text().splitlines(keepends=True)}
    assert [i for i, line in kept.items() if now[i] != line] == []

    def records(root, stage):
        rows = [json.loads(line) for line in (root / "proofwriter" / f"{stage}.jsonl").read_text().splitlines()]
        for row in rows:
            row.pop("seconds", None)
        return rows

    for stage in ("formulate", "solve", "interpret", "evaluate"):
        assert records(out, stage) == records(tmp_path / "clean", stage)
    assert (out / "proofwriter" / "metrics.json").read_text() == (tmp_path / "clean" / "proofwriter" / "metrics.json").read_text()


def test_explain_renders_goal_tree(data_dir, tmp_path):
    args = ["run", "-d", "proofwriter", "--limit", "3", "--data-dir", str(data_dir), "--out", str(tmp_path),
            "--programs", str(data_dir / "programs" / "ProofWriter_dev_gpt-4.json")]
    assert cli(*args).returncode == 0
    done = cli("explain", str(tmp_path), "--id", "ProofWriter_AttNoneg-OWA-D5-1041_Q1")
    assert done.returncode == 0, done.stderr
    assert "Kind(Charlie, True)" in done.stdout and "fact: Charlie is kind." in done.stdout
    line = _one_line_error(cli("explain", str(tmp_path), "--id", "nope"))
    assert "no solve record" in line


def test_list_needs_no_data():
    done = cli("list")
    assert done.returncode == 0 and "ar-lsat" in done.stdout and "smt" in done.stdout


def test_reproduce_offline_without_data_is_one_line_and_keeps_the_tables(tmp_path):
    out = tmp_path / "results"
    out.mkdir()
    (out / "table3.md").write_text("earlier table\n")
    done = cli("reproduce", "--out", str(out), "--limit", "2",
               env={"LOGICPIPE_DATA": "", "LOGICPIPE_DATASETS": "", "LOGICPIPE_CACHE": str(tmp_path / "empty-cache")})
    line = _one_line_error(done)  # no table can be made: each one's reason, on one line
    assert line.startswith("error: no table could be made: table3, table2, accuracy.png: Logic-LM's data or programs: "
                           "cannot download "
                           "http://127.0.0.1:9/unreachable/outputs/logic_programs/ProntoQA_dev_gpt-4.json (")
    assert "; logicbench: LogicBench's data: cannot download " in line
    assert done.returncode == 2 and done.stdout == ""
    assert [p.name for p in out.iterdir()] == ["table3.md"] and (out / "table3.md").read_text() == "earlier table\n"


def test_every_option_has_help_and_commands_list_only_what_they_use():
    import typer.core
    import typer.main

    from logicpipe.cli import app

    group = typer.main.get_command(app)
    assert isinstance(group, typer.core.TyperGroup) and len(group.commands) >= 10
    for name, command in [("logicpipe", group), *group.commands.items()]:
        for param in command.params:
            if isinstance(param, typer.core.TyperOption):
                assert param.help, f"{name} {param.opts} has no help text"
    def options(name):
        return {opt for param in group.commands[name].params for opt in param.opts}
    assert "--model" not in options("evaluate") and "--programs" not in options("evaluate")
    assert "--backup" not in options("formulate") and "--workers" not in options("formulate")
    assert {"--model", "--programs", "--backup", "--workers", "--task"} <= options("run")
    assert "--model" not in options("solve") and "--timeout" in options("solve")
    helped = cli("evaluate", "--help")
    assert helped.returncode == 0 and "--model" not in helped.stdout and "--dataset" in helped.stdout


def test_version():
    from logicpipe import __version__

    done = cli("--version")
    assert done.returncode == 0 and done.stdout.strip() == f"logicpipe {__version__}"


def test_license_is_an_spdx_string_with_a_setuptools_that_reads_it():
    import tomllib

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert project["project"]["license"] == "MIT"
    assert "setuptools>=77" in project["build-system"]["requires"]
