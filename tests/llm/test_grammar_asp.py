"""The ASP grammar held to the ASP parser (solvers/asp.py with its whitelist, asp_check.py). clingo's
language is far wider than the grammar (asp.gbnf lists what it leaves out), so the grammar is held to
the parser one way: every program either grammar accepts gets through the parse step, on own programs
of every construct and on thousands of edited ones; our own programs for every dataset are accepted
by both grammars; and hostile programs (scripts, includes, host-language calls) by neither."""

import json
import random
import re
from functools import cache
from pathlib import Path

import pytest

from logicpipe.core.errors import ProgramParseError
from logicpipe.core.jsonl import LONE_SURROGATE
from logicpipe.llm.grammars import load
from logicpipe.prompts import extract_program
from logicpipe.solvers import get_solver
from logicpipe.testing import fuzz
from tests.llm.gbnf import Recogniser

FILES = Path(__file__).parents[1] / "solvers" / "files"


@cache
def exact():
    return Recogniser(load("asp"))


@cache
def decoding():
    return Recogniser(load("asp", decoding=True))


def parse_error(text):
    """What a reply meets before clingo runs: extract_program, the worker's check for lone surrogates,
    then the parser; None when it parses."""
    program = extract_program(text)
    if LONE_SURROGATE.search(program):
        return "lone surrogate"
    try:
        get_solver("asp").parse(program)
    except ProgramParseError as exc:
        return str(exc)
    return None


def options(line):
    return f"object(a; b).\n{line}\noption(a) :- object(a).\n"


def truth(line):
    return f"bird(tweety).\n{line}\nquery :- bird(tweety).\n"


# One statement of each construct the grammar takes, in the one-statement-a-line shape of the decoding
# grammar (both grammars take these).
LINES = [
    "pos(1..n).", "object(a; b; c).", "1 { at(O, P) : pos(P) } 1 :- object(O).", "{ p(X) : q(X) ; r } = 2.",
    "0 <= { p } <= 1.", "{ p ; q }.", "1 { p(X) : r(X) } N :- n(N).", ":- at(O1, P), at(O2, P), O1 != O2.", ":- at(a, P), at(b, Q), P >= Q.",
    "a ; b :- not c, d.", "a | b.", "-p(X) :- q(X), not not r(X).", ":- 2 <= #count { X : p(X), X > 1 } <= 3.",
    "s(S) :- S = #sum+ { W, X : w(X, W) }.", "t(S) :- #sum { W : w(_, W) } = S, S < 10.", ":- #max { X : p(X) } > 3.",
    ":- #min { X : p(X); Y : q(Y) } <= 0.", "e :- #count { }.", "#show.", "#show at/2.", "#show -p/1.",
    "#show X : at(X, 1).", "#show p(X) : q(X), not r(X).", "#const n = 5.", '#const name = "x".',
    "#minimize { C, X : cost(X, C) }.", "#maximize { 1, X : p(X) }.", "p(X) :- q(X), #true, X < #sup.",
    ":- #false.", "p(_) :- q(_, Y), Y <> 3.", 'p("a b", "q\\"", (1, 2), f(X)) :- q(X), X = -1 * 4 \\ 3.',
    "p(X, Y) :- q(X), Y = X..X + 2, X == #inf.", "p((a, b)) :- q(-1), r(-2).", "a' :- b_1, c'x.", "nothing :- notable.",
    "p(X) :- q(X, Y), f(Y) != X, -Y < 2 - X.",
    "lp_supported :- lp_support.", "options(a) :- queryx.", "p :- option(a), query.", "% a note: the end",
    "q(X) :- p(X). % a trailing note",
]
# Programs the parser takes that only the exact grammar takes: across lines, comments between tokens,
# statements after the answer rules, and the terms and guards the decoding grammar leaves out.
EXACT_ONLY = [options(line) for line in (
    "p(X) :- q(X), X = 2 ** 3 - -1 * 4 / 2 \\ 3.", "r(- 2).", "X { p(Y) : q(Y) }.", "p :- f(a) + 1 = 2.",
    " p.", "p.  ")] + [
    "object(a;\n  b). % the objects\n:- object(X),\n   % not both\n   X = c.\noption(a) :- object(a).\n",
    "\n\n  % first\np(1).option(a):-p(1).q(2).option(b) :- q(2).\n",
    "query :- p.\np.\n\n#show query/0.\n",
    "p :- not\n% a comment between not and its atom\n q.\nquery.\n",
]
# Refused by the parser and by both grammars: syntax errors, whitelist refusals, and programs without
# exactly one kind of answer.
REFUSED = [
    options("pos(1..3)"), options(":- at(a P)."), options("1 ( at(O, P) : pos(P) ) 1."), options("p :- :- q."),
    options("p(X) :- X => 1."), options("p(a,)."), options("P(a)."), options("p :- not(q)."), options("not(a)."),
    options("p(01)."), options('p("a).'), options("#show p/1 :."), options("a :- b c."), options("{ a } } 1."),
    options('#script (python)\nimport os\n#end.'), options('#script(lua) os.exit() #end.'),
    options('#include "other.lp".'), options('#  include "x".'), options('p :- q(@f(1)).'), options("p :- q(@ f)."),
    options("#external e."), options("#program step(t)."), options("#theory t { }."), options("#heuristic a. [1, sign]"),
    options("p :- &sum { 1 } > 0."), options("lp_support_rule(1, ())."), options("p :- lp_support_x."),
    options("query :- object(a)."), truth("option(a) :- bird(tweety)."), "object(a).\np :- object(a).\n",
    options("not :- a."), options("option(b) :- not."), options("% a note\x00 that hides the rest"),
    options('p("a\x00b").'),
]
# Taken by the parser, left out of the grammar on purpose (asp.gbnf says why).
NARROWER = [
    options(":~ at(a, P). [P@1, a]"), options("%* block *%"), options("p(0x1f)."), options("p :- q : r."),
    options("_p :- q."), options("p(X) :- q(X), X = |X|."), options("p (a)."), options("p :- not X = 1, q(X)."),
    options("{ option(b) }."),
]


def test_own_programs_of_every_construct_are_taken_by_parser_and_both_grammars():
    for line in LINES:
        for text in (options(line), truth(line)):
            assert parse_error(text) is None, text
            assert exact().accepts(text) and decoding().accepts(text), text


def test_programs_across_lines_are_taken_by_the_parser_and_the_exact_grammar_only():
    for text in EXACT_ONLY:
        assert parse_error(text) is None, text
        assert exact().accepts(text) and not decoding().accepts(text), text


def test_refused_programs_are_refused_by_the_parser_and_both_grammars():
    for text in REFUSED:
        assert parse_error(text) is not None, text
        assert not exact().accepts(text) and not decoding().accepts(text), text


def test_what_the_grammar_leaves_out_the_parser_takes():
    for text in NARROWER:
        assert parse_error(text) is None, text
        assert not exact().accepts(text), text


def test_no_grammar_can_write_a_directive_the_whitelist_refuses_or_a_host_call():
    for grammar in (load("asp"), load("asp", decoding=True)):
        rules = "\n".join(line for line in grammar.splitlines() if not line.startswith("#"))
        literals = set(re.findall(r'"((?:\\.|[^"\\])*)"', rules))
        assert "@" not in "".join(literals)
        directives = {literal for literal in literals if literal.startswith("#")}
        assert directives == {"#show", "#const", "#minimize", "#maximize", "#count", "#sum", "#sum+", "#min", "#max",
                              "#inf", "#sup", "#true", "#false"}


def own_programs():
    """Our hand-written replay programs for every dataset run through ASP (tests/solvers/files)."""
    for path in sorted(FILES.glob("asp_*.json")):
        for record in json.loads(path.read_text()):
            yield record["id"], record["raw_logic_programs"][0]


def test_own_replay_programs_are_taken_by_both_grammars():
    programs = list(own_programs())
    assert len(programs) >= 5
    for problem, text in programs:
        assert parse_error(text) is None, problem
        assert exact().accepts(text), problem
        assert decoding().accepts(text), problem


# Token-level edits of own lines, and whole-program mutations of own programs: whatever either grammar
# takes must get through the parse step.
_TOKEN = re.compile(r"\w+|\s+|:-|\.\.|!=|<=|>=|<>|==|\*\*|#\w+|.")
_POOL = ["(", ")", "{", "}", ",", ";", ":", ":-", ".", "..", "not", "not ", "-", "=", "==", "!=", "<", ">=", "#count",
         "#sum", "#show", "#script", "#include", "#external", "@", "@f", "X", "_", "a", "1", "0", "01", '"', '"x"', "%",
         "%*", " ", "\n", "|", "option", "query", "lp_support_x", "#inf", "**", "*", "/", "\\", "'", "p(", "#const",
         "#minimize", "not not", "&", "~", "?", "`"]


def _edited(count, seed):
    rng = random.Random(seed)
    for _ in range(count):
        tokens = _TOKEN.findall(rng.choice(LINES))
        for _ in range(rng.randint(1, 3)):
            at = rng.randrange(len(tokens))
            edit = rng.randrange(4)
            if edit == 0 and len(tokens) > 1:
                del tokens[at]
            elif edit == 1:
                tokens.insert(at, rng.choice(_POOL))
            elif edit == 2 and at + 1 < len(tokens):
                tokens[at], tokens[at + 1] = tokens[at + 1], tokens[at]
            else:
                tokens[at] = rng.choice(_POOL)
        line = "".join(tokens)
        yield options(line) if rng.random() < 0.5 else truth(line)


def _mutated(count, seed):
    rng = random.Random(seed)
    programs = [text for _, text in own_programs()]
    for _ in range(count):
        yield fuzz.mutate(rng.choice(programs), rng).strip() + "\n"


def _check(texts):
    taken, refused, problems = 0, 0, []
    for text in texts:
        error = parse_error(text)
        in_exact, in_decoding = exact().accepts(text), decoding().accepts(text)
        if (in_exact or in_decoding) and error is not None:
            problems.append((error, text))
        if in_decoding and not in_exact:
            problems.append(("the decoding grammar is wider than the exact one", text))
        taken += in_exact
        refused += error is not None
    return taken, refused, problems


# A mutated program is a whole one, ~0.2 s through both grammars: 30 of them (12 taken, 18 refused with
# seed 5) in make test, 1500 under -m slow below.
@pytest.mark.parametrize(("make", "count"), [(_edited, 600), (_mutated, 30)], ids=["edited", "mutated"])
def test_what_either_grammar_takes_gets_through_the_parse_step(make, count):
    taken, refused, problems = _check(make(count, seed=5))
    assert problems == []
    assert taken > count // 20 and refused > count // 5  # the sample lands on both sides


@pytest.mark.slow
@pytest.mark.parametrize(("make", "count"), [(_edited, 4000), (_mutated, 1500)], ids=["edited", "mutated"])
def test_many_edited_programs_agree_with_the_parser(make, count):
    # A mutated program is a whole one (about 0.2 s through both grammars): 1500 fit the 600 s timeout.
    _, _, problems = _check(make(count, seed=17))
    assert problems == []
