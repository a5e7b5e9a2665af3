import pytest

from logicpipe.core.errors import ProgramParseError
from logicpipe.solvers import execute_task
from logicpipe.solvers.sections import walk_sections

NAMES = ("Facts", "Query")


def walk(text: str, notes: list[str] | None = None, **options) -> list[tuple[str, int, str, str]]:
    return [(line.section, line.number, line.code, line.comment)
            for line in walk_sections(text, NAMES, notes=notes, **options)]


def test_lines_fall_under_their_section_with_comments_split():
    assert walk("Facts:\nA(x) ::: a is x\n\nQuery:\nB(y)") == [
        ("Facts", 2, "A(x)", "a is x"), ("Query", 5, "B(y)", "")]


def test_repeated_headers_merge_unless_unique():
    text = "Facts:\nA\nQuery:\nQ\nFacts:\nB"
    assert [(s, c) for s, _, c, _ in walk(text)] == [("Facts", "A"), ("Query", "Q"), ("Facts", "B")]
    with pytest.raises(ProgramParseError, match="section 'Facts:' appears twice"):
        walk(text, unique=True)


def test_aliases_and_seen_headers():
    seen: set[str] = set()
    lines = list(walk_sections("Fact:\nA", NAMES, aliases={"Fact": "Facts"}, seen=seen))
    assert [line.section for line in lines] == ["Facts"] and seen == {"Facts"}


def test_without_notes_nothing_is_dropped():
    with pytest.raises(ProgramParseError, match="line 1: text before the first section header"):
        walk("Sure, here it is.\nFacts:\nA")
    assert walk("Facts:\nA\n------\nB")[-1] == ("Facts", 4, "B", "")


def test_text_before_the_first_header_is_dropped_and_noted():
    notes: list[str] = []
    assert walk("Sure, here it is.\nProgram:\n\nFacts:\nA", notes) == [("Facts", 5, "A", "")]
    assert notes == ["ignored 2 lines before the first section header: 'Sure, here it is.'"]


@pytest.mark.parametrize("marker", ["------", "  ###", "=====", "Problem:", "Question: Is A true?",
                                    "Explanation: because", "Example 2:", "context:", "\u00a0OPTIONS 3 :"])
def test_the_program_ends_at_a_stop_line_or_a_next_problem(marker):
    notes: list[str] = []
    text = f"Facts:\nA\nQuery:\nB\n{marker}\nFacts:\nC\n\nQuery:\nD"
    assert walk(text, notes) == [("Facts", 2, "A", ""), ("Query", 4, "B", "")]
    assert notes == [f"ignored 5 lines after the end of the program: {marker.strip()!r}"]


def test_a_long_dropped_line_is_shortened_in_the_note():
    notes: list[str] = []
    walk("Facts:\nA\nProblem: " + "word " * 40, notes)
    assert len(notes[0]) < 120 and notes[0].endswith("...'")


@pytest.mark.parametrize("solver, program", [
    ("csp", "Sure, here it is.\nDomain:\n1: left\n2: right\nVariables:\nx [IN] [1, 2]\nConstraints:\nx == 2\n"
            "Query:\nA) x == 2\nB) x == 1\n------\nProblem:\nThe next puzzle...\n"),
    ("fol", "Here is the program.\nPredicates:\nP(x)\nPremises:\nP(a) ::: a is P.\nConclusion:\nP(a) ::: a is P.\n"
            "------\nProblem: another one\n"),
])
def test_fol_and_csp_drop_what_runs_past_the_program_and_say_so(solver, program):
    out = execute_task({"solver": solver, "program": program})
    assert out.verdict in ("A", "True") and out.error is None
    ignored = out.explanation["ignored"]
    assert any("before the first section header" in note for note in ignored), ignored
    assert any("Problem" in note or "---" in note for note in ignored), ignored
