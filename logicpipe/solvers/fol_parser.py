"""A grammar for Logic-LM's first-order formulas, into a small AST.

Precedence, loosest first: <-> , -> (right-associative), xor, or, and, not. A quantifier's body runs
as far right as it can (nltk's reading, which Logic-LM used), so `∀x P(x) → Q(x)` is `∀x (P(x) → Q(x))`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..errors import ProgramParseError


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


_TOKENS = [
    ("IFF", r"↔|⇔|<->|<=>|≡"),
    ("IMP", r"→|⇒|->|=>|⊃"),
    ("XOR", r"⊕|⊻|\^"),
    ("OR", r"∨|\|\||\|"),
    ("AND", r"∧|&&|&"),
    ("NEQ", r"≠|!="),
    ("NOT", r"¬|~|!|∼|-(?!>)"),
    ("EQ", r"=="),
    ("EQ", r"="),
    ("ALL", r"∀"),
    ("EXISTS", r"∃"),
    ("LP", r"\("),
    ("RP", r"\)"),
    ("LB", r"\["),
    ("RB", r"\]"),
    ("COMMA", r","),
    ("DOT", r"\.|:"),
    ("NAME", r"[^\W\d]\w*(?:['’]\w+)*|\d+"),
    ("SPACE", r"\s+"),
]
_LEXER = re.compile("|".join(f"(?P<{name}{i}>{pattern})" for i, (name, pattern) in enumerate(_TOKENS)))
_WORD_QUANTIFIERS = {"all": "ALL", "forall": "ALL", "exists": "EXISTS", "some": None}
_WORD_OPERATORS = {"and": "AND", "or": "OR", "not": "NOT", "xor": "XOR", "implies": "IMP", "iff": "IFF"}


def tokenize(text: str, line: int | None) -> list[tuple[str, str, int]]:
    tokens = []
    position = 0
    while position < len(text):
        match = _LEXER.match(text, position)
        if not match:
            raise ProgramParseError(f"unexpected character {text[position]!r}", line, position + 1, text)
        kind = re.sub(r"\d+$", "", match.lastgroup or "")
        value = match.group()
        if kind == "NAME":
            lowered = value.lower()
            if _WORD_QUANTIFIERS.get(lowered) and _next_is_name(text, match.end()):
                kind = _WORD_QUANTIFIERS[lowered]
            elif lowered in _WORD_OPERATORS and value == lowered:
                kind = _WORD_OPERATORS[lowered]
        if kind != "SPACE":
            tokens.append((kind, value, position + 1))
        position = match.end()
    tokens.append(("END", "", len(text) + 1))
    return tokens


def _next_is_name(text: str, index: int) -> bool:
    rest = text[index:]
    return bool(re.match(r"\s+[^\W\d]\w*\s*[\s(.:,∀∃¬]", rest + " ")) and not rest.lstrip().startswith("(")


class _Parser:
    def __init__(self, text: str, line: int | None):
        self.text = text
        self.line = line
        self.tokens = tokenize(text, line)
        self.index = 0
        self.bound: list[str] = []
        self.free: list[str] = []

    def peek(self) -> tuple[str, str, int]:
        return self.tokens[self.index]

    def take(self, kind: str | None = None) -> tuple[str, str, int]:
        token = self.peek()
        if kind is not None and token[0] != kind:
            self.fail(f"expected {_NAMES.get(kind, kind)} but found {token[1] or 'end of formula'!r}", token)
        self.index += 1
        return token

    def fail(self, message: str, token: tuple[str, str, int] | None = None) -> None:
        token = token or self.peek()
        raise ProgramParseError(message, self.line, token[2], self.text)

    def formula(self):
        node = self.binary(0)
        if self.peek()[0] != "END":
            self.fail(f"unexpected {self.peek()[1]!r} after a complete formula")
        # Free variables are universally quantified, as nltk and Prover9 read them in Logic-LM.
        for name in reversed(self.free):
            node = Quant("all", name, node)
        return node

    def binary(self, level: int):
        if level == len(_LEVELS):
            return self.unary()
        kind, op = _LEVELS[level]
        left = self.binary(level + 1)
        if kind == "IMP":  # right-associative
            if self.peek()[0] == kind:
                self.take()
                return Bin(op, left, self.binary(level))
            return left
        while self.peek()[0] == kind:
            self.take()
            left = Bin(op, left, self.binary(level + 1))
        return left

    def unary(self):
        kind = self.peek()[0]
        if kind == "NOT":
            self.take()
            return Not(self.unary())
        if kind in ("ALL", "EXISTS"):
            return self.quantified()
        if kind == "LP":
            self.take()
            node = self.binary(0)
            self.take("RP")
            return node
        if kind == "LB":
            self.take()
            node = self.binary(0)
            self.take("RB")
            return node
        return self.atom()

    def quantified(self):
        kind = self.take()[0]
        names = [self.take("NAME")[1]]
        while self.peek()[0] == "COMMA" or (self.peek()[0] == "NAME" and self.tokens[self.index + 1][0] not in ("LP",)
                                             and self.peek()[1] not in self.bound and self._another_variable()):
            if self.peek()[0] == "COMMA":
                self.take()
            names.append(self.take("NAME")[1])
        if self.peek()[0] == "DOT":
            self.take()
        self.bound.extend(names)
        body = self.binary(0)
        del self.bound[-len(names):]
        for name in reversed(names):
            body = Quant("all" if kind == "ALL" else "exists", name, body)
        return body

    def _another_variable(self) -> bool:
        # `∀x y (...)`: a second bare name directly after the first is another variable.
        following = self.tokens[self.index + 1][0]
        return following in ("LP", "ALL", "EXISTS", "NOT", "DOT", "NAME", "LB") and len(self.peek()[1]) <= 2

    def atom(self):
        token = self.peek()
        if token[0] != "NAME":
            self.fail(f"expected a predicate, quantifier or '(' but found {token[1] or 'end of formula'!r}")
        left = self.term()
        if self.peek()[0] in ("EQ", "NEQ"):
            op = self.take()[0]
            right = self.term()
            node = Eq(left, right)
            return Not(node) if op == "NEQ" else node
        if isinstance(left, Func):
            return Pred(left.name, left.args)
        if isinstance(left, Var):
            self.fail(f"variable '{left.name}' used as a formula", token)
        return Pred(left.name, ())

    def term(self):
        name = self.take("NAME")[1]
        if self.peek()[0] == "LP":
            self.take()
            args = [self.term()]
            while self.peek()[0] == "COMMA":
                self.take()
                args.append(self.term())
            self.take("RP")
            return Func(name, tuple(args))
        if name in self.bound:
            return Var(name)
        if _FREE_VARIABLE.match(name):
            self.free.append(name) if name not in self.free else None
            return Var(name)
        return Const(name)


# nltk's individual-variable spelling: one lowercase letter other than e, optionally numbered.
_FREE_VARIABLE = re.compile(r"^[a-df-z]\d*$")
_LEVELS = [("IFF", "iff"), ("IMP", "imp"), ("XOR", "xor"), ("OR", "or"), ("AND", "and")]
_NAMES = {"RP": "')'", "RB": "']'", "NAME": "a name", "LP": "'('"}


def parse_formula(text: str, line: int | None = None):
    return _Parser(text.strip(), line).formula()
