"""Records: the exception-to-error mapping and lines that always read back."""

import pytest

from logicpipe.core.errors import LLMError, ProgramExecutionError, ProgramParseError, SolverTimeout
from logicpipe.core.jsonl import MAX_RECORD_BYTES, encode_record
from logicpipe.core.records import ErrorCategory, SolveRecord, stage_error


@pytest.mark.parametrize("exc, category, transient", [
    (ProgramParseError("bad token", 3, 4, "x >>> y"), "parse", False),
    (ProgramExecutionError("unknown function f"), "execution", False),
    (SolverTimeout("no verdict in 10 s"), "timeout", False),
    (LLMError("gave up after 3 attempts", transient=True), "llm", True),
    (LLMError("HTTP 400: bad request"), "llm", False),
    (RecursionError("deep"), "execution", False),
    (KeyError("x"), "execution", False),
])
def test_one_function_maps_every_exception_to_a_typed_error(exc, category, transient):
    error = stage_error(exc)
    assert error.category == ErrorCategory(category) and error.transient is transient
    assert error.message


def test_a_parse_error_names_line_column_and_source():
    assert str(ProgramParseError("bad token", 3, 4, "x >>> y")) == "line 3, column 4: bad token in 'x >>> y'"


def solve(**fields):
    return SolveRecord(id="p1", dataset="d", solver="csp", **fields)


def test_text_a_json_reader_rejects_is_replaced_so_the_line_reads_back():
    record = solve(verdict="A", explanation={"sample": ["a\ud800b", 10**4000, float("inf")]})
    line = encode_record(record)
    back = SolveRecord.model_validate_json(line)
    assert back.explanation["sample"][0] == "a\ufffdb"
    assert back.explanation["sample"][1].endswith("(an integer too large to store)")
    assert back.verdict == "A"


def test_an_oversized_explanation_is_dropped_with_a_note():
    record = solve(verdict="A", explanation={"tree": "x" * (MAX_RECORD_BYTES + 10)})
    line = encode_record(record)
    assert len(line) < 1000
    assert "dropped" in SolveRecord.model_validate_json(line).explanation["truncated"]


def test_a_plain_record_is_written_as_pydantic_writes_it():
    record = solve(verdict="B", explanation={"options": {"A": False, "B": True}})
    assert encode_record(record) == (record.model_dump_json() + "\n").encode()
