"""A grammar for Logic-LM's first-order formulas, into a small AST.

Precedence, loosest first: <-> , -> (right-associative), xor, or, and, not. A quantifier's body runs
as far right as it can (nltk's reading, which Logic-LM used), so `∀x P(x) → Q(x)` is `∀x (P(x) → Q(x))`.

What the documented grammar (docs/tasks.md) does not say is either a parse error with its column
(English connectives, a lower-case word standing for a proposition, stray commas, colons or dots after a
quantifier) or one of the named rules in RULES, which the parse records with the column where it was
first needed: the solve record carries them (`lenient`) and `--strict` refuses those that Logic-LM's
own parser (its nltk grammar and the ply translation after it) does not accept.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NoReturn

from ..core.errors import ProgramParseError
from .base import Rule


@dataclass(frozen=True)
class Var:
    name: str


@dataclass(frozen=True)
class Const:
    name: str


@dataclass(frozen=True)
class Func:
    name: str
    args: tuple


@dataclass(frozen=True)
class Pred:
    name: str
    args: tuple


@dataclass(frozen=True)
class Eq:
    left: object
    right: object


@dataclass(frozen=True)
class Not:
    body: object


@dataclass(frozen=True)
class Bin:
    op: str  # and, or, xor, imp, iff
    left: object
    right: object


@dataclass(frozen=True)
class Quant:
    kind: str  # all, exists
    var: str
    body: object


RULES = {
    "free-variable": Rule("a variable no quantifier binds is closed with ∀, as Prover9 reads it", True),
    "lowercase-predicate": Rule("a predicate that starts with a lower-case letter", True),
    "quoted-constant": Rule('a double-quoted constant, "Multi Word"', True),
    "connective-spelling": Rule("a connective spelled other than ∀ ∃ ¬ ∧ ∨ → ↔ ⊕ (->, &, |, ~, ⇒, ...)", False),
    "word-quantifier": Rule("a quantifier written as a word (all x, exists x), Prover9's spelling", False),
    "brackets": Rule("square brackets used as parentheses", False),
    "nested-quantifier": Rule("a quantifier inside parentheses or an operand (Logic-LM reads quantifiers only "
                              "at the front of a formula or after ¬)", False),
    "stacked-negation": Rule("¬¬ inside a formula (Logic-LM's grammar takes it only at the front)", False),
    "variable-list": Rule("one quantifier over several variables, ∀x y", False),
    "proposition": Rule("a capitalised predicate with no arguments, Rain", False),
    "function-term": Rule("a function term as an argument, Mother(ann)", False),
    "equality": Rule("= and ≠ between terms", False),
    "decimal-constant": Rule("a constant with a decimal point, 42.3billion", False),
    "text-after-conclusion": Rule("lines after the one conclusion are ignored (Logic-LM reads the first)", True),
}

# How the documented grammar spells each connective; another spelling is the rule connective-spelling.
_CANONICAL = {"IFF": "↔", "IMP": "→", "XOR": "⊕", "OR": "∨", "AND": "∧", "NOT": "¬"}
_CONNECTIVE_WORDS = {"and": "∧", "or": "∨", "not": "¬", "xor": "⊕", "implies": "→", "iff": "↔"}

_TOKENS = [
    ("IFF", r"↔|⇔|<->|<=>|≡"),
    ("IMP", r"→|⇒|->|=>|⊃"),
    ("XOR", r"⊕|⊻|\^"),
    ("OR", r"∨|\|\||\|"),
    ("AND", r"∧|&&|&"),
    ("NEQ", r"≠|!="),
    ("NOT", r"¬|~|!|∼|-(?!>)"),
    ("EQ", r"==|="),
    ("ALL", r"∀"),
    ("EXISTS", r"∃"),
    ("LP", r"\("),
    ("RP", r"\)"),
    ("LB", r"\["),
    ("RB", r"\]"),
    ("COMMA", r","),
    ("DOT", r"\.|:"),
    # A name that starts with a digit (`8pm`, `42.3billion`, `2000`) can only be a constant.
    ("NAME", r"[^\W\d]\w*(?:['’]\w+)*|\d\w*(?:\.\d\w*)*"),
    ("QUOTED", r'"[^"\n]*"|“[^”\n]*”'),
    ("SPACE", r"\s+"),
]
_LEXER = re.compile("|".join(f"(?P<{name}{i}>{pattern})" for i, (name, pattern) in enumerate(_TOKENS)))
_KINDS = {f"{name}{i}": name for i, (name, _) in enumerate(_TOKENS)}
_WORD_QUANTIFIERS = {"all": "ALL", "forall": "ALL", "exists": "EXISTS", "some": None}
# After a word quantifier (`all x P(x)`), a bare name then a formula start: the word is a quantifier.
_BOUND_NAME = re.compile(r"\s+[^\W\d]\w*\s*(?:[\s(.:,∀∃¬]|$)")
_PLAIN_NAME = re.compile(r"[^\W\d]\w*")


def tokenize(text: str, line: int | None) -> list[tuple[str, str, int]]:
    tokens = []
    position = 0
    while position < len(text):
        match = _LEXER.match(text, position)
        if not match:
            raise ProgramParseError(f"unexpected character {text[position]!r}", line, position + 1,
                                    excerpt(text, position + 1))
        kind = _KINDS[match.lastgroup or ""]
        value = match.group()
        if kind == "NAME":
            lowered = value.lower()
            quantifier = _WORD_QUANTIFIERS.get(lowered)
            # Matched in place, never on a copy of the rest of the line: repeated quantifiers stay linear.
            if quantifier and _BOUND_NAME.match(text, match.end()):
                kind = quantifier
            elif lowered in _CONNECTIVE_WORDS and value == lowered:
                kind = "ENGLISH"  # an error once the parser reaches it, so the first fault is the one named
        if kind != "SPACE":
            tokens.append((kind, value, position + 1))
        position = match.end()
    tokens.append(("END", "", len(text) + 1))
    return tokens


# Python recursion stays far below its limit: the parser's own frames and the AST (which the
# translation to Prover9 walks recursively) are both bounded, and an overrun is a parse error.
MAX_NESTING = 200
MAX_DEPTH = 400


def _nested(method: Callable[..., Any]) -> Callable[..., Any]:
    """Count the parser frames a method opens, so deep nesting is a parse error, never RecursionError."""

    def counted(self: _Parser, *args: Any) -> Any:
        self.nesting += 1
        if self.nesting > MAX_NESTING:
            self.fail("formula nests too deeply (parentheses, negations, quantifiers, implications or "
                      "function terms)")
        try:
            return method(self, *args)
        finally:
            self.nesting -= 1

    return counted


class _Parser:
    def __init__(self, text: str, line: int | None):
        self.text = text
        self.line = line
        self.tokens = tokenize(text, line)
        self.index = 0
        self.nesting = 0
        self.bound: list[str] = []
        self.free: dict[str, None] = {}  # ordered set
        self.rules: dict[str, int] = {}  # rule -> the column where it was first needed
        # Where Logic-LM's grammar (S -> ¬ S | Q+ F | F) stands: S at the front, Q after a quantifier, F
        # inside a formula, where it takes neither a quantifier nor ¬¬.
        self.state = "S"
        for kind, value, column in self.tokens:
            if kind in _CANONICAL and value != _CANONICAL[kind]:
                self.use("connective-spelling", column)
            elif kind in ("ALL", "EXISTS") and value not in "∀∃":
                self.use("word-quantifier", column)
            elif kind == "LB":
                self.use("brackets", column)
            elif kind in ("EQ", "NEQ"):
                self.use("equality", column)

    def use(self, rule: str, column: int) -> None:
        self.rules.setdefault(rule, column)

    def peek(self) -> tuple[str, str, int]:
        token = self.tokens[self.index]
        if token[0] == "ENGLISH":
            self.fail(f"'{token[1]}' is an English word, not a connective: write {_CONNECTIVE_WORDS[token[1]]}",
                      token)
        return token

    def take(self, kind: str | None = None) -> tuple[str, str, int]:
        token = self.peek()
        if kind is not None and token[0] != kind:
            self.fail(f"expected {_NAMES.get(kind, kind)} but found {token[1] or 'end of formula'!r}", token)
        self.index += 1
        return token

    def fail(self, message: str, token: tuple[str, str, int] | None = None) -> NoReturn:
        token = token or self.tokens[self.index]
        raise ProgramParseError(message, self.line, token[2], excerpt(self.text, token[2]))

    def formula(self) -> Any:
        node = self.binary(0)
        if self.peek()[0] != "END":
            self.fail(f"unexpected {self.peek()[1]!r} after a complete formula")
        # Free variables are universally quantified, as nltk and Prover9 read them in Logic-LM.
        for name in reversed(self.free):
            node = Quant("all", name, node)
        if depth(node) > MAX_DEPTH:
            raise ProgramParseError(f"formula is more than {MAX_DEPTH} operators deep", self.line,
                                    text=excerpt(self.text, 1))
        return node

    @_nested
    def binary(self, lowest: int) -> Any:
        """Precedence climbing over _LEVELS: one frame per nesting level, not one per operator."""
        left = self.unary()
        while self.peek()[0] in _LEVELS and _LEVELS[self.peek()[0]][0] >= lowest:
            level, op = _LEVELS[self.take()[0]]
            # -> is right-associative; the others group to the left.
            left = Bin(op, left, self.binary(level if op == "imp" else level + 1))
        return left

    @_nested
    def unary(self) -> Any:
        kind = self.peek()[0]
        if kind == "NOT":
            self.take()
            if self.state != "S" and self.peek()[0] == "NOT":
                self.use("stacked-negation", self.peek()[2])
            self.state = "S" if self.state == "S" else "F"
            return Not(self.unary())
        if kind in ("ALL", "EXISTS"):
            if self.state == "F":
                self.use("nested-quantifier", self.peek()[2])
            return self.quantified()
        self.state = "F"
        if kind in ("LP", "LB"):
            self.take()
            node = self.binary(0)
            self.take("RP" if kind == "LP" else "RB")
            return node
        return self.atom()

    def quantified(self) -> Any:
        quantifier = self.take()
        kind = quantifier[0]
        names = [self.take("NAME")[1]]
        while self.peek()[0] == "NAME" and self.tokens[self.index + 1][0] not in ("LP",) \
                and self.peek()[1] not in self.bound and self._another_variable():
            self.use("variable-list", self.peek()[2])
            names.append(self.take("NAME")[1])
        if self.peek()[0] in ("COMMA", "DOT"):
            # `∀x`, but `all x`: a word quantifier keeps its space.
            stray = self.peek()[1]
            written = f"{quantifier[1]}{' ' if quantifier[1][-1].isalpha() else ''}{names[-1]}"
            after = self.tokens[self.index + 1]
            other = after[1] if after[0] == "NAME" and after[1] != names[-1] else "y" if names[-1] != "y" else "z"
            self.fail(f"stray {stray!r} after the quantifier {written}: " + (
                f"write one quantifier per variable, {written} {quantifier[1]}{other}" if stray == "," else
                f"a quantifier is followed directly by its formula, as in {written} (P({names[-1]}) → Q({names[-1]}))"))
        self.state = "Q" if self.state != "F" else "F"
        self.bound.extend(names)
        body = self.binary(0)
        del self.bound[-len(names):]
        for name in reversed(names):
            body = Quant("all" if kind == "ALL" else "exists", name, body)
        return body

    def _another_variable(self) -> bool:
        # `∀x y P(x, y)`: a second bare name directly after the first is another variable (but `∀x y (...)`
        # is the formula y(...), as nltk reads it: the grammars in llm/grammars follow this reading).
        following = self.tokens[self.index + 1][0]
        return following in ("ALL", "EXISTS", "NOT", "DOT", "NAME", "LB") and len(self.peek()[1]) <= 2

    def atom(self) -> Any:
        token = self.peek()
        if token[0] not in ("NAME", "QUOTED"):
            self.fail(f"expected a predicate, quantifier or '(' but found {token[1] or 'end of formula'!r}")
        left = self.term()
        if self.peek()[0] in ("EQ", "NEQ"):
            op = self.take()[0]
            right = self.term()
            node = Eq(left, right)
            return Not(node) if op == "NEQ" else node
        if token[0] == "QUOTED":
            self.fail(f"quoted name {token[1]} is a constant, not a formula", token)
        if isinstance(left, Var):
            self.fail(f"variable '{left.name}' used as a formula", token)
        if not _CAPITAL.match(left.name):
            if isinstance(left, Func):
                self.use("lowercase-predicate", token[2])
            elif left.name[0].isdigit():
                self.fail(f"'{left.name}' is a constant standing for a proposition: a formula is a capitalised "
                          f"predicate applied to its arguments, as in Has(x, {left.name})", token)
            else:
                self.fail(f"'{left.name}' is a lower-case word standing for a proposition: a formula is a "
                          f"capitalised predicate applied to its arguments, as in "
                          f"{left.name[:1].upper()}{left.name[1:]}(x)", token)
        if isinstance(left, Func):
            return Pred(left.name, left.args)
        self.use("proposition", token[2])
        return Pred(left.name, ())

    @_nested
    def term(self, argument: bool = False) -> Any:
        if self.peek()[0] == "QUOTED":
            self.use("quoted-constant", self.peek()[2])
            return Const(self._quoted(self.take()))
        token = self.take("NAME")
        name = token[1]
        if self.peek()[0] == "LP":
            if argument:
                self.use("function-term", token[2])
            self.take()
            args = [self.term(True)]
            while self.peek()[0] == "COMMA":
                self.take()
                args.append(self.term(True))
            self.take("RP")
            return Func(name, tuple(args))
        if name in self.bound:
            return Var(name)
        if _FREE_VARIABLE.match(name):
            self.free[name] = None
            self.use("free-variable", token[2])
            return Var(name)
        if "." in name:
            self.use("decimal-constant", token[2])
        return Const(name)

    def _quoted(self, token: tuple[str, str, int]) -> str:
        """`"Multi Word"` is the constant `"Multi Word"`; `"ann"` is the same constant as `ann`."""
        inner = token[1][1:-1].strip()
        if not inner:
            self.fail("empty quoted name", token)
        return inner if _PLAIN_NAME.fullmatch(inner) else f'"{inner}"'


def excerpt(text: str, column: int, width: int = 80) -> str:
    """The part of a long line around `column`, so an error message stays readable."""
    if len(text) <= 2 * width:
        return text
    start = max(0, column - 1 - width)
    return ("…" if start else "") + text[start:column - 1 + width] + ("…" if column - 1 + width < len(text) else "")


def depth(node: Any) -> int:
    """Depth of a formula tree, measured without recursion."""
    deepest, stack = 0, [(node, 1)]
    while stack:
        node, level = stack.pop()
        deepest = max(deepest, level)
        if isinstance(node, (Not, Quant)):
            stack.append((node.body, level + 1))
        elif isinstance(node, (Bin, Eq)):
            stack.extend(((node.left, level + 1), (node.right, level + 1)))
        elif isinstance(node, (Pred, Func)):
            stack.extend((arg, level + 1) for arg in node.args)
    return deepest


# A capital that starts a proposition or marks a predicate (Latin, Latin-1, Greek and Cyrillic capitals: what
# llm/grammars/fol.gbnf spells as fol-capital).
_CAPITAL = re.compile(r"[A-ZÀ-ÖØ-ÞΑ-ΡΣ-ΩЀ-Я]")
# nltk's individual-variable spelling: one lowercase letter other than e, optionally numbered.
_FREE_VARIABLE = re.compile(r"^[a-df-z]\d*$")
# Binding strength and operator, loosest first.
_LEVELS = {"IFF": (0, "iff"), "IMP": (1, "imp"), "XOR": (2, "xor"), "OR": (3, "or"), "AND": (4, "and")}
_NAMES = {"RP": "')'", "RB": "']'", "NAME": "a name", "LP": "'('"}


def parse_formula(text: str, line: int | None = None, rules: dict[str, int] | None = None) -> Any:
    """The formula's tree; `rules`, when given, gets each leniency the formula needed (RULES) with the
    column where it was first needed."""
    parser = _Parser(text.strip(), line)
    node = parser.formula()
    if rules is not None:
        for rule, column in parser.rules.items():
            rules.setdefault(rule, column)
    return node
