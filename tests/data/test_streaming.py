"""A run's input read as it streams: problems of a JSONL task held as ids and read a chunk at a time,
a programs file indexed by byte range. Each gives what reading the whole file gives, mistakes included."""

import json
from pathlib import Path

import pytest

from logicpipe.core.errors import DataError
from logicpipe.data import check_problems, index_problems, index_programs, load_problems, load_task_file
from logicpipe.data import programs as programs_module
from logicpipe.testing.puzzles import generate


def whole(path: Path) -> dict[str, str]:
    """The programs as the whole-file reader takes them: the last record of an id wins."""
    found = {}
    for item in json.loads(path.read_text(encoding="utf-8")):
        texts = item.get("raw_logic_programs")
        if texts and texts[0].strip():
            found[str(item["id"])] = texts[0]
    return found


def test_released_programs_are_indexed_as_read_whole(data_dir, monkeypatch):
    monkeypatch.setattr(programs_module, "_BLOCK", 4096)  # records span many blocks
    programs_module._index.cache_clear()  # indexed now, with these blocks
    for name in ("ProntoQA_dev_gpt-4.json", "FOLIO_dev_gpt-4.json", "AR-LSAT_dev_gpt-4.json"):
        path = data_dir / "programs" / name
        indexed = index_programs(path)
        expected = whole(path)
        assert set(indexed) == set(expected) and len(expected) > 100
        assert indexed.texts(reversed(list(expected))) == expected


def test_a_one_line_file_with_other_than_ascii_and_repeated_ids(tmp_path, monkeypatch):
    monkeypatch.setattr(programs_module, "_BLOCK", 64)
    programs_module._index.cache_clear()
    records = [{"id": "é1", "raw_logic_programs": ["Prädikate: Katze(x) ∧ ☃"]},
               {"id": "p2", "raw_logic_programs": None}, {"id": 3, "raw_logic_programs": ["   "]},
               {"id": "p4", "raw_logic_programs": ["first"], "extra": {"nested": [1, 2, {"a": "}]"}]}},
               {"id": "p4", "raw_logic_programs": ["second \\u00e9 \"quoted\""]}, {"id": 5, "raw_logic_programs": ["x"]}]
    path = tmp_path / "programs.json"
    path.write_text(json.dumps(records, ensure_ascii=False), encoding="utf-8")
    assert index_programs(path).texts(["é1", "p2", "3", "p4", "5", "nosuch"]) == whole(path)
    assert whole(path)["p4"].startswith("second")


@pytest.mark.parametrize("text, message", [
    ('[{"id": "a", "raw_logic_programs": ["x"]},\n {"id": "b", "raw_logic_programs": ["y"]', "malformed JSON at line 2"),
    ('{"id": "a"}', "expected a JSON list of records with 'id' and 'raw_logic_programs'"),
    ('[{"id": "a", "raw_logic_programs": ["x"]}, 7]', "record 1 has no 'id'"),
    ('[{"raw_logic_programs": ["x"]}]', "record 0 has no 'id'"),
    ('[{"id": "a", "raw_logic_programs": {"x": 1}}]', "record 0 ('a'): raw_logic_programs is an object"),
    ('[{"id": "a", "raw_logic_programs": ["x"]}] [', "malformed JSON at line 1, column 44: Extra data"),
])
def test_a_bad_programs_file_fails_as_the_whole_file_reader_says(tmp_path, text, message):
    path = tmp_path / "bad.json"
    path.write_text(text)
    with pytest.raises(DataError) as caught:
        index_programs(path)
    assert str(caught.value).startswith(f"{path}: ") and message in str(caught.value)


def test_a_jsonl_task_is_held_as_ids_and_read_a_chunk_at_a_time(tmp_path):
    task, _ = generate(tmp_path, 250)
    spec = load_task_file(task)
    indexed, loaded = index_problems(spec, "dev"), load_problems(spec, "dev")
    assert indexed.ids == [p.id for p in loaded]
    assert indexed.take(100, 140) == loaded[100:140] and list(indexed) == loaded
    odd = indexed.keep(lambda i: int(i[1:]) % 2 == 1).first(10)
    assert odd.take(0, 10) == [p for p in loaded if int(p.id[1:]) % 2 == 1][:10]


def test_a_jsonl_task_with_mistakes_fails_with_load_problems_first_line(tmp_path):
    rows = [{"id": "p1", "context": "c", "question": "q", "options": ["A) yes", "B) no"], "answer": "A"},
            {"id": "p2", "context": "c", "question": "q", "options": ["A) yes", "B) no"], "answer": "B"},
            {"id": "p2", "context": "c", "question": "q", "options": ["A) yes", "B) no"], "answer": "B"},
            {"id": "p4", "context": "c", "options": ["A) yes", "B) no"], "answer": "A"}]
    (tmp_path / "rows.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows) + "\n")
    (tmp_path / "task.json").write_text(json.dumps({"name": "mine", "formalism": "lp", "prompt": "proofwriter",
                                                    "source": {"format": "jsonl", "path": "rows.jsonl"}}))
    spec = load_task_file(tmp_path / "task.json")
    with pytest.raises(DataError) as whole_file:
        load_problems(spec, "dev")
    with pytest.raises(DataError) as streamed:
        index_problems(spec, "dev")
    assert str(streamed.value) == str(whole_file.value)
    assert "row 3 (id 'p2'): duplicate id, first used by row 2 (and 1 more" in str(streamed.value)
    assert len(check_problems(spec, "dev")[1]) == 2
