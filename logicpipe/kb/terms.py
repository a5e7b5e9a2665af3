"""A reader for Prolog goals written by a model, and a writer of the canonical text sent to SWI-Prolog.

Model-written goals never reach Prolog's own reader as written: they are parsed here into a small
term tree, checked (safety.py), and written back in canonical functional notation.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..core.errors import ProgramParseError


@dataclass(frozen=True)
class Var:
    name: str


@dataclass(frozen=True)
class Atom:
    name: str


@dataclass(frozen=True)
class Number:
    text: str


@dataclass(frozen=True)
class String:
    value: str


@dataclass(frozen=True)
class Compound:
    name: str
    args: tuple[Term, ...]


Term = Var | Atom | Number | String | Compound

NIL = Atom("[]")
CONS = "[|]"

# Standard SWI-Prolog operators that goals need; `:` (module qualification) and `:-` are left out on
# purpose, so `system:shell(X)` or a clause is a parse error rather than something to check.
INFIX = {
    ";": (1100, "xfy"), "|": (1100, "xfy"), "->": (1050, "xfy"), "*->": (1050, "xfy"), ",": (1000, "xfy"),
    **{op: (700, "xfx") for op in ("=", "\\=", "==", "\\==", "@<", "@>", "@=<", "@>=", "=..", "is", "=:=",
                                    "=\\=", "<", ">", "=<", ">=")},
    **{op: (500, "yfx") for op in ("+", "-", "/\\", "\\/", "xor")},
    **{op: (400, "yfx") for op in ("*", "/", "//", "mod", "rem", "<<", ">>", "div")},
    "**": (200, "xfx"), "^": (200, "xfy"),
}
PREFIX = {"\\+": (900, "fy"), "-": (200, "fy"), "+": (200, "fy"), "\\": (200, "fy")}

_TOKEN = re.compile(r"""
    (?P<space>\s+|%[^\n]*|/\*.*?\*/)
  | (?P<number>0'.|0x[0-9a-fA-F]+|\d+(?:\.\d+)?(?:[eE][+-]?\d+)?)
  | (?P<var>[A-Z_]\w*)
  | (?P<name>[a-z]\w*)
  | (?P<quoted>'(?:[^'\\\n]|\\.|'')*')
  | (?P<string>"(?:[^"\\\n]|\\.|"")*")
  | (?P<punct>[()\[\],|])
  | (?P<end>\.(?=\s|%|$))
  | (?P<symbol>[+\-*/\\^<>=~:.?@\#&$]+)
  | (?P<solo>[!;])
""", re.VERBOSE | re.DOTALL)
_ESCAPES = {"n": "\n", "t": "\t", "\\": "\\", "'": "'", '"': '"', "`": "`", "a": "\a", "b": "\b", "f": "\f",
            "v": "\v", "r": "\r", "0": "\0", "e": "\x1b", "s": " "}


@dataclass
class _Token:
    kind: str
    text: str
    offset: int
    layout_before: bool


def _unescape(body: str, source: str, offset: int) -> str:
    out, i = [], 0
    while i < len(body):
        char = body[i]
        if char == "\\" and i + 1 < len(body):
            nxt = body[i + 1]
            if nxt in _ESCAPES:
                out.append(_ESCAPES[nxt])
                i += 2
                continue
            raise ProgramParseError(f"unknown escape '\\{nxt}' in a quoted name", *_where(source, offset))
        if char in "'\"" and body[i:i + 2] == char * 2:
            out.append(char)
            i += 2
            continue
        out.append(char)
        i += 1
    return "".join(out)


def _where(source: str, offset: int) -> tuple[int, int, str]:
    line = source.count("\n", 0, offset) + 1
    start = source.rfind("\n", 0, offset) + 1
    end = source.find("\n", offset)
    return line, offset - start + 1, source[start:end if end >= 0 else len(source)]


def tokenize(source: str) -> list[_Token]:
    tokens: list[_Token] = []
    pos, layout = 0, True
    while pos < len(source):
        match = _TOKEN.match(source, pos)
        if not match:
            raise ProgramParseError(f"unexpected character {source[pos]!r}", *_where(source, pos))
        kind = match.lastgroup or ""
        if kind == "space":
            layout = True
        else:
            tokens.append(_Token(kind, match.group(), pos, layout))
            layout = False
        pos = match.end()
    return tokens


class _Parser:
    def __init__(self, source: str):
        self.source = source
        self.tokens = tokenize(source)
        self.i = 0

    def error(self, message: str, token: _Token | None = None) -> ProgramParseError:
        offset = token.offset if token else len(self.source)
        return ProgramParseError(message, *_where(self.source, offset))

    def peek(self) -> _Token | None:
        return self.tokens[self.i] if self.i < len(self.tokens) else None

    def take(self) -> _Token:
        token = self.peek()
        if token is None:
            raise self.error("unexpected end of text")
        self.i += 1
        return token

    def expect(self, text: str) -> None:
        token = self.take()
        if token.text != text:
            raise self.error(f"expected '{text}' but found '{token.text}'", token)

    def clauses(self) -> list[Term]:
        terms = []
        while self.peek() is not None:
            terms.append(self.parse(1200))
            token = self.peek()
            if token is None or token.kind != "end":
                raise self.error("expected '.' at the end of the goal", token)
            self.i += 1
        return terms

    def parse(self, max_priority: int) -> Term:
        left, priority = self.primary(max_priority)
        return self.infix(left, priority, max_priority)

    def infix(self, left: Term, left_priority: int, max_priority: int) -> Term:
        while True:
            token = self.peek()
            if token is None or token.kind not in ("symbol", "name", "punct", "solo") or token.text not in INFIX:
                return left
            priority, kind = INFIX[token.text]
            left_max = priority if kind == "yfx" else priority - 1
            right_max = priority if kind == "xfy" else priority - 1
            if priority > max_priority or left_priority > left_max:
                return left
            self.i += 1
            right = self.parse(right_max)
            name = ";" if token.text == "|" else token.text
            left, left_priority = Compound(name, (left, right)), priority

    def primary(self, max_priority: int) -> tuple[Term, int]:
        token = self.take()
        nxt = self.peek()
        functional = nxt is not None and nxt.text == "(" and not nxt.layout_before
        if token.kind == "number":
            return _number(token.text), 0
        if token.kind == "var":
            return Var(token.text), 0
        if token.kind == "string":
            return String(_unescape(token.text[1:-1], self.source, token.offset)), 0
        if token.text == "(":
            inner = self.parse(1200)
            self.expect(")")
            return inner, 0
        if token.text == "[":
            return self.list_items(), 0
        if token.kind in ("name", "quoted", "symbol", "solo"):
            name = _unescape(token.text[1:-1], self.source, token.offset) if token.kind == "quoted" else token.text
            if functional:
                self.i += 1
                args = [self.parse(999)]
                while self.peek() is not None and self.peek().text == ",":  # type: ignore[union-attr]
                    self.i += 1
                    args.append(self.parse(999))
                self.expect(")")
                return Compound(name, tuple(args)), 0
            if token.kind != "quoted" and name in PREFIX and self._starts_term(nxt):
                priority, kind = PREFIX[name]
                if priority > max_priority:
                    priority = 999
                if name == "-" and nxt is not None and nxt.kind == "number" and not nxt.layout_before:
                    self.i += 1
                    return _number("-" + nxt.text), 0
                operand = self.parse(priority if kind == "fy" else priority - 1)
                return Compound(name, (operand,)), priority
            priority = max(INFIX.get(name, (0, ""))[0], PREFIX.get(name, (0, ""))[0])
            return Atom(name), priority if token.kind != "quoted" else 0
        raise self.error(f"unexpected '{token.text}'", token)

    def _starts_term(self, token: _Token | None) -> bool:
        if token is None or token.kind == "end":
            return False
        if token.text in (")", "]", ",", "|") or (token.text in INFIX and token.kind != "name"):
            return token.text in ("-", "+", "\\+", "\\")
        return True

    def list_items(self) -> Term:
        if self.peek() is not None and self.peek().text == "]":  # type: ignore[union-attr]
            self.i += 1
            return NIL
        items = [self.parse(999)]
        tail: Term = NIL
        while True:
            token = self.take()
            if token.text == ",":
                items.append(self.parse(999))
            elif token.text == "|":
                tail = self.parse(999)
                self.expect("]")
                break
            elif token.text == "]":
                break
            else:
                raise self.error(f"expected ',', '|' or ']' in a list but found '{token.text}'", token)
        for item in reversed(items):
            tail = Compound(CONS, (item, tail))
        return tail


def _number(text: str) -> Number:
    if text.lstrip("-").startswith("0'"):
        return Number(str(ord(text.lstrip("-")[2])))
    if text.lstrip("-").startswith("0x"):
        return Number(str(int(text, 16)))
    return Number(text)


def parse_goals(source: str) -> list[Term]:
    """Parse one or more goals, each ended by '.', as `?-` queries are written."""
    text = source.strip()
    if text.startswith("?-"):
        text = text[2:]
    if text and not re.search(r"\.\s*$", text):
        text += "."
    return _Parser(text).clauses()


def parse_term(source: str) -> Term:
    terms = parse_goals(source)
    if len(terms) != 1:
        raise ProgramParseError(f"expected one term, found {len(terms)}")
    return terms[0]


# --- writing ---------------------------------------------------------------------------------

_PLAIN_ATOM = re.compile(r"^[a-z]\w*$")
_BARE = ("[]", "!", ";", "{}")


def _escape(text: str) -> str:
    out = []
    for char in text:
        if char in "\\'\"`":
            out.append("\\" + char)
        elif ord(char) < 0x20 or ord(char) == 0x7F:
            out.append(f"\\x{ord(char):x}\\")
        else:
            out.append(char)
    return "".join(out)


def quote_atom(name: str) -> str:
    """Quoted unless a plain name: symbol atoms such as '/*' must never reach a reader bare."""
    if (_PLAIN_ATOM.match(name) and name not in INFIX and name not in PREFIX) or name in _BARE:
        return name
    return f"'{_escape(name)}'"


def canonical(term: Term) -> str:
    """Functional notation only (no operators), so the reader needs no operator table to read it back."""
    if isinstance(term, Var):
        return term.name
    if isinstance(term, Number):
        return term.text if not term.text.startswith("-") else f"({term.text})"
    if isinstance(term, String):
        return f'"{_escape(term.value)}"'
    if isinstance(term, Atom):
        return quote_atom(term.name)
    if term.name == CONS and len(term.args) == 2:
        items: list[str] = []
        tail: Term = term
        while isinstance(tail, Compound) and tail.name == CONS and len(tail.args) == 2:
            items.append(canonical(tail.args[0]))
            tail = tail.args[1]
        rest = "" if tail == NIL else "|" + canonical(tail)
        return "[" + ",".join(items) + rest + "]"
    return f"{quote_atom(term.name)}({','.join(canonical(a) for a in term.args)})"


def show(term: Term) -> str:
    """Readable text for messages and records (operators written as operators)."""
    if isinstance(term, Compound) and len(term.args) == 2 and term.name in INFIX:
        sep = ", " if term.name == "," else f" {term.name} "
        return f"{show(term.args[0])}{sep}{show(term.args[1])}"
    if isinstance(term, Compound) and len(term.args) == 1 and term.name in PREFIX:
        return f"{term.name} {show(term.args[0])}"
    if isinstance(term, Compound) and term.name != CONS:
        return f"{quote_atom(term.name)}({', '.join(show(a) for a in term.args)})"
    if isinstance(term, Atom) and term.name in INFIX or isinstance(term, Atom) and term.name in PREFIX:
        return term.name
    return canonical(term)


def variables(term: Term) -> list[str]:
    found: list[str] = []

    def walk(t: Term) -> None:
        if isinstance(t, Var):
            if t.name not in found and t.name != "_":
                found.append(t.name)
        elif isinstance(t, Compound):
            for arg in t.args:
                walk(arg)

    walk(term)
    return found


def ground(term: Term) -> bool:
    if isinstance(term, Compound):
        return all(ground(a) for a in term.args)
    return not isinstance(term, Var)
