"""The run folder every command holds: lock, identity in run.json, --overwrite, typed stage files."""

import json

import pytest

from logicpipe.core.errors import UsageError
from logicpipe.core.records import Record
from logicpipe.runtime.folder import LOCK_FILE, RUN_FILE, RunFolder


class Note(Record):
    text: str = ""


def test_a_second_writer_is_refused_while_the_first_holds_the_folder(tmp_path):
    with RunFolder(tmp_path / "out"):
        with pytest.raises(UsageError, match="in use by another logicpipe run"):
            with RunFolder(tmp_path / "out"):
                pass
    with RunFolder(tmp_path / "out"):  # released on exit
        pass


def test_identity_is_recorded_then_a_different_one_is_refused_naming_the_fields(tmp_path):
    wanted = {"kb": "abc", "logicpipe": "1", "stages": {"ask": {"model": "m", "temperature": 0.0}}}
    with RunFolder(tmp_path) as folder:
        assert folder.settle(wanted) == wanted
    assert json.loads((tmp_path / RUN_FILE).read_text()) == wanted
    other = {"kb": "xyz", "logicpipe": "1", "stages": {"ask": {"model": "m", "temperature": 0.5}}}
    with RunFolder(tmp_path) as folder, pytest.raises(UsageError, match=r"\(kb, ask.temperature differ\)"):
        folder.settle(other)
    assert json.loads((tmp_path / RUN_FILE).read_text()) == wanted  # a refused run writes nothing


def test_a_stage_run_alone_keeps_the_other_stages_identity(tmp_path):
    with RunFolder(tmp_path) as folder:
        folder.settle({"d": 1, "stages": {"formulate": {"model": "m"}, "solve": {"timeout": 5}}})
        merged = folder.settle({"d": 1, "stages": {"solve": {"timeout": 5}}})
    assert merged["stages"] == {"formulate": {"model": "m"}, "solve": {"timeout": 5}}


def test_keys_in_always_bind_even_when_only_one_side_has_them(tmp_path):
    with RunFolder(tmp_path) as folder:
        folder.settle({"d": 1, "stages": {}})
        with pytest.raises(UsageError, match=r"\(ids differ\)"):
            folder.settle({"d": 1, "ids": "sha", "stages": {}}, always=("ids",))
        folder.settle({"d": 1, "ids": "sha", "stages": {}})  # not named in `always`: a new key is recorded


def test_a_fresh_stage_may_change_and_overwrite_clears_everything_but_the_lock(tmp_path):
    with RunFolder(tmp_path) as folder:
        folder.settle({"stages": {"refine": {"model": None}}})
        folder.file("ask", Note).write(Note(id="a", text="kept"))
        assert folder.settle({"stages": {"refine": {"model": "m"}}}, fresh=("refine",))["stages"]["refine"] == {"model": "m"}
    with RunFolder(tmp_path) as folder:
        assert folder.file("ask", Note).done["a"].text == "kept"
    with RunFolder(tmp_path, overwrite=True):
        assert sorted(p.name for p in tmp_path.iterdir()) == [LOCK_FILE]


def test_records_without_run_json_are_refused_and_a_file_is_no_folder(tmp_path):
    (tmp_path / "ask.jsonl").write_text('{"id": "a"}\n')
    with RunFolder(tmp_path) as folder, pytest.raises(UsageError, match="no run.json"):
        folder.settle({"stages": {}})
    (tmp_path / "f").write_text("x")
    with pytest.raises(UsageError, match="is a file"):
        with RunFolder(tmp_path / "f"):
            pass


def test_each_stage_file_is_read_once(tmp_path):
    with RunFolder(tmp_path) as folder:
        folder.file("ask", Note).write(Note(id="a"))
    folder = RunFolder(tmp_path)  # read only: no lock taken
    for _ in range(3):
        assert list(folder.file("ask", Note).done) == ["a"]
    assert folder.reads == {"ask": 1}
