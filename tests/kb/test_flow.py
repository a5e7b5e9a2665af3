import pytest

from logicpipe.kb.flow import code_block, read_goals
from logicpipe.kb.knowledge import KnowledgeBase
from logicpipe.kb.terms import show


@pytest.fixture(scope="module")
def read(tmp_path_factory):
    """Goals are read by SWI-Prolog's own reader, through a KB's engine."""
    path = tmp_path_factory.mktemp("kb") / "school.pl"
    path.write_text("student(alice).\n")
    with KnowledgeBase(path) as base:
        yield base.read


def test_goals_without_full_stops_are_read_line_by_line_and_bad_lines_kept_as_errors(read):
    reply = "Here you go:\n```prolog\nstudent(alice)\nteaches(X Y)\n?- eligible(bob, C)\n```\nDone."
    terms, errors = read_goals(code_block(reply), read)
    assert [show(t) for t in terms] == ["student(alice)", "eligible(bob, C)"]
    assert len(errors) == 1 and errors[0].startswith("teaches(X Y) -- ")


def test_a_well_formed_block_parses_whole(read):
    terms, errors = read_goals("student(alice),\n  \\+ failed(alice, cs101).\nrequires(cs401, X).", read)
    assert [show(t) for t in terms] == ["student(alice), \\+ failed(alice, cs101)", "requires(cs401, X)"]
    assert errors == []
