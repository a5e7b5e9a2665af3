"""Stage files: read once, latest record wins, transient failures are redone, input order at the end."""

from logicpipe.core.records import ErrorCategory, InterpretRecord, StageError
from logicpipe.core.stagefile import StageFile


def answer(identifier, final="A", **extra):
    return InterpretRecord(id=identifier, executed=True, predicted=final, final=final, **extra)


def lines(path):
    return path.read_text().splitlines()


def test_finish_puts_records_in_input_order_and_keeps_only_the_given_ids(tmp_path):
    path = tmp_path / "interpret.jsonl"
    stage = StageFile(path, InterpretRecord)
    for identifier in ("c", "a", "z", "b"):
        stage.write(answer(identifier))
    stage.finish(["a", "b", "c"])
    assert list(stage.done) == ["a", "b", "c"]
    assert [line[line.index('"id"'):][6:7] for line in lines(path)] == ["a", "b", "c"]


def test_a_file_already_in_order_is_not_rewritten(tmp_path):
    path = tmp_path / "interpret.jsonl"
    stage = StageFile(path, InterpretRecord)
    for identifier in ("a", "b"):
        stage.write(answer(identifier))
    stage.finish(["a", "b"])
    inode = path.stat().st_ino
    StageFile(path, InterpretRecord).finish(["a", "b"])
    assert path.stat().st_ino == inode


def test_transient_failures_are_missing_and_the_newer_record_wins(tmp_path):
    path = tmp_path / "interpret.jsonl"
    stage = StageFile(path, InterpretRecord)
    outage = StageError(category=ErrorCategory.llm, message="HTTP 503", transient=True)
    refused = StageError(category=ErrorCategory.llm, message="HTTP 400")
    stage.write(answer("a", error=outage))
    stage.write(answer("b", error=refused))
    stage.write(answer("c", backup_error=outage))
    stage.finish(["a", "b", "c"])
    reread = StageFile(path, InterpretRecord)
    assert [i for i, record in reread.done.items() if record.retry()] == ["a", "c"]
    reread.write(answer("a", final="B"))
    reread.finish(["a", "b", "c"])
    assert StageFile(path, InterpretRecord).done["a"].final == "B" and len(lines(path)) == 3


def _torn_after_a(tmp_path):
    """A stage file holding record a, then the torn start of record b (a crash mid-write), reopened."""
    path = tmp_path / "interpret.jsonl"
    stage = StageFile(path, InterpretRecord)
    stage.write(answer("a"))
    stage.finish(["a"])
    with open(path, "a") as handle:
        handle.write('{"schema_version": 2, "id": "b", "exec')
    return path, StageFile(path, InterpretRecord)


def test_a_torn_last_line_is_dropped_and_repaired(tmp_path):
    path, stage = _torn_after_a(tmp_path)
    assert list(stage.done) == ["a"]
    stage.write(answer("b"))
    stage.finish(["a", "b"])
    assert len(lines(path)) == 2 and StageFile(path, InterpretRecord).done["b"].final == "A"


def test_a_torn_tail_longer_than_a_read_block_is_cut_at_the_last_whole_record(tmp_path):
    from logicpipe.core.jsonl import repair_torn_tail

    path = tmp_path / "interpret.jsonl"
    whole = answer("a").model_dump_json() + "\n"
    path.write_text(whole + '{"id": "b", "explanation": "' + "x" * 200_000)
    repair_torn_tail(path)
    assert path.read_text() == whole
    path.write_text("x" * 100_000)  # no whole record at all
    repair_torn_tail(path)
    assert path.read_bytes() == b""


def test_a_record_read_before_the_torn_line_is_cut_does_not_hide_the_new_one(tmp_path):
    path, stage = _torn_after_a(tmp_path)
    assert stage.done["a"].final == "A"  # its reader has now buffered the torn line too
    stage.write(answer("b", final="C"))  # where the torn line was
    assert stage.done["b"].final == "C"
    stage.finish(["b", "a"])
    assert [r.final for r in map(InterpretRecord.model_validate_json, lines(path))] == ["C", "A"]
