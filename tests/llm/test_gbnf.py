"""The test-side GBNF recogniser that checks the shipped grammars."""

import pytest

from tests.llm.gbnf import GrammarError, Recogniser

ARITHMETIC = r'''
# sums of products, with parentheses
root ::= sum "\n"
sum ::= product (ws [+-] ws product)*
product ::= factor (ws "*" ws factor)*
factor ::= [0-9]+ | "(" ws sum ws ")" | name
name ::= [a-zA-Z_] [a-zA-Z0-9_]* | [^\x00-\x7F]+
ws ::= [ \t]*
'''


@pytest.mark.parametrize("text", ["1\n", "1 + 2*3\n", "(1+(2 - x_1)) * 4\n", "é + 1\n", "((((1))))\n"])
def test_accepts_what_the_grammar_describes(text):
    assert Recogniser(ARITHMETIC).accepts(text)


@pytest.mark.parametrize("text", ["", "1", "1 +\n", "(1\n", "1)\n", "1 / 2\n", "1\n\n"])
def test_rejects_the_rest(text):
    assert not Recogniser(ARITHMETIC).accepts(text)


def test_escapes_classes_and_alternatives():
    grammar = r'''
root ::= ("\"" [^"\\]* "\"" | [\x41-\x43] | "\u00e9" | "a" | "ab") "-"? "\t"
'''
    recogniser = Recogniser(grammar)
    assert all(recogniser.accepts(t) for t in ['"x y"\t', "B\t", "é-\t", "ab\t", "a-\t"])
    assert not any(recogniser.accepts(t) for t in ['"x"y"\t', "D\t", "abc\t", "b\t"])


@pytest.mark.parametrize("grammar", ["root ::= missing", "start ::= \"a\"", "root ::= (\"a\"", "root ::= @"])
def test_a_broken_grammar_is_an_error(grammar):
    with pytest.raises(GrammarError):
        Recogniser(grammar)


def test_counted_repetition():
    recogniser = Recogniser('root ::= ("ab"){2,3} [0-9]{0,2} "x"{1,} "y"{2} ("z" | "w"){1,}\n')
    for text in ["ababxyyz", "ababab9xyyzw", "abab12xxxyyw"]:
        assert recogniser.accepts(text), text
    for text in ["abxyyz", "ababababxyyz", "abab123xyyz", "ababyyz", "ababxyz", "ababxyy"]:
        assert not recogniser.accepts(text), text


def test_repetitions_llama_cpp_refuses_are_refused():
    # A bounded repetition of an item that itself generates many rules (a nested bounded repetition).
    with pytest.raises(GrammarError, match="llama.cpp refuses"):
        Recogniser('root ::= ("a" [b]{0,100}){0,30}\n')
    with pytest.raises(GrammarError, match="llama.cpp refuses"):
        Recogniser('root ::= "a"{0,2001}\n')
    Recogniser('root ::= item{0,30}\nitem ::= "a" [b]{0,100}\n')  # a rule reference is one rule
