"""Programs a person writes (`--programs` as a JSONL file or a folder of `<id>.<ext>` files) replay as
Logic-LM's released file does, through the CLI on FOLIO's real programs (multi-line, with ∀ and ⊕)."""

import json
from pathlib import Path

from tests.conftest import cli

RELEASED = "FOLIO_dev_gpt-4.json"
LIMIT = 6


def by_id(path: Path) -> dict[str, dict]:
    return {r["id"]: r for r in (json.loads(line) for line in path.read_text().splitlines())}


def replay(data_dir: Path, out: Path, programs: Path) -> dict[str, tuple]:
    """id -> (program, verdict, answer) of a replay of `programs` over the first problems of FOLIO dev."""
    done = cli("run", "-d", "folio", "-n", str(LIMIT), "--data-dir", str(data_dir), "--out", str(out),
               "--programs", str(programs), "--max-rounds", "0")
    assert done.returncode == 0, done.stderr
    formulated, solved = by_id(out / "folio" / "formulate.jsonl"), by_id(out / "folio" / "solve.jsonl")
    answered = by_id(out / "folio" / "interpret.jsonl")
    return {pid: (formulated[pid]["program"], solved[pid]["verdict"],
                  (solved[pid]["error"] or {}).get("category"), answered[pid]["predicted"]) for pid in formulated}


def test_a_jsonl_file_and_a_folder_replay_as_the_released_file(data_dir, tmp_path):
    released = json.loads((data_dir / "programs" / RELEASED).read_text())[:LIMIT]
    expected = replay(data_dir, tmp_path / "released", data_dir / "programs" / RELEASED)
    assert sum(verdict is not None for _, verdict, _, _ in expected.values()) >= LIMIT - 1
    lines = tmp_path / "mine.jsonl"
    lines.write_text("".join(json.dumps({"id": r["id"], "program": r["raw_logic_programs"][0]}, ensure_ascii=False)
                             + "\n\n" for r in released))  # blank lines between records are allowed
    folder = tmp_path / "mine"
    folder.mkdir()
    for record in released:
        (folder / f"{record['id']}.fol").write_text(record["raw_logic_programs"][0])  # the text as written
    (folder / ".DS_Store").write_bytes(b"\x00\x01")  # a hidden file is no program
    assert replay(data_dir, tmp_path / "lines", lines) == expected
    assert replay(data_dir, tmp_path / "folder", folder) == expected
    assert any("∀" in program for program, *_ in expected.values())  # the text is not ASCII


def test_a_missing_or_empty_program_is_that_problems_no_program_record(data_dir, tmp_path):
    released = json.loads((data_dir / "programs" / RELEASED).read_text())[:LIMIT]
    folder = tmp_path / "mine"
    folder.mkdir()
    for record in released[2:]:
        (folder / f"{record['id']}.fol").write_text(record["raw_logic_programs"][0])
    (folder / f"{released[1]['id']}.fol").write_text("\n")  # empty: no program; released[0] has no file
    got = replay(data_dir, tmp_path / "out", folder)
    for record in released[:2]:
        assert got[record["id"]][:3] == (None, None, "no_program")
    assert all(got[r["id"]][1] is not None for r in released[2:])
