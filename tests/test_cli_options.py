"""Options declared once: one options base for run and optimize, flags shown as flags, piped output
not wrapped, and a bad command line as one line with typer's own exit code."""

import json
import os
import subprocess
import sys

import pytest
from pydantic import ValidationError

from logicpipe.optimize.config import OptimizeConfig
from logicpipe.stages.config import ModelOptions, RunConfig, TaskOptions
from tests.conftest import cli


def test_run_and_optimize_share_one_options_base_and_its_checks(tmp_path):
    assert issubclass(RunConfig, TaskOptions) and issubclass(OptimizeConfig, TaskOptions)
    assert issubclass(TaskOptions, ModelOptions)
    shared = set(TaskOptions.model_fields)
    assert {"model", "base_url", "max_concurrency", "llm_timeout", "max_retries", "llm_cache", "prompts",
            "out", "dataset", "task", "seed", "workers"} <= shared
    for config in (RunConfig, OptimizeConfig):
        with pytest.raises(ValidationError, match="is not an http"):
            config(dataset="prontoqa", model="m", base_url="ftp://x", out=tmp_path)
        with pytest.raises(ValidationError, match="at most 18 digits"):
            config(dataset="prontoqa", model="m", seed=10**40, out=tmp_path)
        with pytest.raises(ValidationError, match="cannot be written"):
            config(dataset="prontoqa", model="m", out="/proc/self/x")


def test_flags_are_shown_as_flags():
    for command in (["run"], ["optimize"], ["view"], []):
        done = cli(*command, "--help", env={"TERMINAL_WIDTH": "200"})
        assert done.returncode == 0, done.stderr
        lines = [line for line in done.stdout.splitlines()
                 if any(f" {flag} " in line for flag in ("--constrain", "--overwrite", "--unsupervised",
                                                          "--structure", "--serve", "--version"))]
        assert lines and not [line for line in lines if "<bool>" in line], lines


def test_no_help_page_shows_a_flag_as_bool():
    """Every command's help, --help itself included (typer 0.29 renders its type unless told not to)."""
    import typer.main
    from typer.testing import CliRunner

    from logicpipe.cli import app

    paths: list[list[str]] = [[]]

    def walk(command, path):
        for name, sub in getattr(command, "commands", {}).items():
            paths.append([*path, name])
            walk(sub, [*path, name])

    walk(typer.main.get_command(app), [])
    assert ["kb", "prove"] in paths and ["run"] in paths
    runner = CliRunner()
    for path in paths:
        result = runner.invoke(app, [*path, "--help"], env={"TERMINAL_WIDTH": "200"})
        assert result.exit_code == 0, (path, result.output)
        assert "--help" in result.output and "<bool>" not in result.output, (path, result.output)


def test_piped_output_is_not_wrapped(data_dir, tmp_path):
    # A run folder deep enough that its metrics line is far past 80 columns.
    out = tmp_path / ("a-folder-name-long-enough-to-pass-eighty-columns-" * 2) / "run"
    programs = data_dir / "programs" / "ProntoQA_dev_gpt-4.json"
    done = cli("run", "-d", "prontoqa", "-n", "2", "--programs", str(programs), "--data-dir", str(data_dir),
               "--max-rounds", "0", "--out", str(out))
    assert done.returncode == 0, done.stderr
    assert f"metrics: {out / 'prontoqa' / 'metrics.json'}" in done.stdout.splitlines()
    assert json.loads((out / "prontoqa" / "metrics.json").read_text())["total"] == 2


def test_a_bad_command_line_is_one_line_and_exit_2():
    env = {**os.environ}
    done = subprocess.run([sys.executable, "-m", "logicpipe", "run", "--no-such-option"], capture_output=True,
                          text=True, env=env, timeout=120)
    assert done.returncode == 2
    (line,) = done.stderr.splitlines()
    assert line.startswith("error: No such option: --no-such-option")


def test_help_names_arguments_as_click_does_and_baseline_shows_only_what_it_uses():
    # Was `Usage: logicpipe explain [OPTIONS] {run_dir}`, and baseline offered --formalism and said its
    # --model "writes programs".
    wide = {"COLUMNS": "200"}
    assert " explain [OPTIONS] RUN_DIR " in cli("explain", "--help", env=wide).stdout
    assert " kb ask [OPTIONS] KB [QUESTION] " in cli("kb", "ask", "--help", env=wide).stdout
    assert " kb check [OPTIONS] KB... " in cli("kb", "check", "--help", env=wide).stdout
    baseline = cli("baseline", "--help", env=wide).stdout
    assert "model that answers each question directly" in baseline and "writes programs" not in baseline
    assert "--formalism" not in baseline and "--mode" in baseline
    assert "model that writes programs" in cli("run", "--help", env=wide).stdout
