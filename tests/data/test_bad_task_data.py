"""Bad task data is one plain line, exit 2, before anything runs or is written (validate warns of an empty split)."""

import json
import shutil

from tests.conftest import cli
from tests.data.test_taskfiles import FILES, write_task


def cats(tmp_path, rows=None, name="cats"):
    """The cats task in a folder of its own, with other rows (JSON objects) and another name if given."""
    folder = tmp_path / "task"
    shutil.copytree(FILES, folder)
    if rows is not None:
        (folder / "cats.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
    if name != "cats":
        task = folder / "cats.yaml"
        task.write_text(task.read_text(encoding="utf-8").replace("name: cats", f"name: {name}"), encoding="utf-8")
    return folder / "cats.yaml"


def run(task, tmp_path):
    return cli("run", "--task", str(task), "--programs", str(FILES / "cats_programs.json"),
               "--out", str(tmp_path / "out"))


def one_line(done, tmp_path) -> str:
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert done.stderr.count("\n") == 1 and "internal error" not in done.stderr, done.stderr
    assert not (tmp_path / "out").exists()  # refused before anything is written
    return done.stderr


def test_a_task_whose_data_is_empty_is_refused_by_run_and_a_warning_of_validate(tmp_path):
    task = cats(tmp_path, rows=[])
    line = one_line(run(task, tmp_path), tmp_path)
    assert line.startswith("error: task cats: split dev has no problems (") and "cats.jsonl holds 0 rows)" in line
    checked = cli("validate", "--task", str(task))
    assert checked.returncode == 0, checked.stderr
    assert checked.stderr == "warning: task cats: split dev has no problems (its data holds 0 rows); " \
                             "`logicpipe run` refuses it\n"
    assert ": ok" not in checked.stdout
    # A JSON list read whole says the same.
    (tmp_path / "rows.json").write_text("[]")
    listed = write_task(tmp_path, source={"format": "json", "path": "rows.json"}, answer_space="truth",
                        fields={"options": None})
    line = one_line(run(listed, tmp_path), tmp_path)
    assert line == "error: task mine: split dev has no problems (its data holds 0 rows)\n"


def test_an_id_that_is_no_string_or_integer_names_its_row(tmp_path):
    good = {"premises": ["Tom is a cat."], "claim": "Tom is a cat.", "label": "True"}
    rows = [{**good, "qid": 7}, {**good, "qid": ["c", "2"]}, {**good, "qid": {"n": 3}}]
    line = one_line(run(cats(tmp_path, rows), tmp_path), tmp_path)
    assert "cats.jsonl: row 2 (id ['c', '2']): the id field 'qid' holds a list; ids must be strings or " \
           "integers (and 1 more; see `logicpipe validate`)" in line
    checked = cli("validate", "--task", str(cats(tmp_path / "again", rows)))
    assert checked.returncode == 2 and "row 3 (id {'n': 3}): the id field 'qid' holds an object" in checked.stderr


def test_a_binary_or_non_utf8_task_file_says_so(tmp_path):
    line = one_line(cli("run", "--task", "/bin/ls", "--programs", str(FILES / "cats_programs.json"),
                        "--out", str(tmp_path / "out")), tmp_path)
    assert line == "error: /bin/ls: a binary file, not a task file (a task file is YAML or JSON text)\n"
    latin = tmp_path / "latin.yaml"
    latin.write_bytes(cats(tmp_path).read_bytes().replace(b"name: cats", b"name: caf\xe9"))
    line = one_line(run(latin, tmp_path), tmp_path)
    assert line.startswith(f"error: {latin}: not UTF-8 text (byte ") and "YAML or JSON text in UTF-8" in line


def test_a_name_beyond_ascii_is_refused_in_plain_words(tmp_path):
    line = one_line(run(cats(tmp_path, name="café"), tmp_path), tmp_path)
    assert line.endswith("name: 'café' cannot name a task: a name becomes the run's folder, so it takes ASCII "
                         "letters, digits, '.', '_' and '-' only, starting with a letter or digit (e.g. 'cafe')\n")
    assert "pattern" not in line and "[A-Za-z" not in line
