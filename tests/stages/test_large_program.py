"""A replayed program too large for a record is that problem's typed error; the rest of the file is solved."""

import json

from logicpipe.stages.formulate import MAX_REPLAYED_BYTES
from tests.conftest import cli
from tests.data.test_taskfiles import FILES


def test_a_program_too_large_for_a_record_is_its_problems_error_and_the_others_are_solved(tmp_path):
    records = json.loads((FILES / "cats_programs.json").read_text())
    program = records[1]["raw_logic_programs"][0]
    # A chain of rules past the 4 MiB bound of a record line (which refused the whole run before).
    chain = "".join(f"Cat($x, True) >>> Animal{i}($x, True)\n" for i in range(120_000))
    records[1]["raw_logic_programs"] = [program.replace("Rules:\n", "Rules:\n" + chain)]
    replay = tmp_path / "programs.json"
    replay.write_text(json.dumps(records))
    done = cli("run", "--task", str(FILES / "cats.yaml"), "--programs", str(replay), "--out", str(tmp_path / "out"))
    assert done.returncode == 0, done.stderr
    folder = tmp_path / "out" / "cats"
    formulated = {r["id"]: r for r in map(json.loads, (folder / "formulate.jsonl").read_text().splitlines())}
    assert sorted(formulated) == ["c1", "c2", "c3", "c4"]
    error = formulated["c2"]["error"]
    assert error["category"] == "no_program" and formulated["c2"]["program"] is None
    assert f"over the {MAX_REPLAYED_BYTES}-byte bound of a record" in error["message"]
    solved = {r["id"]: r for r in map(json.loads, (folder / "solve.jsonl").read_text().splitlines())}
    assert (solved["c1"]["verdict"], solved["c3"]["verdict"]) == ("True", "Unknown")
    assert solved["c2"]["error"]["category"] == "no_program"
    assert len((folder / "evaluate.jsonl").read_text().splitlines()) == 4
