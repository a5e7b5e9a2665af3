"""The CSP and SMT grammars against their parsers (csp.gbnf, smt.gbnf, pyexpr.gbnf).

Anything a grammar accepts must parse, up to the conditions each .gbnf file leaves to the parser (they
are not context-free); anything the parser accepts must be in the exact grammar, up to the rare forms
each file lists as stricter. Checked on mutated programs (logicpipe.testing.fuzz, and token edits of
accepted programs, which land inside the grammar far more often) and on small programs of each
construct.
"""

from __future__ import annotations

import random
import re
import runpy
from pathlib import Path

import pytest

from logicpipe.core.errors import ProgramCheckError, ProgramParseError
from logicpipe.core.jsonl import LONE_SURROGATE
from logicpipe.llm.grammars import EXACT_MARKS, NAME, load
from logicpipe.runtime.pool import SolverCall, WorkerPool
from logicpipe.solvers import get_solver
from logicpipe.solvers.pyexpr import parse_expression
from logicpipe.testing.fuzz import programs, seeds
from tests.llm.gbnf import Recogniser
from tests.llm.test_grammars import PROGRAMS

LANGUAGES = ("csp", "smt")
# Characters that are no line break to str.splitlines() and may start a Domain: line.
_DOMAIN_START = re.compile(r"[^A-Za-z\-=#:\s]")


@pytest.fixture(scope="module")
def exact():
    return {language: Recogniser(load(language)) for language in LANGUAGES}


@pytest.fixture(scope="module")
def decoding():
    return {language: Recogniser(load(language, decoding=True)) for language in LANGUAGES}


def parse_error(language: str, text: str) -> str | None:
    try:
        get_solver(language).parse(text)
    except ProgramParseError as exc:
        return str(exc)
    except ProgramCheckError:  # well formed; its names or values are wrong
        return None
    return None


def stricter(language: str, text: str) -> str | None:
    """Why the exact grammar may reject a program its parser takes: a form the .gbnf files list as
    stricter (None: no such form in the text)."""
    lines = text.splitlines()
    if language == "csp":
        headers = [i for i, line in enumerate(lines) if re.fullmatch(
            r"\s*(Domain|Variables|Constraints|Query)\s*::?(\s+:::.*)?\s*", line)]
        if headers and any(line.split(":::")[0].strip() for line in lines[:headers[0]]):
            return "text before the first header"
        section = None
        for line in lines:
            code = line.split(":::")[0].strip()
            if code.endswith(":") and code.rstrip(":").strip() in ("Domain", "Variables", "Constraints", "Query"):
                section = code.rstrip(":").strip()
            elif section == "Domain" and code and not _DOMAIN_START.match(line.lstrip()):
                return "a Domain: line that starts with a letter, '-', '=', '#' or ':'"
    if language == "smt" and any(line.lstrip().startswith("#") and ":" in line for line in lines):
        return "a comment line with ':'"
    for line in lines:
        code = line.split(":::")[0]
        for reason, pattern in _STRICTER_CODE:
            if pattern.search(code):
                return reason
    return None


# The forms pyexpr.gbnf lists as stricter than Python, as they show in a line's code.
_STRICTER_CODE = [
    ("non-ASCII text in code", re.compile(r"[^\x00-\x7f]")),
    ("a backquote", re.compile("`")),
    ("a keyword operator touching what stands on its left", re.compile(r"[)\]'\"0-9](and|or|not|in)\b")),
    ("adjacent strings with no space between", re.compile(r"['\"]['\"]")),
    ("a backslash before ':' in a string", re.compile(r"\\:")),
    ("a \\N{...} escape", re.compile(r"\\N\{")),
]


# Token edits: delete, repeat, swap with the next, or replace by a token of the language.
_TOKEN = re.compile(r"\s+|\w+|'[^'\n]*'|\"[^\"\n]*\"|:::|::|==|!=|<=|>=|//|->|\[IN\]|.")
_VOCABULARY = {
    "csp": ["not", "and", "or", "in", "-", "+", "*", "//", "%", "==", "<", "(", ")", "[", "]", ",", ":", ":::",
            "#", "None", "True", "'s'", "0", "07", "1_0", "2**3", "__x", "if", "abs", "min", "max", "range",
            "AllDifferentConstraint", "[IN]", "Query:", "Constraints:", "Variables:", "Domain:", "A)", "\n",
            "---", "Question:", "x.y", "/", "is"],
    "smt": ["not", "and", "or", "in", "-", "*", "==", "=", "(", ")", "[", "]", ",", ":", ":::", "#", "None",
            "True", "0", "9" * 20, "__x", "lambda", "ForAll", "Exists", "Count", "Distinct", "is_valid", "is_sat",
            "EnumSort", "IntSort", "Function", "->", "# Options", "# Constraints", "# Declarations", "Question",
            "\n", "'a'", "x.y", "/", "if"],
}


def token_mutations(language: str, count: int, seed: int) -> list[str]:
    rng = random.Random(f"{seed}:{language}")
    bases = [PROGRAMS[language], seeds()[language], OWN[language]]
    out = []
    for _ in range(count):
        tokens = _TOKEN.findall(rng.choice(bases))
        for _ in range(rng.randint(1, 2)):
            at = rng.randrange(len(tokens))
            kind = rng.randrange(4)
            if kind == 0:
                del tokens[at]
            elif kind == 1:
                tokens.insert(at, tokens[at])
            elif kind == 2 and at + 1 < len(tokens):
                tokens[at], tokens[at + 1] = tokens[at + 1], tokens[at]
            else:
                tokens[at] = rng.choice(_VOCABULARY[language])
        out.append("".join(tokens))
    return out


def normalised(text: str) -> str:
    """As prompts.extract_program hands a reply's program to the solver: stripped, one final newline."""
    return text.strip() + "\n"


def cross_check(language: str, texts: list[str], exact: Recogniser, decoding: Recogniser) -> dict[str, int]:
    counts = {"both accept": 0, "both reject": 0, "decoding accepts": 0, "stricter": 0}
    let_through, missed, decoded = [], [], []
    for raw in texts:
        text = normalised(raw)
        if LONE_SURROGATE.search(text):  # no model can write one; execute_task reports it before parsing
            continue
        error = parse_error(language, text)
        accepted = exact.accepts(text)
        if accepted and error:
            let_through.append((error, text))
        # The decoding grammar is the exact one bounded, so only what the exact one takes is asked.
        if accepted and decoding.accepts(text):
            decoded.append(text)
        if error is None and not accepted:
            if stricter(language, text):
                counts["stricter"] += 1
            else:
                missed.append(text)
        counts["both accept"] += bool(accepted and error is None)
        counts["both reject"] += bool(not accepted and error)
    assert let_through == [], f"the {language} grammar accepts programs with syntax errors"
    assert missed == [], f"the {language} grammar rejects programs its parser accepts"
    # What a constrained model may write goes through the solver as a run sends it (worker pool,
    # parse and run, bounded): never a parse error (what the grammar leaves to the parser, names and
    # values, are check errors, which count as execution errors).
    tasks = [SolverCall(str(i), {"solver": language, "program": text, "limits": {"seconds": 5, "memory_mb": 1024}}, 20)
             for i, text in enumerate(decoded)]
    with WorkerPool("logicpipe.solvers:execute_task", 1, 1024) as pool:
        for outcome in pool.map(tasks):
            assert outcome.status in ("ok", "timeout"), outcome
            error = outcome.value.error if outcome.status == "ok" else None
            assert error is None or error.category.value != "parse", (error.message, decoded[int(outcome.key)])
    counts["decoding accepts"] = len(decoded)
    return counts


@pytest.mark.parametrize("language", LANGUAGES)
def test_mutated_demonstrations_agree_with_the_parser(language, exact, decoding):
    counts = cross_check(language, list(programs(language, 80, seed=7)), exact[language], decoding[language])
    assert counts["both accept"] >= 5 and counts["both reject"] >= 40, counts


@pytest.mark.parametrize("language", LANGUAGES)
def test_token_edits_of_accepted_programs_agree_with_the_parser(language, exact, decoding):
    counts = cross_check(language, token_mutations(language, 60, seed=11), exact[language], decoding[language])
    assert counts["both accept"] >= 10 and counts["both reject"] >= 10 and counts["decoding accepts"] >= 10, counts


@pytest.mark.slow
@pytest.mark.parametrize("language", LANGUAGES)
def test_many_more_mutations_agree_with_the_parser(language, exact, decoding):
    texts = token_mutations(language, 600, seed=101) + list(programs(language, 300, seed=101))
    counts = cross_check(language, texts, exact[language], decoding[language])
    print(language, counts)


OWN = {
    "csp": """Domain:
1: leftmost
Variables:
a [IN] [1, 2, 3]
b [IN] range(1, 4)
c [IN] ['x', "y"]
Constraints:
a < b ::: a before b
AllDifferentConstraint([a, b])
not a == b and (b in [1, 2] or abs(a - b) == 1)
c != 'x'
Query:
A) a == 1
(B) max(a, b) - min([a, b]) >= 1
""",
    "smt": """# Declarations
p = EnumSort([A1, B2])
n = IntSort([1, 2])
f = Function([p] -> [n])
# Constraints
ForAll([x:p], f(x) >= 1)
Count([x:p], f(x) == 2) == 1
# Options
Question ::: which?
is_sat(Exists([x:p], f(x) == 1)) ::: (A)
is_valid(Not(f(A1) == f(B2))) ::: (B)
""",
}

CSP = """Domain:
1: leftmost
Variables:
a [IN] [1, 2, 3]
b [IN] {domain}
Constraints:
{constraint}
Query:
A) {option}
"""
# (domain, constraint, option) accepted by the parser and the exact grammar.
CSP_GOOD = [
    ("range(3)", "a < b", "a == 1"),
    ("range(1, 10, 2)", "a != b", "b == 3"),
    ("(1, 2)", "(a, b)", "a"),
    ("1, 2,", "a in (1, 2)", "a not in [1]"),
    ("[0x1F, 0o7, 0b1, 1_000, 0_0, 00]", "a == 9223372036854775807", "a == 0x7fff_ffff_ffff_ffff"),
    ("['a:b', 'c::', \"d\\\\'\", r'\\q', u'\\u00e9', 'x' 'y']", "a < b", "a == 1"),
    ("[True, False]", "not not a", "not(a) or b"),
    ("[1]", "a in[1, 2] and(b or a)", "-a < +b"),
    ("[1]", "abs(a) + min(a, b, 3) * max((a, b)) // 2 % 3 >= 0", "a <= b <= 3"),
    ("[1]", "AllDifferentConstraint(a, b)", "a == 1 # a Python comment ::: and a note"),
    ("[1]", "AllDifferentConstraint(())", "a >= 1 ::: note"),
    ("[1]", "AllDifferentConstraint((a, b,)) # why", "a, b"),
    ("[1]", "a == -1 and b - -1 == 2", "abs(-a) == 1"),
    ("[1]", "a == 'it' \"s\"", "a == 1"),
]
# Broken lines, each rejected by both.
CSP_BAD = [
    ("range(-1, 3)", "a < b", "a == 1"),  # -1 is no constant
    ("range(1, 2, 3, 4)", "a < b", "a == 1"),
    ("[1, -2]", "a < b", "a == 1"),
    ("[]", "a < b", "a == 1"),
    ("(1)", "a < b", "a == 1"),
    ("[None]", "a < b", "a == 1"),
    ("[01]", "a < b", "a == 1"),
    ("[9223372036854775808]", "a < b", "a == 1"),
    ("[0x8000000000000000]", "a < b", "a == 1"),
    ("['\\N{NO SUCH NAME}']", "a < b", "a == 1"),
    ("['\\x4']", "a < b", "a == 1"),
    ("['a:::b']", "a < b", "a == 1"),
    ("[1]", "a == not b", "a == 1"),
    ("[1]", "- not a", "a == 1"),
    ("[1]", "a andb", "a == 1"),
    ("[1]", "a is b", "a == 1"),
    ("[1]", "a / b == 1", "a == 1"),
    ("[1]", "a ** 2 == 1", "a == 1"),
    ("[1]", "a = 1", "a == 1"),
    ("[1]", "None == a", "a == 1"),
    ("[1]", "__x == a", "a == 1"),
    ("[1]", "if == a", "a == 1"),
    ("[1]", "a[0] == 1", "a == 1"),
    ("[1]", "abs(a, b) == 1", "a == 1"),
    ("[1]", "max(a) == 1", "a == 1"),
    ("[1]", "min([]) == 1", "a == 1"),
    ("[1]", "sum([a, b]) == 1", "a == 1"),
    ("[1]", "AllDifferentConstraint([a, b]) and a", "a == 1"),
    ("[1]", "AllDifferentConstraint([a], b)", "a == 1"),
    ("[1]", "AllDifferentConstraint([a, 1])", "a == 1"),
    ("[1]", "a < b", "AllDifferentConstraint([a, b])"),
    ("[1]", "a < b", ""),
]


def _accepted_by_both(language, text, exact):
    get_solver(language).parse(text)
    assert exact[language].accepts(text)


def _rejected_by_both(language, text, exact):
    with pytest.raises(ProgramParseError):
        get_solver(language).parse(text)
    assert not exact[language].accepts(text)


# Literals the decoding grammar leaves out (pyexpr.gbnf: decimal integers below 10**9, strings without
# escapes or ':', one at a time), so that a decoder follows few parses at an operand's start.
_EXACT_ONLY = {CSP_GOOD[4], CSP_GOOD[5], CSP_GOOD[-1]}


@pytest.mark.parametrize("domain, constraint, option", CSP_GOOD)
def test_csp_constructs_accepted_by_both(domain, constraint, option, exact, decoding):
    text = CSP.format(domain=domain, constraint=constraint, option=option)
    get_solver("csp").parse(text)
    assert exact["csp"].accepts(text)
    assert decoding["csp"].accepts(text) == ((domain, constraint, option) not in _EXACT_ONLY)


@pytest.mark.parametrize("domain, decoded", [
    ("[0, 7, 999999999]", True), ("['a b', \"c\"]", True), ("[1000000000]", False), ("[0x1F]", False),
    ("[1_000]", False), ("['a:b']", False), ("['\\n']", False), ("[r'a']", False),
])
def test_the_decoding_grammar_takes_plain_literals_only(domain, decoded, exact, decoding):
    text = CSP.format(domain=domain, constraint="a < b", option="a == 1")
    get_solver("csp").parse(text)
    assert exact["csp"].accepts(text) and decoding["csp"].accepts(text) == decoded


@pytest.mark.parametrize("length, decoded", [(1, True), (NAME, True), (NAME + 1, False), (48, False)])
def test_the_decoding_grammar_bounds_names(length, decoded, exact, decoding):
    # SmolLM2-135M wrote names of 48 random letters, a token each, until its tokens ran out; the
    # released programs' longest name has 22 characters.
    name = "v" * length
    csp = CSP.format(domain="[1]", constraint=f"a < {name}", option="a == 1").replace("b [IN]", f"{name} [IN]")
    smt = SMT.format(declaration=f"{name} = EnumSort([w])", constraint=f"Count([p:{name}], p) == 1",
                     option="is_valid(x)")
    for language, text in (("csp", csp), ("smt", smt)):
        get_solver(language).parse(text)
        assert exact[language].accepts(text) and decoding[language].accepts(text) == decoded, language


@pytest.mark.parametrize("constraint, decoded", [
    ("x[0][1] == 1", True), ("x[0][1][2] == 1", False), ("x[0, 1] == 1", True), ("x[0, 1, 2] == 1", False),
    ("x in [a, b]", True), ("x in [a, b] + [c]", False), ("And([a, b][0], f([c]))", True), ("x == [a, b]", False), ("[a] + [b] == x", False),
    ("x == 1, y == 2", False), ("f(" + ", ".join("abcdefgh") + ")", True), ("f(" + ", ".join("abcdefghi") + ")", False),
])
def test_the_decoding_grammar_keeps_smt_lines_short(constraint, decoded, exact, decoding):
    # SmolLM2-135M chained lists with `+` and as subscripts, and wrote four expressions to a line: the
    # decoding grammar takes two subscripts, lists never after an arithmetic or comparison operator,
    # one expression a line, eight arguments a call.
    text = SMT.format(declaration="x = Function([people] -> [people])", constraint=constraint,
                      option="is_valid(x)")
    get_solver("smt").parse(text)
    assert exact["smt"].accepts(text) and decoding["smt"].accepts(text) == decoded


@pytest.mark.parametrize("domain, constraint, option", CSP_BAD)
def test_csp_broken_constructs_rejected_by_both(domain, constraint, option, exact):
    _rejected_by_both("csp", CSP.format(domain=domain, constraint=constraint, option=option), exact)


CSP_LAYOUTS_GOOD = [
    # Any order, repeated sections, headers with '::' and notes, an end line and anything after it.
    "Query:\nA) a == 1\nConstraints:\nVariables:\na [IN] [1]\n",
    "Variables::\na [IN] [1]\nConstraints: ::: none\nQuery:\nQuery:\nA) a == 1\nVariables:\nb [IN] [2]\n",
    "Domain:\n(1) left\n1: ::: x\nVariables:\na [IN] [1]\nConstraints:\nQuery:\nA) a == 1\n------\nAnything: here\n",
    "Variables:\na [IN] [1]\nConstraints:\nQuery:\nA) a == 1\nQuestion 2: which?\nB) ignored(\n",
    "Variables:\na [IN] [1]\n\n  ::: a note\nConstraints:\nQuery:\nA)a == 1\nb) a != 2\n",
]
CSP_LAYOUTS_BAD = [
    "Variables:\na [IN] [1]\nQuery:\nA) a == 1\n",  # no Constraints:
    "Variables:\na [IN] [1]\nConstraints:\nQuery:\n",  # no option
    "Variables:\na [IN] [1]\nConstraints:\nQuery:\n---\nA) a == 1\n",  # the program ends before the option
    "Variables:\na [IN] [1]\nConstraints:\nQuery: :\nA) a == 1\n",  # 'Query: :' is no header
    "Variables:\na [IN] [1]\nConstraints::::: x\nQuery:\nA) a == 1\n",  # 'Constraints' then a comment
    "Domain:\n1: x\nVariables:\n1a [IN] [1]\nConstraints:\nQuery:\nA) a == 1\n",
    "Variables:\na [IN] [1]\nConstraints:\nQuery:\nA. a == 1\n",
]


@pytest.mark.parametrize("text", CSP_LAYOUTS_GOOD)
def test_csp_layouts_accepted_by_both(text, exact):
    _accepted_by_both("csp", text, exact)


@pytest.mark.parametrize("text", CSP_LAYOUTS_BAD)
def test_csp_broken_layouts_rejected_by_both(text, exact):
    _rejected_by_both("csp", text, exact)


def test_decoding_grammar_ends_at_the_query(exact, decoding):
    # Text after the end of the program is ignored by the parser, so the decoding grammar forbids it,
    # the end line too (SmolLM2 wrote `Explanation 4567...` until its tokens ran out).
    text = CSP_LAYOUTS_GOOD[2]
    assert exact["csp"].accepts(text) and not decoding["csp"].accepts(text)
    # (The decoding grammar also wants a constraint: it steers a model past an empty section.)
    program = text.replace("Constraints:\n", "Constraints:\na == 1\n")
    assert not decoding["csp"].accepts(program.replace("Anything: here\n", ""))
    assert decoding["csp"].accepts(program.replace("------\nAnything: here\n", ""))


SMT = """# Declarations
people = EnumSort([Ann, Bob])
{declaration}
# Constraints
{constraint}
# Options
{option}
"""
SMT_GOOD = [
    ("days = IntSort([1, 2, -3])", "ForAll([p:people], p == p)", "is_valid(True)"),
    ("n = EnumSort(['-1', \"0002\", 9223372036854775807])", "Distinct([p:people], p)", "is_sat(x) ::: (B)"),
    ("s = EnumSort([, a ,, 'b', ])", "Sum([1, 2][0:1]) == x[::2][0]", "is_unsat(y) # why ::: (C)"),
    ("f = Function(people, people -> bool)", "Exists([p:people, q:people, 1:2], f(p))", "is_accurate_list([a, b])"),
    ("g = Function([people, people] -> [int])", "Count([p:people], f(p)[0]) >= 2", "is_exception(is_sat(a),)"),
    ("h=Function(a->b) ::: note", "f( [ x : people ] , x)", "Question anything: here\nis_valid (a)"),
    ("x == 1", "(not x) or y and not(z)", "is_valid(x[1, 2:3, ::])"),
    ("# just a comment\n  ## options no header", "a in [1, 2] and b not in(3, 4)", "is_valid(f(x)[0][1])"),
    ("1a = EnumSort([b3])", "'s' 'b' == r'x\\'' ", "is_valid(([x:people]))"),
]
SMT_BAD = [
    ("n = EnumSort([])", "x", "is_valid(x)"),
    ("n = EnumSort([a b])", "x", "is_valid(x)"),
    ("n = EnumSort([9223372036854775808])", "x", "is_valid(x)"),
    ("n = EnumSort([000000000000000000001])", "x", "is_valid(x)"),
    ("n = EnumSort((a, b))", "x", "is_valid(x)"),
    ("f = Function([people])", "x", "is_valid(x)"),
    ("f = Function([people][bool])", "x", "is_valid(x)"),
    ("f = Function(people -> 1x)", "x", "is_valid(x)"),
    ("n = EnumSort([a]) # sorts", "x", "is_valid(x)"),
    ("# a comment ::: with a note", "x", "is_valid(x)"),
    ("n = EnumSort([a])", "n = EnumSort([a])", "is_valid(x)"),
    ("x", "ForAll(p, [x:people])", "is_valid(x)"),
    ("x", "ForAll([x+1:people], x)", "is_valid(x)"),
    ("x", "f(x)(y)", "is_valid(x)"),
    ("x", "x[0](y)", "is_valid(x)"),
    ("x", "True(x)", "is_valid(x)"),
    ("x", "x.y == 1", "is_valid(x)"),
    ("x", "[x for x in y]", "is_valid(x)"),
    ("x", "x[]", "is_valid(x)"),
    ("x", "f(a=1)", "is_valid(x)"),
    ("x", "Question", "is_valid(x) and is_sat(y)"),
    ("x", "x", "is_valid(x)[0]"),
    ("x", "x", "check(x)"),
    ("x", "x", "Which is true?"),
]


@pytest.mark.parametrize("declaration, constraint, option", SMT_GOOD)
def test_smt_constructs_accepted_by_both(declaration, constraint, option, exact, decoding):
    text = SMT.format(declaration=declaration, constraint=constraint, option=option)
    get_solver("smt").parse(text)
    # The decoding grammar takes no comment lines (a model's tokens go to the program), no constraint
    # among the declarations, only plain literals (an escaped, prefixed string is left out), and no
    # empty members of a sort.
    assert exact["smt"].accepts(text)
    left_out = "#" in declaration or declaration == "x == 1" or "r'" in constraint or ",," in declaration
    assert decoding["smt"].accepts(text) != left_out


@pytest.mark.parametrize("declaration, constraint, option", SMT_BAD)
def test_smt_broken_constructs_rejected_by_both(declaration, constraint, option, exact):
    _rejected_by_both("smt", SMT.format(declaration=declaration, constraint=constraint, option=option), exact)


SMT_LAYOUTS_GOOD = [
    "# Options\nis_valid(x)\n# Declarations\nx = EnumSort([a])\n",
    "\n# comment first\n\n#OPTIONS\nis_sat(x)\n# Options ::: again\nQuestion\n##  constraints\nx\n",
    "# Declarations\n# Options\n# Constraints\n# options\nis_valid(x)\n# optionsX\n",
]
SMT_LAYOUTS_BAD = [
    "x == 1\n# Options\nis_valid(x)\n",  # text before the first header
    "# Options\nQuestion ::: which?\n",  # no option
    "# Constraints\nx\n# Options\ny\n# Options\nis_valid(z)\n",  # y is no option
    "# Declarations\nQuestion x\n# Options\nis_valid(z)\n",  # Question lines belong to the options
    "# Options\nis_valid(z)\n# Option\ny\n",  # '# Option' is a comment: y would be an option
]


@pytest.mark.parametrize("text", SMT_LAYOUTS_GOOD)
def test_smt_layouts_accepted_by_both(text, exact):
    _accepted_by_both("smt", text, exact)


@pytest.mark.parametrize("text", SMT_LAYOUTS_BAD)
def test_smt_broken_layouts_rejected_by_both(text, exact):
    _rejected_by_both("smt", text, exact)


def _expression_recogniser(rule: str) -> Recogniser:
    """The CSP grammar started at one of its rules, for checking single tokens."""
    return Recogniser(load("csp").replace("root ::=", "csp-root ::=") + f"root ::= {rule}\n")


def test_integer_literals_up_to_the_bound_exactly():
    recogniser = _expression_recogniser("py-int")
    rng = random.Random(3)
    values = [0, 1, 7, 2**63 - 1, 2**63, 2**64, 10**18, 10**19, 9223372036854775799, 9223372036854775810]
    values += [rng.randrange(2**rng.randint(1, 66)) for _ in range(150)]
    for value in values:
        for text in (str(value), hex(value), oct(value), bin(value), f"{value:_}", f"0x{value:_x}",
                     "0x00" + f"{value:x}", "0" + str(value), str(value) + "_"):
            try:
                parse_expression(text, 1)
                parsed = True
            except ProgramParseError:
                parsed = False
            assert recogniser.accepts(text) == parsed, text


def test_names_are_no_keywords_and_no_dunder_names():
    import keyword

    recogniser = _expression_recogniser("py-name")
    for word in keyword.kwlist + ["__x", "__", "1x", "x-y", ""]:
        assert not recogniser.accepts(word), word
    for word in ["_", "_x", "x__", "Nonex", "Tru", "Trues", "i", "iff", "is_valid", "lambda_", "notin", "a1"]:
        parse_expression(word, 1)
        assert recogniser.accepts(word), word


@pytest.mark.parametrize("rules", ["names", "integers", "members", "hash_lines"])
def test_generated_rules_are_what_the_script_writes(rules):
    script = runpy.run_path(str(Path(__file__).parents[2] / "scripts" / "grammar_rules.py"))
    files = {name: load(name) for name in LANGUAGES}
    for line in script[rules]():
        exact = line
        for marker, value in EXACT_MARKS.items():
            exact = exact.replace(marker, value)
        assert any(exact in text.splitlines() for text in files.values()), line
