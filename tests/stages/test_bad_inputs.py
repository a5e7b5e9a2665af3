"""Bad programs files, paths, endpoints and seeds through the CLI: one `error:` line naming the option
and the fix, exit 2, before anything is written (and nothing an earlier run wrote is touched)."""

import json
import os
import subprocess
import sys

import pytest

from tests.conftest import cli

PROGRAMS = "ProntoQA_dev_gpt-4.json"


def programs_file(tmp_path, value):
    path = tmp_path / "programs.json"
    path.write_text(json.dumps([{"id": "ProntoQA_1", "raw_logic_programs": value}]))
    return str(path)


def written(tmp_path, lines=None, files=None):
    """Programs as a person writes them: JSONL lines (objects, or raw text), or a folder of files."""
    if lines is not None:
        path = tmp_path / "programs.jsonl"
        path.write_text("".join((line if isinstance(line, str) else json.dumps(line)) + "\n" for line in lines))
        return str(path)
    folder = tmp_path / "programs"
    folder.mkdir()
    for name, text in (files or {}).items():
        (folder / name).write_text(text)
    return str(folder)


CASES = {
    "an empty folder as programs": (lambda tmp, real: ["--programs", written(tmp, files={})],
                                    "--programs: {tmp}/programs: an empty folder (expected one <id>.<ext> file"),
    "a JSONL line without a program": (
        lambda tmp, real: ["--programs", written(tmp, [{"id": "ProntoQA_1", "program": "Facts:"}, {"id": "ProntoQA_2"}])],
        '--programs: {tmp}/programs.jsonl:2: expected an object with "id" and "program"'),
    "a JSONL line that is no JSON": (lambda tmp, real: ["--programs", written(tmp, ["", "Predicates: x"])],
                                     "--programs: {tmp}/programs.jsonl:2: malformed JSON"),
    "a JSONL id that is no problem": (
        lambda tmp, real: ["--programs", written(tmp, [{"id": "ProntoQA_1", "program": "Facts:"},
                                                       {"id": "ProntoQA_0", "program": "Facts:"}])],
        "{tmp}/programs.jsonl:2: no problem 'ProntoQA_0' in ProntoQA/dev"),
    "a JSONL id written twice": (
        lambda tmp, real: ["--programs", written(tmp, [{"id": 1, "program": "a"}, {"id": "1", "program": "b"}])],
        "{tmp}/programs.jsonl:2: a second program for '1' (the first is {tmp}/programs.jsonl:1)"),
    "a file whose stem is no problem": (
        lambda tmp, real: ["--programs", written(tmp, files={"ProntoQA_1.lp": "Facts:", "notes.txt": "todo"})],
        "{tmp}/programs/notes.txt: no problem 'notes' in ProntoQA/dev"),
    "a string where the list belongs": (lambda tmp, real: ["--programs", programs_file(tmp, "Predicates: x")],
                                        "raw_logic_programs is a string; it must be a list of program texts"),
    "a number where a program belongs": (lambda tmp, real: ["--programs", programs_file(tmp, [42])],
                                         "raw_logic_programs is a list holding a number; it must be a list"),
    "an out folder under /proc": (lambda tmp, real: ["--programs", real, "--out", "/proc/self/x"],
                                  "--out: /proc/self/x cannot be written: nothing can be made in /proc/self"),
    "a cache under /proc": (lambda tmp, real: ["--programs", real, "--llm-cache", "/proc/self/c.sqlite"],
                            "--llm-cache: /proc/self/c.sqlite cannot be written"),
    "a base url that is no URL": (lambda tmp, real: ["--model", "m", "--base-url", "::::"],
                                  "--base-url: '::::' is not an http(s) URL; give one such as http://localhost"),
    "two base urls a line apart": (lambda tmp, real: ["--model", "m", "--base-url", "http://a:1/v1\nhttp://a:1/v1"],
                                   "--base-url: 'http://a:1/v1\\nhttp://a:1/v1' is not an http(s) URL"),
    "a seed no record can hold": (lambda tmp, real: ["--programs", real, "--seed", "1" + "0" * 40],
                                  "--seed: give a whole number of at most 18 digits"),
    "a seed that is no integer": (lambda tmp, real: ["--programs", real, "--seed", "1e40"],
                                  "'--seed': Input should be a valid integer"),
}


@pytest.mark.parametrize("case", list(CASES))
def test_bad_input_is_one_line_exit_2_before_anything_is_written(case, data_dir, tmp_path):
    options, expected = CASES[case]
    out = tmp_path / "out"
    args = ["run", "-d", "prontoqa", "-n", "2", "--data-dir", str(data_dir), "--out", str(out), "--max-rounds", "0"]
    done = cli(*args, *options(tmp_path, str(data_dir / "programs" / PROGRAMS)))
    assert done.returncode == 2, done.stderr
    (line,) = done.stderr.splitlines()
    assert line.startswith("error: ") and "internal error" not in line
    assert expected.format(tmp=tmp_path) in line
    assert not out.exists()


def test_a_bad_programs_file_leaves_an_earlier_run_as_it_was(data_dir, tmp_path):
    out = tmp_path / "out"
    args = ["run", "-d", "prontoqa", "-n", "2", "--data-dir", str(data_dir), "--out", str(out), "--max-rounds", "0"]
    first = cli(*args, "--programs", str(data_dir / "programs" / PROGRAMS))
    assert first.returncode == 0, first.stderr
    before = {p.name: p.read_bytes() for p in (out / "prontoqa").iterdir()}
    bad = cli(*args, "--programs", programs_file(tmp_path, {"text": "Predicates: x"}), "--overwrite")
    assert bad.returncode == 2 and "raw_logic_programs is an object" in bad.stderr
    assert {p.name: p.read_bytes() for p in (out / "prontoqa").iterdir()} == before


def test_optimize_refuses_a_bad_base_url_before_it_writes(tmp_path):
    out = tmp_path / "opt"
    done = cli("optimize", "-d", "prontoqa", "-m", "m", "--base-url", "::::", "--out", str(out))
    assert done.returncode == 2
    assert done.stderr.splitlines() == ["error: invalid option --base-url: '::::' is not an http(s) URL; give one "
                                        "such as http://localhost:8000/v1"]
    assert not out.exists()


def test_validate_reads_only_so_a_folder_it_cannot_write_in_is_fine(data_dir):
    # Run from /proc/self, where nothing can be made: validate must not probe a run folder it never writes.
    env = {**os.environ, "LOGICPIPE_DATA": str(data_dir)}
    done = subprocess.run([sys.executable, "-m", "logicpipe", "validate", "-d", "prontoqa", "--split", "dev"],
                          cwd="/proc/self", env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("prontoqa dev: 500 problems")


def test_a_malformed_jsonl_line_is_named_by_its_line_and_column_and_the_whole_fault(tmp_path):
    # Was "cats.jsonl:4: malformed JSON at line 1 (Invalid control character at)": the line within the
    # line, and json's message cut before its place.
    from tests.conftest import ROOT

    files = ROOT / "tests" / "data" / "files"
    (tmp_path / "cats.yaml").write_text((files / "cats.yaml").read_text())
    rows = (files / "cats.jsonl").read_text().splitlines()[:3]
    (tmp_path / "cats.jsonl").write_text("\n".join([*rows, '{"qid": "c9", "premises": ["Tom\tis"], "claim": "x", '
                                                   '"label": "True"}']) + "\n")
    done = cli("run", "--task", str(tmp_path / "cats.yaml"), "--programs", str(files / "cats_programs.json"),
               "--out", str(tmp_path / "out"))
    assert done.returncode == 2 and not (tmp_path / "out").exists()
    assert done.stderr == (f"error: {tmp_path / 'cats.jsonl'}:4: malformed JSON at column 32: Invalid control "
                           "character (a raw tab or line break inside a string: write it as \\t or \\n)\n")
