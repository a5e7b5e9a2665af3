"""Each language's grammar accepts what its parser accepts (own programs for every construct, then
the released Logic-LM programs) and rejects programs the parser rejects for their syntax."""

import json
import re

import pytest

from logicpipe.core.errors import ProgramCheckError, ProgramParseError
from logicpipe.llm.declared import first_grammar, next_grammar, phased
from logicpipe.llm.grammars import LANGUAGES, load
from logicpipe.solvers import get_solver
from tests.llm.gbnf import Recogniser, _walk, parse_grammar

LP = """Predicates:
Big($x, bool) ::: Is x big?
Facts:
Big(Anne, True) ::: Anne is big.
  Red('Mr Smith', False)
Kind(the old dog, True)
Rules:
Big($x, True) && Red($x, False) >>> Kind($x, True) ::: a rule
not Big($x, True) >>> ~Red($x, True) && ¬Kind($x, False)
Not(Big($x, True)) >>> !Round($x, True)
Query:
Kind(Anne, False)
Answer: the program ignores this line
"""
FOL = """Predicates:
Big(x) ::: x is big
Owns(x, y)
Premises:
∀x (Big(x) → Red(x)) ::: all big things are red
all x (Red(x) & -Small(x)) -> Kind(x)
exists x ∃y (Owns(x, y) ∧ x ≠ y)
∃x ∀y (Owns(x, father(y)) ⊕ ¬Owns(y, x))
Big("Mr Smith") ∨ Big(bob’s_dog) || [Small(8pm) <-> Red(2000)]
Big(anne) ⊕ Red(anne) → Kind(anne) ↔ a = b

Conclusion:
Kind(anne) ::: Anne is kind
Answer: True
"""
CSP = """Domain:
1: leftmost
3: rightmost
Variables:
red [IN] [1, 2, 3]
blue [IN] range(1, 4)
green [IN] ['a', "b", True]
Constraints:
red < blue ::: red is left of blue
AllDifferentConstraint([red, blue])
abs(red - blue) == 1 and not (red in [1, 2]) or max(red, blue) // 2 % 3 != -1
Query:
A) red == 1 ::: option A
(B) blue >= 2
"""
SMT = """# Declarations
people = EnumSort([Ann, Bob, 'Cy'])
days = IntSort([1, 2, -3])
works = Function([people] -> [days])
likes = Function([people, people] -> [bool])
# a plain comment line

# Constraints
ForAll([p:people], works(p) != 3) ::: nobody works on day 3
Distinct([p:people], works(p))
Count([p:people, q:people], likes(p, q)) >= 2 and Implies(likes(Ann, Bob), works(Ann) in [1, 2])
Sum([works(Ann), works(Bob)][0:1]) == If(Not(Xor(True, False)), 1, 0)

# Options
Question ::: Which is true?
is_valid(works(Ann) == 1) ::: (A)
is_sat(Exists([p:people], works(p) == 2)) ::: (B)
is_unsat(works(Bob) == works(Cy))
is_accurate_list([works(Ann) == 1, works(Ann) == 2])
is_exception(is_sat(likes(Bob, Cy)))
"""
ASP = """% Positions 1..3: 1 is the leftmost.
object(a; b; c).
pos(1..n).
#const n = 3.
1 { at(O, P) : pos(P) } 1 :- object(O).
:- at(O1, P), at(O2, P), O1 != O2. % two objects never share a place
:- at(a, P), at(b, Q), P >= Q.
-left(X) :- at(X, P), P > 1, not not object(X).
big(X) ; small(X) :- object(X), #count { Y : at(Y, P), P < 2 } = 1.
cost(S) :- S = #sum+ { P * 2 - -1, X : at(X, P) }, S <> #sup.
pair((a, "b c"), f(X)) :- at(X, _), X == a.
#minimize { P, X : at(X, P) }.
#show at/2.
option(a) :- at(a, 1).
option(b) :- at(b, 1).
"""
PROGRAMS = {"lp": LP, "fol": FOL, "csp": CSP,
           "smt": SMT.replace("# a plain comment line\n\n", "").replace("\n\n# Options", "\n# Options"), "asp": ASP}
# Small syntax errors the parsers reject, one per line shape.
BROKEN = {
    "lp": [LP.replace("Big(Anne, True)", "Big(Anne, True"), LP.replace("Query:", "Query"),
           LP.replace("Big($x, True) && Red", "Big($x, True) & Red"), LP.replace("Kind(Anne, False)", "Kind()"),
           LP.replace("Red('Mr Smith', False)", "Red(Mr-Smith, False)"), LP.replace(" >>> Kind", " >> Kind"),
           LP.replace("Kind(the old dog, True)", "Stella (True)"), LP.replace("Kind(Anne, False)", "Kind($x, False)")],
    "fol": [FOL.replace("∀x (Big(x) → Red(x))", "∀x (Big(x) → Red(x)"), FOL.replace("Kind(anne) :::", "Kind(anne) > 1 :::"),
            FOL.replace("exists x ∃y (", "exists x ∃y {"), FOL.replace("Conclusion:", "Conclusion"),
            FOL.replace("-Small(x)", "-Small(x) $"), FOL.replace("Premises:", "Facts:"),
            FOL.replace("exists x ∃y (", "all dogs are big (")],
    "csp": [CSP.replace("red < blue", "red < < blue"), CSP.replace("[1, 2, 3]", "[1, 2, 3"),
            CSP.replace("A) red == 1", "A. red == 1"), CSP.replace("red < blue", "red = blue"),
            CSP.replace("// 2", "/ 2"), CSP.replace("blue [IN] range", "blue IN range")],
    "smt": [SMT.replace("works(p) != 3)", "works(p) != 3"), SMT.replace("is_valid(works", "is_valid works"),
            SMT.replace("# Declarations", "Declarations"), SMT.replace("Distinct(", "Distinct(("),
            SMT.replace("likes(p, q)) >= 2", "likes(p, q)) => 2"), SMT.replace("Question ::: Which", "Which")],
    "asp": [ASP.replace("pos(1..n).", "pos(1..n)"), ASP.replace(":- at(a, P)", ":- at(a P)"),
            ASP.replace("} 1 :-", "} 1 :- :-"), ASP.replace("1 { at", "1 ( at"), ASP.replace("P >= Q", "P => Q"),
            ASP.replace("#show at/2.", "#show at/2 :."), ASP.replace("% Positions", "Positions")],
}


@pytest.fixture(scope="module")
def recognisers():
    return {language: Recogniser(load(language)) for language in LANGUAGES}


@pytest.mark.parametrize("language", LANGUAGES)
def test_own_programs_of_every_construct_are_accepted_by_parser_and_grammar(language, recognisers):
    get_solver(language).parse(PROGRAMS[language])
    assert recognisers[language].accepts(PROGRAMS[language])


@pytest.mark.parametrize("language", LANGUAGES)
def test_broken_own_programs_are_rejected_by_parser_and_grammar(language, recognisers):
    for text in BROKEN[language]:
        assert text != PROGRAMS[language]
        with pytest.raises(ProgramParseError):
            get_solver(language).parse(text)
        assert not recognisers[language].accepts(text), text


def test_each_grammar_is_self_contained_and_starts_at_root():
    for language in LANGUAGES:
        grammar = load(language)
        assert "root ::=" in grammar and "# include:" in grammar.splitlines()[0]
    with pytest.raises(ValueError, match="no grammar"):
        load("prolog")


# No released programs are in ASP (tests/llm/test_grammar_asp.py holds its grammar to its parser instead).
RELEASED = {"lp": ["ProntoQA", "ProofWriter"], "fol": ["FOLIO"], "csp": ["LogicalDeduction"], "smt": ["AR-LSAT"]}
# A parser error of one of these kinds is about the program's syntax (not its names, types or meaning).
_SYNTAX = ("syntax error", "unexpected character", "expected ", "missing ")


def _released(data_dir, language):
    for dataset in RELEASED[language]:
        for model in ("gpt-4", "text-davinci-003"):
            for record in json.loads((data_dir / "programs" / f"{dataset}_dev_{model}.json").read_text()):
                if record.get("raw_logic_programs"):
                    # As extract_program hands a reply's program to the solver: stripped, one final newline.
                    yield record["id"], record["raw_logic_programs"][0].strip() + "\n"


def _check_released(data_dir, language, recognisers, every):
    solver, recogniser = get_solver(language), recognisers[language]
    accepted, syntax_rejects, missed, let_through = 0, 0, [], []
    for index, (problem, text) in enumerate(_released(data_dir, language)):
        if index % every:
            continue
        try:
            solver.parse(text)
        except ProgramCheckError:  # well formed; its names or values are wrong
            pass
        except ProgramParseError as exc:
            message = str(exc).split(": ", 1)[-1] if str(exc).startswith("line") else str(exc)
            if message.startswith(_SYNTAX):
                syntax_rejects += 1
                if recogniser.accepts(text):
                    let_through.append((problem, str(exc)))
            continue
        accepted += 1
        if not recogniser.accepts(text):
            missed.append(problem)
    assert accepted > 0
    assert missed == [], f"the {language} grammar rejects programs its parser accepts"
    assert let_through == [], f"the {language} grammar accepts programs with syntax errors"
    return accepted, syntax_rejects


@pytest.mark.parametrize("language", RELEASED)
def test_released_programs_sample(language, recognisers, data_dir):
    """Every thirtieth released program (the whole set runs under -m slow)."""
    _check_released(data_dir, language, recognisers, every=30)


@pytest.mark.slow
@pytest.mark.parametrize("language", RELEASED)
def test_released_programs_all(language, recognisers, data_dir):
    accepted, syntax_rejects = _check_released(data_dir, language, recognisers, every=1)
    print(f"{language}: {accepted} accepted by parser and grammar, {syntax_rejects} syntax rejects rejected by both")


@pytest.fixture(scope="module")
def decoders():
    return {language: Recogniser(load(language, decoding=True)) for language in LANGUAGES}


# The own programs as a model must write them under --constrain: nothing after the last section, no
# blank or comment line.
DECODED = {"lp": LP.replace("Answer: the program ignores this line\n", ""),
           "fol": FOL.replace("Answer: True\n", "").replace("\n\nConclusion", "\nConclusion"), "csp": CSP,
           "smt": SMT.replace("# a plain comment line\n\n", "").replace("\n\n# Options", "\n# Options"),
           "asp": ASP}


@pytest.mark.parametrize("language", LANGUAGES)
def test_decoding_grammar_bounds_what_the_exact_grammar_repeats(language, recognisers, decoders):
    text = DECODED[language]
    assert decoders[language].accepts(text) and recognisers[language].accepts(text)
    # Every repetition is bounded: a looping model is made to move on rather than run to max_tokens.
    rules = "".join(line.split("#")[0] for line in load(language, decoding=True).splitlines()
                    if not line.startswith(("any-line", "#")))
    assert "*" not in re.sub(r"\[(\\.|[^\]\\])*\]", "", rules).replace('"*"', "")  # '*' in a class is a character
    if language in ("lp", "fol"):
        # Text after the final section is ignored by the parser, so the decoding grammar forbids it.
        assert not decoders[language].accepts(PROGRAMS[language])
        assert recognisers[language].accepts(PROGRAMS[language])
    if language == "asp":
        # The parser reads statements after the answer rules, and across lines; a model under
        # --constrain ends its program with the answer rules, one statement a line.
        for text in (ASP + "#show option/1.\n", ASP.replace("object(a; b; c).", "object(a;\n  b; % and\n c).")):
            get_solver(language).parse(text)
            assert recognisers[language].accepts(text) and not decoders[language].accepts(text)


def test_decoding_grammar_stops_a_section_at_its_line_bound(decoders, recognisers):
    from logicpipe.llm.grammars import LINES
    head, query = DECODED["lp"].split("Query:")
    # The Rules section has three lines: a model that loops on a rule gets LINES - 3 more.
    looping = head + "Big($x, True) >>> Red($x, True)\n" * (LINES - 2) + "Query:" + query
    get_solver("lp").parse(looping)
    assert recognisers["lp"].accepts(looping) and not decoders["lp"].accepts(looping)
    assert decoders["lp"].accepts(looping.replace("Big($x, True) >>> Red($x, True)\n", "", 1))


def test_decoding_lines_are_sized_to_max_tokens():
    from logicpipe.llm.grammars import LINE_TOKENS, LINES, SECTIONS, SPARE_TOKENS, lines_per_section
    from logicpipe.stages.config import RunConfig
    assert lines_per_section("lp", None) == LINES == lines_per_section("lp", 1 << 20)
    assert lines_per_section("lp", 16) == 2  # never below two lines
    assert 2 < lines_per_section("lp", 640) < lines_per_section("lp", 1280) < LINES
    assert f"{{0,{lines_per_section('fol', 640)}}}" in load("fol", decoding=True, max_tokens=640)
    # Above the floor, every section filled (header, first line, the lines after it) fits max_tokens
    # with SPARE_TOKENS left for long lines, and one line more would not.
    for language, sections in SECTIONS.items():
        for max_tokens in (384, 512, 640, 960, 1500, 2048):
            budget = max_tokens - SPARE_TOKENS
            lines = lines_per_section(language, max_tokens)
            assert (sections + 1) * (lines + 2) * LINE_TOKENS <= budget or lines == 2
            assert (sections + 1) * (lines + 3) * LINE_TOKENS > budget or lines == LINES
        # At the default --max-tokens a section holds as many lines as the released programs' longest
        # (24: a ProntoQA Rules section), so a strong model's program is not cut short.
        assert lines_per_section(language, RunConfig.model_fields["max_tokens"].default) + 1 >= 24


def test_a_decoding_rule_replaces_its_namesake_only_in_the_decoding_grammar(monkeypatch):
    from logicpipe.llm import grammars
    text = '# include: common\nroot ::= "a"{chars}\ndecoding-root ::= "b"{lines} "\\n"\n'
    monkeypatch.setattr(grammars, "_read", lambda name: text if name == "lp" else "ws ::= [ ]{chars}\n")
    exact, decoding = grammars.load("lp"), grammars.load("lp", decoding=True)
    assert 'root ::= "a"*' in exact and "decoding-" not in exact
    assert 'root ::= "b"{0,30} "\\n"' in decoding and '"a"' not in decoding and "decoding-" not in decoding


SECOND_PHASE = {"csp": 'Variables:\nowl [IN] ["a \\"b\\""]\nConstraints:\n',
                "smt": "# Declarations\nx = EnumSort([A, B])\nf = Function([x] -> [x])\n# Constraints\n"}


@pytest.mark.parametrize("language", LANGUAGES)
def test_llama_cpp_takes_the_decoding_grammar(language):
    """llama.cpp's own GBNF reader, with SmolLM2's vocabulary (scripts/llm-setup.sh installs both, and
    .ci/run runs it before make test, so this runs in CI)."""
    llama_cpp = pytest.importorskip("llama_cpp")
    from logicpipe.testing.llamacpp import smollm2_gguf

    model_path = smollm2_gguf()
    if model_path is None:
        pytest.skip("SmolLM2's GGUF is not installed (scripts/llm-setup.sh)")
    llama_cpp.llama_backend_init()
    params = llama_cpp.llama_model_default_params()
    params.vocab_only = True
    model = llama_cpp.llama_model_load_from_file(str(model_path).encode(), params)
    try:
        vocab = llama_cpp.llama_model_get_vocab(model)
        refused = llama_cpp.llama_sampler_init_grammar(vocab, b'root ::= ("a" x{0,200}){0,200}\nx ::= "b"\n', b"root")
        assert not refused  # the limit this test is about
        grammars = [load(language, decoding=True)]
        if phased(language):  # both phases (llm/declared.py), the second after a first reply
            grammars += [first_grammar(language, 512), next_grammar(language, 512, SECOND_PHASE[language])]
            if language == "smt":  # the phase between: functions over the declared sorts
                grammars.append(next_grammar(language, 512, SECOND_PHASE[language].split("[x] ->")[0]))
        for grammar in grammars:
            sampler = llama_cpp.llama_sampler_init_grammar(vocab, grammar.encode(), b"root")
            assert sampler
            llama_cpp.llama_sampler_free(sampler)
    finally:
        llama_cpp.llama_model_free(model)


@pytest.mark.parametrize("language", LANGUAGES)
def test_no_bounded_repetition_nests_in_another_within_a_rule(language):
    """llama.cpp multiplies the bounds of a repetition nested in another within one rule, and refuses
    the grammar past 2000 (`(a x{0,200}){0,200}`); a nested repetition goes in a rule of its own."""
    for name, node in parse_grammar(load(language, decoding=True)).items():
        for repeated in (n for n in _walk([node]) if n.kind == "rep"):
            assert not [n for n in _walk([repeated.value[2]]) if n.kind in ("rep", "star", "plus")], name
