"""`logicpipe view` and `explain` on what they are given: a window past the end, a run made with --data-dir."""

import json
import shutil

from tests.conftest import cli
from tests.data.test_taskfiles import FILES
from tests.report.viewer.pages import by_id, payload


def test_an_offset_past_the_end_is_refused_and_the_page_already_there_is_kept(tmp_path):
    run = tmp_path / "run"
    done = cli("run", "--task", str(FILES / "cats.yaml"), "--programs", str(FILES / "cats_programs.json"),
               "--out", str(run))
    assert done.returncode == 0, done.stderr
    assert cli("view", str(run)).returncode == 0
    page = run / "report.html"
    before = page.read_bytes()
    past = cli("view", str(run), "--offset", "4", "--limit", "500")
    assert past.returncode == 2 and past.stderr.count("\n") == 1, past.stderr
    assert past.stderr.startswith("error: --offset 4 is past the end of the run (cats has 4 problems)")
    assert page.read_bytes() == before
    last = cli("view", str(run), "--offset", "3", "--out", str(tmp_path / "last.html"))  # the last one is shown
    assert last.returncode == 0, last.stderr
    assert [p["id"] for p in payload((tmp_path / "last.html").read_text())["problems"]] == ["c4"]


def test_a_run_made_with_data_dir_is_shown_with_its_problem_texts_by_itself(data_dir, tmp_path):
    data = tmp_path / "my data"
    shutil.copytree(data_dir / "data" / "LogicalDeduction", data / "data" / "LogicalDeduction")
    programs = data_dir / "programs" / "LogicalDeduction_dev_gpt-4.json"
    no_env = {"LOGICPIPE_DATA": ""}  # only --data-dir says where the data is
    run = ["run", "-d", "logicaldeduction", "--data-dir", str(data), "--programs", str(programs), "--limit", "3",
           "--out", str(tmp_path / "run")]
    done = cli(*run, env=no_env)
    assert done.returncode == 0, done.stderr
    identity = tmp_path / "run" / "logicaldeduction" / "run.json"
    assert json.loads(identity.read_text())["data_dir"] == str(data.resolve())
    page = tmp_path / "page.html"
    shown = cli("view", str(tmp_path / "run"), "--out", str(page), env=no_env)
    assert shown.returncode == 0, shown.stderr
    html = page.read_text()
    source = json.loads((data / "data" / "LogicalDeduction" / "dev.json").read_text())[0]
    assert by_id(payload(html)["problems"], source["id"])["question"] == source["question"]
    assert "not shown" not in html
    explained = cli("explain", str(tmp_path / "run"), "--id", source["id"], env=no_env)
    assert f"question: {source['question']}" in explained.stdout, explained.stderr
    # A run folder made before run.json named the data folder resumes as it was, and shows as before.
    old = json.loads(identity.read_text())
    del old["data_dir"]
    identity.write_text(json.dumps(old, indent=2, sort_keys=True) + "\n")
    again = cli(*run, env=no_env)
    assert again.returncode == 0, again.stderr
    assert json.loads(identity.read_text())["data_dir"] == str(data.resolve())
    del old["stages"]  # unchanged but for the folder it now names
    assert {k: v for k, v in json.loads(identity.read_text()).items() if k not in ("data_dir", "stages")} == old
    # A data folder moved since (the same files elsewhere) resumes too; run.json names where it now is.
    moved = tmp_path / "moved"
    data.rename(moved)
    resumed = cli(*[str(moved) if arg == str(data) else arg for arg in run], env=no_env)
    assert resumed.returncode == 0, resumed.stderr
    assert json.loads(identity.read_text())["data_dir"] == str(moved.resolve())
