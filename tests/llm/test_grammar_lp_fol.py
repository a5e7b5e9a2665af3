"""The LP and FOL grammars held to their parsers, beyond the released programs (test_grammars.py):
own programs for every construct, accepted or rejected by both; mutated programs on which grammar and
parser must agree, apart from the differences each .gbnf file documents; and the decoding grammar,
whose every program must get through the solver's parse step."""

import random
import re
import sys
from functools import cache

import pytest

from logicpipe.core.errors import ProgramParseError
from logicpipe.core.jsonl import LONE_SURROGATE
from logicpipe.llm.grammars import load
from logicpipe.prompts import extract_program
from logicpipe.solvers import get_solver
from logicpipe.solvers.sections import split_comment
from logicpipe.testing import fuzz
from tests.llm.gbnf import Recogniser, parse_grammar

LANGUAGES = ("lp", "fol")
SECTIONS = {"lp": ("Predicates", "Facts", "Rules", "Query"),
            "fol": ("Predicates", "Premises", "Conclusion", "Conclusions")}


@cache
def exact(language):
    return Recogniser(load(language))


@cache
def decoding(language):
    return Recogniser(load(language, decoding=True))


def parser_error(language, text):
    """The parser's error for a program, or None when it parses."""
    try:
        get_solver(language).parse(text)
    except ProgramParseError as exc:
        return str(exc)
    return None


def parse_step_error(language, reply):
    """What a constrained reply meets before the solver runs: extract_program, the worker's check for
    lone surrogates, then the parser."""
    program = extract_program(reply)
    if LONE_SURROGATE.search(program):
        return "lone surrogate"
    return parser_error(language, program)


# ---- own programs, one construct at a time ------------------------------------------------------

def lp_program(line, query="Big(Anne)"):
    return f"Facts:\nBig(Anne, True)\nRules:\n{line}\nQuery:\n{query}\n"


def lp_query(query):
    return f"Facts:\nBig(Anne, True)\nQuery:\n{query}\n"


LP_ACCEPTED = [
    lp_program("Red(Anne)"), lp_program("Red(Anne, Bob, False)"), lp_program("Red( the old  dog ,True )"),
    lp_program("Red('Mr Smith', False)"), lp_program('Red("a $b", True)'), lp_program("Red(True, False)"),
    lp_program("Red($x, True) && Big($x, True) >>> Kind($x, True) && Nice($x, False)"),
    lp_program("!Red($x) >>> ~Big($x) && ¬Kind($x)"), lp_program("not  Red($x) >>> NOT\tBig($x)"),
    lp_program("Not(Red($x, True)) >>> nOt( !Big($x) )"), lp_program("Nothing(a) >>> notable(a)"),
    lp_program("Red(Anne) ::: a comment ::: with ::: more"), lp_query("Big(Anne, $x)"), lp_query("Big(Anne, Bob, bool)"),
    lp_query("not Big('Anne', True)"), lp_query("Big(bool)"), lp_query("Not(Big(Anne, False))"),
    # headers as walk_sections reads them
    "\n::: a comment\nFacts ::\nBig(Anne)\n  Query:  ::: the question\n\nBig(Anne)\n",
    # sections in any order, repeated; the query before the facts
    "Predicates:\nBig($x, bool)\nQuery:\nBig(Anne)\n\nRules:\nFacts:\nBig(Anne, True)\n",
    "Rules:\nFacts:\nBig(Anne)\nPredicates:\nnot a declaration\nFacts:\nRed(Anne)\nQuery:\n\nBig(Anne)\n",
    # documentation that looks like an end-of-program marker, but is not one
    "Predicates:\n-- x\n--- Big\nProblems: none\nExample 1 2: no\nOptional(x)\nFacts:\nBig(Anne)\nQuery:\nBig(Anne)\n",
]
LP_REJECTED = [
    lp_program("Red(True)"), lp_program("Stella (True)"), lp_program("Red()"), lp_program("Red(a,)"),
    lp_program("Red(a b c"), lp_program("Red(Mr-Smith)"), lp_program("Red(' a')"), lp_program("Red('$x')"),
    lp_program("Red($x y)"), lp_program("Red(a) && Big(a)"), lp_program("Red(a) >>> Big(a) >>> Kind(a)"),
    lp_program("Red(a) & Big(a) >>> Kind(a)"), lp_program("Not (Red(a))"), lp_program("not(a, True)"),
    lp_program("NOT(Red(a)"), lp_program("!"), lp_program("! >>> Red(a)"), lp_program("1Red(a)"),
    lp_program("Red(f(a))"), lp_query("Big($x, True)"), lp_query("Big($x)"), lp_query("Big(Anne, $x, True)"),
    lp_query("Big(Anne) && Red(Anne)"), lp_query("Big(True)"),
    # a name of several words holding True or False: a missing comma, never a constant "Eve True"
    lp_program("Teacher(Eve True)"), lp_program("Red(Anne, Eve False, True)"), lp_program("Red(True Anne, True)"),
    lp_query("Big(Anne True)"),
    "Facts:\nBig(Anne)\n",  # no query
    "Predicates:\nBig($x, bool)\nQuery:\nBig(Anne)\n",  # no fact or rule
    "Facts:::\nBig(Anne)\nQuery:\nBig(Anne)\n",  # no header: its code is `Facts`
    "Facts:\nBig(Anne)\nPredicates:\n------\nQuery:\nBig(Anne)\n",  # the program ends at the dashes
    "Facts:\nBig(Anne)\nPredicates:\nQuestion 2: which?\nQuery:\nBig(Anne)\n",
]


def fol_program(formula):
    return f"Premises:\nBig(anne)\nConclusion:\n{formula}\n"


FOL_ACCEPTED = [fol_program(f) for f in [
    "∀x (Big(x) → Red(x))", "∀x Big(x) → Red(x)", "all x Big(x)", "ALL x Big(x)",
    "forall x y Owns(x, y)", "exists x (Big(x))", "all x(Big(x))", "∀x y Owns(x, y)", "∀x y z Owns(x, y)",
    "∀x y (Owns(x, x))", "∀x yy Owns(x, yy)", "∀x ∃y Owns(x, y)", "∃x ¬Big(x)", "∀x [Big(x)]", "∀dog Big(dog)",
    "Big(a) ∧ Red(a) ∨ Kind(a) → Nice(a) ↔ Red(a) ⊕ Big(a)", "Big(a) & -Red(a) | ~Kind(a) -> !Nice(a)",
    "Big(a)&&Red(a)||Kind(a)=>Nice(a)<=>Big(a)<->Red(a)^Big(a)⊃Red(a)⇒Kind(a)⇔Big(a)≡Red(a)⊻Kind(a)",
    "¬(Big(a) ∧ Red(a))", "[Big(a) -> Red(a)]", "- -Big(a)", "∼Big(a)",
    "a = b", "a == b", "a != b", "a ≠ f(b)", '"Mr Smith" = anne', "f(a, g(b)) = c", 'Big("Mr Smith")',
    "Big(“Mr Smith”)", "Big(bob's_dog)", "Big(bob’s)", "Big(8pm)", "Big(42.3billion)", "Big(2000)", "Raining",
    "Raining ∧ Cold", "E1 → E", "Bob's", "All(a)", "Exists(a) ∧ Big(all)", "Big(x1)", "Owns(x, y)", "Some",
    "Béyoncé(ángel)", "Ölçek(ǅx)", "Ölçek", "Ωmega ∧ Жук", "big(a)", "8pm(a)",
]] + [
    "Predicates:\nBig(x) ::: x is big\nPremises:\nBig(a) ::: a is big\nConclusions:\nBig(a)\n",
    "Conclusion:\nBig(a)\nPremises:\nBig(a)\n",  # the conclusion first
    "Premises::\nBig(a)\n\nConclusion: ::: c\n\nRed(a)\n",
]
FOL_REJECTED = [fol_program(f) for f in [
    "x", "x1", "Big(x) Red(x)", "Big(a) and", "and Big(a)", "Big(a) - Red(a)", "Big(and)", "Big(a) > Red(a)",
    "Big(a) <= Red(a)", "Big(a).", '""', '" " = a', '"a"', "Big(a", "Big(a))", "∀x", "∀x, Big(x)",
    "∀x y, z Owns(x, z)", "all x~Big(x)", "all dogs are big", "Big(a) $ Red(a)", "Big{a}",
    "∀x (Big(x) → Red(x)", "exists x", "not", "P(a) = ", "= a", "Big(a) == = b", "Big(a,)",
    "Big(a) ∧∧ Red(a)", "Big(a) ::= Red(a)", "Big(a)'", "a.b",
    # English connectives, a bare word that is no capitalised proposition, a stray ',', '.' or ':' after a
    # quantifier's variable: parse errors since issue 49
    "Big(a) and Red(a)", "Big(a)and Red(a)", "Big(a) and(Red(a))", "not Big(a)", "not(Big(a))", "Big(a) or Red(a)",
    "Big(a) xor Red(a)", "Big(a) implies Red(a)", "Big(a) iff Red(a)", "Big(a) → (Red(a) and Kind(a))",
    "e1 → e", "some", "raining", "bob's", "_Raining", "8pm", "42.3billion → Big(a)", "ángel", "ǅx", "中国",
    "∀x. Big(x)", "∀x: Big(x)", "ALL x. Big(x)", "forall x, y Owns(x, y)", "∀x y z. Owns(x, y)", "∀x, yy Owns(x, yy)",
    "∃x : Big(x)", "all x: Big(x)",
]] + [
    "Premises:\nBig(a)\n",  # no conclusion
    "Predicates:\nBig(x)\nConclusion:\nBig(a)\n",  # no premise
    "Premises:\nBig(a)\nPredicates:\nExample: Big(b)\nConclusion:\nBig(a)\n",  # the program ends at Example:
    "Premises:\nBig(a)\nConclusion\nBig(a)\n",
]
OWN = {"lp": (LP_ACCEPTED, LP_REJECTED), "fol": (FOL_ACCEPTED, FOL_REJECTED)}


@pytest.mark.parametrize("language", LANGUAGES)
def test_own_programs_of_each_construct_are_accepted_by_parser_and_grammar(language):
    accepted, _ = OWN[language]
    for text in accepted:
        assert parser_error(language, text) is None, text
        assert exact(language).accepts(text), text


@pytest.mark.parametrize("language", LANGUAGES)
def test_own_broken_programs_are_rejected_by_parser_and_grammar(language):
    _, rejected = OWN[language]
    for text in rejected:
        assert parser_error(language, text) is not None, text
        assert not exact(language).accepts(text), text
        assert not decoding(language).accepts(text), text


def test_a_bare_negation_sign_is_a_parse_error():
    """It once reached the regex as None (a TypeError that no worker turns into a record)."""
    for line in ("!", "~ >>> Red(a)", "Red(a) && ¬ >>> Big(a)"):
        with pytest.raises(ProgramParseError, match="expected an atom"):
            get_solver("lp").parse(lp_program(line))


# ---- the character classes ----------------------------------------------------------------------

@cache
def _line_breaks():
    return {chr(code) for code in range(sys.maxunicode + 1)
            if not 0xD800 <= code <= 0xDFFF and len(f"a{chr(code)}b".splitlines()) > 1}


def _members(node, limit=0x30000):
    negated, ranges = node.value
    inside = [chr(c) for low, high in ranges for c in range(ord(low), ord(high) + 1)]
    if not negated:
        return inside
    excluded = set(inside)
    return [chr(c) for c in range(limit) if chr(c) not in excluded]


def test_character_classes_stay_inside_what_python_reads():
    rules = parse_grammar(load("fol")) | parse_grammar(load("lp"))
    for name, pattern in (("lp-w", r"\w"), ("fol-w", r"\w"), ("fol-letter", r"[^\W\d]")):
        members = _members(rules[name])
        assert members and all(re.fullmatch(pattern, c) for c in members), name
    # No class the grammar uses inside a line holds a line break or a lone surrogate.
    breaks = _line_breaks()
    assert "\x85" in breaks and "\u2028" in breaks
    for name in ("line-char", "text-char", "solid-char", "lp-quoted-first", "lp-quoted-char"):
        members = set(_members(rules[name]))
        assert not members & breaks and not any(0xD800 <= ord(c) <= 0xDFFF for c in members), name
        assert "`" not in members, name  # extract_program would read a fence
    solid = set(_members(rules["solid-char"]))
    assert ":" not in solid and not any(c.isspace() for c in solid)


# ---- mutated programs ---------------------------------------------------------------------------

def _is_header(language, code):
    return code.endswith(":") and code.rstrip(":").strip() in SECTIONS[language]


def _header_after_the_end(language, text):
    """The difference the .gbnf files document on the wide side: the exact grammar takes any lines after
    the query (LP) or the conclusion (FOL), where the parser reads a new section header."""
    last = "Query" if language == "lp" else "Conclusion"
    seen_end = False
    in_last = False
    for raw in text.splitlines():
        code, _ = split_comment(raw)
        if _is_header(language, code):
            if seen_end:
                return True
            in_last = code.rstrip(":").strip().startswith(last)
        elif code and in_last:
            seen_end = True
    return False


# The differences the .gbnf files document on the narrow side (the parser accepts, the grammar does
# not), as patterns over the code of a program's lines (comments cut off).
_NARROWER = {
    "lp": [
        r"^[^\n]*?(?<!:):{1,2}[ \t]*$",  # a line of documentation or prose whose code ends in ':'
        r"'[^'\n]*[:&>][^'\n]*'|\"[^\"\n]*[:&>][^\"\n]*\"",  # a quoted name with ':', '&' or '>'
        r"[^\x00-\x7f¬\xc0-\u052f\u4e00-\u9fff]",  # Unicode beyond the grammar's letters and spaces
    ],
    "fol": [
        r"^[^\n]*?(?<!:):{1,2}[ \t]*$",
        r"\"[^\"\n]*:[^\"\n]*\"|“[^”\n]*:[^”\n]*”",  # a quoted name with ':'
        r"[^\x00-\x7f\xc0-\u052f\u4e00-\u9fff∀∃¬∧∨→↔⊕⊻⇒⇔≡⊃≠∼“”’]",
        r"[\w\"”](?:and|or|xor|implies|iff)\b|(?:and|or|xor|implies|iff)[\w'’]",  # a word operator, no space
        r"(?i)(?<![\w'’])(?:all|forall|exists)(?![\w'’])(?!\s*\()",  # a bare all/forall/exists
        r"[∀∃,]\s*\d|(?i:all|forall|exists)\s+\d",  # a variable that starts with a digit
        r"(?i:all|forall|exists)\s+[^\W\d]\w*['’]|(?i:all|forall|exists)\s+[^\W\d]\w*[\[~!∼\-\"“]",
    ],
}


def _skipped_text(language, text):
    """Text before the first header, or the query (conclusion) section before the first fact or rule
    (premise): lines the parser skips there are not in the grammar."""
    codes = [code for code, _ in map(split_comment, text.splitlines()) if code]
    headers = [code.rstrip(":").strip() for code in codes if _is_header(language, code)]
    ends = ("Query",) if language == "lp" else ("Conclusion", "Conclusions")
    clauses = [name for name in headers if name != "Predicates" and name not in ends]
    first_end = next((i for i, name in enumerate(headers) if name in ends), len(headers))
    first_clause = headers.index(clauses[0]) if clauses else len(headers)
    return bool(codes) and not _is_header(language, codes[0]) or first_end < first_clause


def _explained(language, text):
    if "`" in text or _skipped_text(language, text):  # no backtick anywhere (common.gbnf)
        return True
    code = "\n".join(split_comment(line)[0] for line in text.splitlines())
    return any(re.search(pattern, code, re.M) for pattern in _NARROWER[language])


def _check(language, texts):
    """Grammar and parser on each text; returns (accepted by both, rejected by both, problems)."""
    problems = []
    both, neither = 0, 0
    for text in texts:
        error = parser_error(language, text)
        in_exact = exact(language).accepts(text)
        if in_exact and error is not None and not _header_after_the_end(language, text):
            problems.append(("the exact grammar accepts a program the parser rejects", error, text))
        if not in_exact and error is None and not _explained(language, text):
            problems.append(("the exact grammar rejects a program the parser accepts", None, text))
        if in_exact:  # the decoding grammar is a subset of the exact one
            decoded_error = parse_step_error(language, text) if decoding(language).accepts(text) else None
            if decoded_error is not None:
                problems.append(("the decoding grammar lets through a program that does not parse", decoded_error,
                                 text))
        both += in_exact and error is None
        neither += not in_exact and error is not None
    return both, neither, problems


def _fuzzed(language, count, seed):
    # As extract_program hands a reply's program to the solver: stripped, one final newline.
    return [text.strip() + "\n" for text in fuzz.programs(language, count, seed)]


@pytest.mark.parametrize(("language", "count"), [("lp", 120), ("fol", 60)])
def test_fuzzed_programs_agree_with_the_parser(language, count):
    both, neither, problems = _check(language, _fuzzed(language, count, seed=7))
    assert problems == []
    assert both > count // 5 and neither > count // 5  # the sample lands on both sides of the grammar


@pytest.mark.slow
@pytest.mark.parametrize("language", LANGUAGES)
def test_many_fuzzed_programs_agree_with_the_parser(language):
    both, neither, problems = _check(language, _fuzzed(language, 2000, seed=11))
    assert problems == []


# Token-level edits of own lines: the fuzz pieces rarely land inside a formula or an atom.
_TOKEN = re.compile(r"\w+|\s+|<->|->|=>|&&|\|\||!=|==|>>>|:::|.")
_LINES = {
    "lp": ["Big($x, True) && Red($x, False) >>> Kind($x, True)", "not Big($x, True) >>> ~Red($x) && ¬Kind($x, False)",
           "Not(Big($x, True)) >>> !Round($x, True)", "Red('Mr Smith', False)", "Kind(the old dog, True)",
           "Likes(Anne, Bob, False)"],
    "fol": ["∀x (Dog(x) → Mammal(x))", "all x. Red(x) & -Small(x) -> Kind(x)", "exists x y (Owns(x, y) ∧ x ≠ y)",
            "∃x ∀y (Owns(x, father(y)) ⊕ ¬Owns(y, x))", 'Big("Mr Smith") ∨ Big(bob’s_dog) || [Small(8pm) <-> Red(2000)]',
            "Big(anne) xor Red(anne) implies Kind(anne) iff a = b", "forall x, y not P(x) or Q(y)", "P and not Q"],
}
_QUERIES = ["Kind(Anne, False)", "Likes(Anne, Bob, $x)", "not Big(Anne)", "Not(Red('a b'))"]
_POOL = {
    "lp": ["$x", "$", "True", "False", "bool", "(", ")", ",", "&&", ">>>", "not", "Not", "NOT", "!", "~", "¬", "'", '"',
           "'a'", "Anne", " ", "  ", "a b", ":", "&", ">", "_x", "not ", "$y"],
    "fol": ["∀", "∃", "x", "y", "xy", "all", "All", "exists", "and", "or", "not", "implies", "(", ")", "[", "]", ",", ".",
            ":", "=", "!=", "-", "->", "<", '"a"', '""', '" "', "P(x)", "e", "5", "2.5", " ", "  ", "¬", "~", "!", "'",
            "’s", "P", "Q", "some", "iff", "xor", "^", "|", "&", "⊕", "e1", "x1", "a", "b"],
}


def _edited(language, count, seed):
    rng = random.Random(seed)
    texts = []
    for _ in range(count):
        tokens = _TOKEN.findall(rng.choice(_LINES[language] + (_QUERIES if language == "lp" else [])))
        for _ in range(rng.randint(1, 3)):
            at = rng.randrange(len(tokens))
            edit = rng.randrange(4)
            if edit == 0 and len(tokens) > 1:
                del tokens[at]
            elif edit == 1:
                tokens.insert(at, rng.choice(_POOL[language]))
            elif edit == 2 and at + 1 < len(tokens):
                tokens[at], tokens[at + 1] = tokens[at + 1], tokens[at]
            else:
                tokens[at] = rng.choice(_POOL[language])
        line = "".join(tokens).replace("\n", " ")
        if language == "fol":
            texts.append(fol_program(line))
        else:
            texts.append(lp_program(line) if rng.random() < 0.5 else lp_query(line))
    return texts


@pytest.mark.parametrize(("language", "count"), [("lp", 800), ("fol", 300)])
def test_edited_lines_agree_with_the_parser(language, count):
    both, neither, problems = _check(language, _edited(language, count, seed=3))
    assert problems == []
    assert both > count // 20 and neither > count // 5


@pytest.mark.slow
@pytest.mark.parametrize("language", LANGUAGES)
def test_many_edited_lines_agree_with_the_parser(language):
    _, _, problems = _check(language, _edited(language, 5000, seed=13))
    assert problems == []


# ---- the decoding grammar -----------------------------------------------------------------------

@pytest.mark.parametrize("language", LANGUAGES)
def test_every_own_program_the_decoding_grammar_takes_gets_through_the_parse_step(language):
    accepted, _ = OWN[language]
    taken = [text for text in accepted if decoding(language).accepts(text)]
    assert len(taken) > len(accepted) // 2
    for text in taken:
        assert parse_step_error(language, text) is None, text
