import ast

import pytest

from logicpipe.core.errors import ProgramParseError
from logicpipe.solvers.pyexpr import INT_BOUND, MAX_DEPTH, clip, parse_expression


def reason(text: str) -> ProgramParseError:
    with pytest.raises(ProgramParseError) as caught:
        parse_expression(text, 7)
    assert caught.value.line == 7
    return caught.value


@pytest.mark.parametrize("text, symbol, instead", [
    ("a | b", "|", "or"), ("a & b", "&", "and"), ("~a", "~", "not"), ("a / 2", "/", "//"),
    ("a is b", "is", "=="), ("a is not b", "is not", "!="), ("a ^ b", "^", None), ("a << 1", "<<", None),
    ("a >> 1", ">>", None), ("a @ b", "@", None), ("a ** 2", "**", None),
])
def test_a_forbidden_operator_is_named_by_its_source_symbol(text, symbol, instead):
    error = reason(f"x == 1 and ({text})")
    hint = f" (write '{instead}')" if instead else ""
    assert error.reason == f"'{symbol}' is not allowed here{hint}"
    assert error.column == 13  # operators carry no position; their expression's column stands in


def test_a_string_that_is_not_valid_unicode_is_rejected():
    error = reason("a == '\\ud800'")
    assert error.reason == "string '\\ud800' is not valid Unicode (a lone surrogate escape)"
    assert error.column == 6


def test_integers_are_bounded_to_64_bits():
    assert parse_expression(f"a == {INT_BOUND - 1}", 1) is not None
    assert parse_expression(f"a == -{INT_BOUND - 1}", 1) is not None
    assert reason(f"a == {INT_BOUND}").reason.startswith("integer 9223372036854775808 is out of range")
    huge = reason("a == 0x" + "f" * 3600)
    assert huge.reason == "integer 0xfffffffffffffffffff... is out of range (at most 2**63 - 1 in size)"
    assert len(str(huge)) < 300


def test_a_deep_tree_is_a_parse_error_not_a_recursion_error():
    assert parse_expression(" + ".join(["a"] * 40) + " == 1", 1) is not None
    error = reason("a == " + " + ".join(["b"] * 2000))
    assert error.reason == f"expression nests more than {MAX_DEPTH} levels deep; split it into smaller parts"
    assert len(str(error)) < 300
    assert "nested parentheses" in reason("(" * 300 + "a" + ")" * 300).reason


def test_other_constructs_and_constants_are_named():
    assert reason("a.b").reason == "'attribute access' is not allowed here"
    assert reason("[x for x in a]").reason == "'list comprehension' is not allowed here"
    assert reason("a == None").reason == "constant None is not allowed"
    assert reason("a == 1.5").reason == "constant 1.5 is not allowed"


def test_clip_keeps_short_text_and_shortens_long_text():
    assert clip("a  ==\n 1") == "a == 1"
    assert clip("x" * 500, 20) == "x" * 17 + "..."


@pytest.mark.parametrize("text", ["x == 1if y", "'\\d' == x", "0x1for == 2"])
def test_pythons_own_syntax_hints_never_reach_the_user(text, recwarn):
    # Python warns of a number run into a word or an invalid escape; the program's author is told of
    # errors by the parser, never by a Python warning on the worker's stderr.
    try:
        parse_expression(text, 1)
    except ProgramParseError:
        pass
    assert not [w for w in recwarn if issubclass(w.category, (SyntaxWarning, DeprecationWarning))]


def test_a_text_parsed_before_is_still_checked_against_each_callers_rules_and_line():
    assert isinstance(parse_expression("f(x) == 1", 2, calls=frozenset({"f"})), ast.Compare)
    with pytest.raises(ProgramParseError, match="unknown function 'f'") as caught:
        parse_expression("f(x) == 1", 5, calls=frozenset({"g"}))
    assert caught.value.line == 5
    for line in (3, 9):  # a refused text is refused again, at the line of the program it is in
        assert reason_at("x | y", line).line == line


def reason_at(text: str, line: int) -> ProgramParseError:
    with pytest.raises(ProgramParseError) as caught:
        parse_expression(text, line)
    return caught.value
