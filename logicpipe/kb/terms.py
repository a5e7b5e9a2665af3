"""Prolog terms as Python data: built from what SWI-Prolog's own reader read (from_postfix), written back
in canonical functional notation for the engine and shown with a KB's operators.

Goals are read by SWI-Prolog (engine.pl's "read" request), so what parses in `swipl` parses here. The
small reader below is for data only: percept values and `kb add`'s facts.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Generator, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

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

# Standard SWI-Prolog operators that goals need (`:-` is left out on purpose, so a clause is a parse
# error rather than a goal). `a:b` reads as a term; safety.check_goal refuses it as a goal.
INFIX = {
    ";": (1100, "xfy"), "|": (1100, "xfy"), "->": (1050, "xfy"), "*->": (1050, "xfy"), ",": (1000, "xfy"),
    ":=": (800, "xfx"),
    **{op: (700, "xfx") for op in ("=", "\\=", "==", "\\==", "@<", "@>", "@=<", "@>=", "=..", "is", "=:=",
                                    "=\\=", "<", ">", "=<", ">=", ">:<", ":<", "as", "=@=", "\\=@=")},
    ":": (600, "xfy"),
    **{op: (500, "yfx") for op in ("+", "-", "/\\", "\\/")},
    **{op: (400, "yfx") for op in ("*", "/", "//", "mod", "rem", "<<", ">>", "div", "rdiv", "xor")},
    "**": (200, "xfx"), "^": (200, "xfy"),
}
PREFIX = {"\\+": (900, "fy"), "-": (200, "fy"), "+": (200, "fy"), "\\": (200, "fy"),
          **{op: (1150, "fx") for op in ("dynamic", "discontiguous", "initialization", "meta_predicate",
                                          "module_transparent", "multifile", "public", "table", "thread_local",
                                          "thread_initialization", "volatile")}}
Operators = Sequence[tuple[int, str, str]]  # (priority, type, name) as SWI-Prolog's op/3 takes them


def _tables(ops: Operators = ()) -> tuple[dict[str, tuple[int, str]], dict[str, tuple[int, str]]]:
    """The standard tables with a KB's own operators added (priority 0 removes one, as in op/3)."""
    infix, prefix = dict(INFIX), dict(PREFIX)
    for priority, kind, name in ops:
        table = infix if kind in ("xfx", "xfy", "yfx") else prefix if kind in ("fy", "fx") else None
        if table is None:
            continue  # postfix operators: not read in goals
        if priority == 0:
            table.pop(name, None)
        else:
            table[name] = (priority, kind)
    return infix, prefix


_TOKEN = re.compile(r"""
    (?P<space>\s+|%[^\n]*|/\*.*?\*/)
  | (?P<number>0'(?:\\.|''|.)|0x[0-9a-fA-F]+|0o[0-7]+|0b[01]+|\d+(?:_\d+)*(?:\.\d+(?:[eE][+-]?\d+)?)?)
  | (?P<var>[A-Z_]\w*)
  | (?P<name>[a-z]\w*)
  | (?P<quoted>'(?:[^'\\\n]|\\.|'')*')
  | (?P<string>"(?:[^"\\\n]|\\.|"")*")
  | (?P<punct>[()\[\],|{}])
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


Parse = Generator[Any, Any, Any]  # a parsing step: yields sub-steps, returns their result


class _Parser:
    """Operator-precedence recursive descent, run as generators on an explicit stack (`_run`), so a
    term nested thousands deep costs memory, not Python stack frames."""

    def __init__(self, source: str, ops: Operators = ()):
        self.source = source
        self.tokens = tokenize(source)
        self.i = 0
        self.infix_ops, self.prefix_ops = _tables(ops)

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
            terms.append(_run(self.parse(1200)))
            token = self.peek()
            if token is None or token.kind != "end":
                raise self.error("expected '.' at the end of the goal", token)
            self.i += 1
        return terms

    def parse(self, max_priority: int) -> Parse:
        left, priority = yield self.primary(max_priority)
        while True:  # infix operators, left to right
            token = self.peek()
            if token is None or token.kind not in ("symbol", "name", "punct", "solo") \
                    or token.text not in self.infix_ops:
                return left
            priority_op, kind = self.infix_ops[token.text]
            left_max = priority_op if kind == "yfx" else priority_op - 1
            right_max = priority_op if kind == "xfy" else priority_op - 1
            if priority_op > max_priority or priority > left_max:
                return left
            self.i += 1
            right = yield self.parse(right_max)
            name = ";" if token.text == "|" else token.text
            left, priority = Compound(name, (left, right)), priority_op

    def arguments(self) -> Parse:
        args = [(yield self.parse(999))]
        while self.peek() is not None and self.peek().text == ",":  # type: ignore[union-attr]
            self.i += 1
            args.append((yield self.parse(999)))
        return args

    def primary(self, max_priority: int) -> Parse:
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
            inner = yield self.parse(1200)
            self.expect(")")
            return inner, 0
        if token.text == "[":
            return (yield self.list_items()), 0
        if token.text == "{":
            if nxt is not None and nxt.text == "}":
                self.i += 1
                return Atom("{}"), 0
            inner = yield self.parse(1200)
            self.expect("}")
            return Compound("{}", (inner,)), 0
        if token.kind in ("name", "quoted", "symbol", "solo"):
            name = _unescape(token.text[1:-1], self.source, token.offset) if token.kind == "quoted" else token.text
            if functional:
                self.i += 1
                args = yield self.arguments()
                self.expect(")")
                return Compound(name, tuple(args)), 0
            if token.kind != "quoted" and name in self.prefix_ops and self._starts_term(nxt):
                priority, kind = self.prefix_ops[name]
                if priority > max_priority:
                    priority = 999
                if name == "-" and nxt is not None and nxt.kind == "number" and not nxt.layout_before:
                    self.i += 1
                    return _number("-" + nxt.text), 0
                operand = yield self.parse(priority if kind == "fy" else priority - 1)
                return Compound(name, (operand,)), priority
            priority = max(self.infix_ops.get(name, (0, ""))[0], self.prefix_ops.get(name, (0, ""))[0])
            return Atom(name), priority if token.kind != "quoted" else 0
        raise self.error(f"unexpected '{token.text}'", token)

    def _starts_term(self, token: _Token | None) -> bool:
        if token is None or token.kind == "end":
            return False
        if token.text in (")", "]", "}", ",", "|") or (token.text in self.infix_ops and token.kind != "name"):
            return token.text in ("-", "+", "\\+", "\\")
        return True

    def list_items(self) -> Parse:
        if self.peek() is not None and self.peek().text == "]":  # type: ignore[union-attr]
            self.i += 1
            return NIL
        items = [(yield self.parse(999))]
        tail: Term = NIL
        while True:
            token = self.take()
            if token.text == ",":
                items.append((yield self.parse(999)))
            elif token.text == "|":
                tail = yield self.parse(999)
                self.expect("]")
                break
            elif token.text == "]":
                break
            else:
                raise self.error(f"expected ',', '|' or ']' in a list but found '{token.text}'", token)
        for item in reversed(items):
            tail = Compound(CONS, (item, tail))
        return tail


def _run(step: Parse) -> Any:
    """Drive nested parsing steps with a list for a stack: each yielded step runs to its result, which
    is sent back into the step that yielded it."""
    stack, value = [step], None
    while stack:
        try:
            sub = stack[-1].send(value)
        except StopIteration as done:
            stack.pop()
            value = done.value
            continue
        stack.append(sub)
        value = None
    return value


def _number(text: str) -> Number:
    sign, digits = ("-", text[1:]) if text.startswith("-") else ("", text)
    if digits.startswith("0'"):
        char = digits[2:]
        code = ord(_unescape(char, char, 0)) if char.startswith("\\") else ord(char[0])
        return Number(sign + str(code))
    for prefix, base in (("0x", 16), ("0o", 8), ("0b", 2)):
        if digits.startswith(prefix):
            return Number(sign + str(int(digits[2:], base)))
    if "." in digits or "e" in digits.lower():
        return Number(sign + digits)
    return Number(sign + str(int(digits.replace("_", ""))))


def parse_goals(source: str, ops: Operators = ()) -> list[Term]:
    """Parse one or more goals, each ended by '.', as `?-` queries are written; `ops` are a KB's own
    operators (KnowledgeBase.operators), read as SWI-Prolog reads them in that KB."""
    text = source.strip()
    if text.startswith("?-"):
        text = text[2:]
    if text and not re.search(r"\.\s*$", text):
        text += "."
    return _Parser(text, ops).clauses()


def parse_term(source: str, ops: Operators = ()) -> Term:
    terms = parse_goals(source, ops)
    if len(terms) != 1:
        raise ProgramParseError(f"expected one term, found {len(terms)}")
    return terms[0]


_LEAVES: dict[str, Callable[[str], Term]] = {"v": Var, "a": Atom, "n": Number, "s": String}


def from_postfix(items: list[list[Any]]) -> Term:
    """A term from the engine's flat postfix list (engine.pl, items//2), built with a list for a stack:
    ["v", name], ["a", name], ["n", text], ["s", text], ["c", name, arity] (takes the last arity terms)."""
    stack: list[Term] = []
    for item in items:
        kind = item[0]
        if kind == "c":
            arity = item[2]
            args = tuple(stack[len(stack) - arity:]) if arity else ()
            del stack[len(stack) - arity:]
            stack.append(Compound(item[1], args) if arity else Atom(item[1]))
        else:
            stack.append(_LEAVES[kind](item[1]))
    if len(stack) != 1:
        raise ProgramParseError(f"the engine sent {len(stack)} terms for one")
    return stack[0]


def subterms(term: Term) -> Iterator[Term]:
    """Every subterm, the term first (depth first, an explicit stack)."""
    stack = [term]
    while stack:
        t = stack.pop()
        yield t
        if isinstance(t, Compound):
            stack.extend(reversed(t.args))


# --- writing ---------------------------------------------------------------------------------

_PLAIN_ATOM = re.compile(r"^[a-z]\w*$")
_SYMBOL_ATOM = re.compile(r"^[+\-*/\\^<>=~:.?@#&$]+$")
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


def _written_atom(name: str) -> str:
    """An atom as writeq writes it: plain names and symbol-char atoms bare, the rest quoted."""
    if _PLAIN_ATOM.match(name) or name in _BARE or (_SYMBOL_ATOM.match(name) and "/*" not in name
                                                     and name != "."):
        return name
    return f"'{_escape(name)}'"


Piece = tuple[Term, int] | str  # a term to write at a maximum priority, or text written as it is


def _write(term: Term, pieces: Callable[[Term, int], list[Piece]], priority: int = 1200) -> str:
    """Expand a term into text with an explicit stack of pieces (no recursion)."""
    out: list[str] = []
    stack: list[Piece] = [(term, priority)]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            out.append(item)
        else:
            stack.extend(reversed(pieces(*item)))
    return "".join(out)


def _is_list_cell(term: Term) -> bool:
    return isinstance(term, Compound) and term.name == CONS and len(term.args) == 2


def canonical(term: Term) -> str:
    """Functional notation only (no operators), so the reader needs no operator table to read it back."""
    def pieces(t: Term, _: int) -> list[Piece]:
        if isinstance(t, Var):
            return [t.name]
        if isinstance(t, Number):
            return [t.text if not t.text.startswith("-") else f"({t.text})"]
        if isinstance(t, String):
            return [f'"{_escape(t.value)}"']
        if isinstance(t, Atom):
            return [quote_atom(t.name)]
        if _is_list_cell(t):
            return _list_pieces(t, ",", 0)
        parts: list[Piece] = [quote_atom(t.name), "("]
        for index, arg in enumerate(t.args):
            parts += ([","] if index else []) + [(arg, 0)]
        return parts + [")"]

    return _write(term, pieces)


def _list_pieces(term: Term, separator: str, priority: int) -> list[Piece]:
    """A list's pieces, its cells walked in a loop (no recursion however long the list)."""
    items: list[Piece] = ["["]
    tail = term
    while _is_list_cell(tail):
        assert isinstance(tail, Compound)
        if len(items) > 1:
            items.append(separator)
        items.append((tail.args[0], priority))
        tail = tail.args[1]
    if tail != NIL:
        items += ["|", (tail, priority)]
    return items + ["]"]


def show(term: Term, ops: Operators = ()) -> str:
    """Readable text as SWI-Prolog's writeq writes it (operators as operators, parentheses where the
    priorities need them), which reads back as the same term, also with the KB's operators `ops`."""
    infix, prefix = _tables([(1200, "xfx", ":-"), *ops])  # a clause inside a goal, as in assertz((H :- B))

    def operand(t: Term, max_priority: int) -> list[Piece]:
        """A term as an operator's argument: operator atoms and negative numbers in parentheses."""
        if isinstance(t, Atom) and (t.name in infix or t.name in prefix):
            return ["(", _written_atom(t.name), ")"]
        if isinstance(t, Number) and t.text.startswith("-"):
            return ["(", t.text, ")"]
        return [(t, max_priority)]

    def pieces(t: Term, max_priority: int) -> list[Piece]:
        if isinstance(t, Var):
            return [t.name]
        if isinstance(t, Number):
            return [t.text]
        if isinstance(t, String):
            return [f'"{_escape(t.value)}"']
        if isinstance(t, Atom):
            text = _written_atom(t.name)
            op_priority = max(infix.get(t.name, (0, ""))[0], prefix.get(t.name, (0, ""))[0])
            return [f"({text})" if op_priority > max_priority else text]
        if _is_list_cell(t):
            return _list_pieces(t, ", ", 999)
        if t.name == "{}" and len(t.args) == 1:
            return ["{", (t.args[0], 1200), "}"]
        if len(t.args) == 2 and t.name in infix and t.name != "|":
            priority, kind = infix[t.name]
            left_max = priority if kind == "yfx" else priority - 1
            right_max = priority if kind == "xfy" else priority - 1
            op = ", " if t.name == "," else f"{t.name}" if t.name == ":" else f" {_written_atom(t.name)} "
            body = [*operand(t.args[0], left_max), op, *operand(t.args[1], right_max)]
            return ["(", *body, ")"] if priority > max_priority else body
        if len(t.args) == 1 and t.name in prefix:
            priority, kind = prefix[t.name]
            arg_max = priority if kind == "fy" else priority - 1
            arg = t.args[0]
            if isinstance(arg, Number) or (isinstance(arg, Atom) and (arg.name in infix or arg.name in prefix)):
                return [_written_atom(t.name), "(", (arg, 999), ")"]  # -(1) is not -1
            arg_priority = _priority(arg, infix, prefix)
            inner: list[Piece] = ["(", (arg, 1200), ")"] if arg_priority > arg_max else [(arg, arg_max)]
            applied = [_written_atom(t.name), " ", *inner]
            return ["(", *applied, ")"] if priority > max_priority else applied
        parts: list[Piece] = [_written_atom(t.name), "("]
        for index, arg in enumerate(t.args):
            parts += ([", "] if index else []) + [(arg, 999)]
        return parts + [")"]

    return _write(term, pieces)


def _priority(term: Term, infix: dict[str, tuple[int, str]], prefix: dict[str, tuple[int, str]]) -> int:
    """The priority a term has when written with operators (0 for a plain term)."""
    if isinstance(term, Compound) and len(term.args) == 2 and term.name in infix and term.name != "|":
        return infix[term.name][0]
    if isinstance(term, Compound) and len(term.args) == 1 and term.name in prefix:
        if isinstance(term.args[0], Number):
            return 0
        return prefix[term.name][0]
    return 0


def variables(term: Term) -> list[str]:
    found: list[str] = []
    for t in subterms(term):
        if isinstance(t, Var) and t.name not in found and t.name != "_":
            found.append(t.name)
    return found


def ground(term: Term) -> bool:
    return not any(isinstance(t, Var) for t in subterms(term))
