"""A small GBNF recogniser for tests: parses llama.cpp's grammar format and decides whether a whole
string is in the language, by memoised matching that returns every end position a rule can reach
(so alternatives and repetitions need no backtracking order). Left recursion is not supported."""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass
from typing import Any

_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "\\": "\\", '"': '"', "[": "[", "]": "]", "-": "-", "^": "^"}
_TOKEN = re.compile(r"""
    (?P<space>\s+|\#[^\n]*)
  | (?P<define>::=)
  | (?P<name>[A-Za-z][A-Za-z0-9-]*)
  | (?P<string>"(?:\\.|[^"\\])*")
  | (?P<cls>\[(?:\\.|[^\]\\])*\])
  | (?P<any>\.)
  | (?P<count>\{\s*\d+\s*(?:,\s*\d*\s*)?\})
  | (?P<op>[()|*+?])
""", re.VERBOSE | re.DOTALL)


class GrammarError(Exception):
    pass


# llama.cpp refuses a grammar where a repetition's bound, or the rules its item generates times the
# bound, reaches this (MAX_REPETITION_THRESHOLD in src/llama-grammar.cpp); llama-cpp-python's server
# then drops the connection rather than answering 400. The parser below applies the same rule.
LLAMA_REPETITION_LIMIT = 2000


@dataclass(frozen=True)
class Node:
    kind: str  # lit, cls, any, ref, seq, alt, star, plus, opt, rep (value: (low, high or None, item))
    value: Any = None


def _unescape(body: str) -> list[str]:
    """The characters of a literal or class body, escapes resolved; a class keeps '-' markers as None."""
    out: list[str] = []
    index = 0
    while index < len(body):
        char = body[index]
        if char == "\\":
            code = body[index + 1]
            if code in "xuU":
                width = {"x": 2, "u": 4, "U": 8}[code]
                out.append(chr(int(body[index + 2:index + 2 + width], 16)))
                index += 2 + width
                continue
            out.append(_ESCAPES[code])
            index += 2
            continue
        out.append(char)
        index += 1
    return out


def _char_class(text: str) -> Node:
    body = text[1:-1]
    negated = body.startswith("^")
    if negated:
        body = body[1:]
    # Split into items first, keeping escaped '-' literal.
    items: list[tuple[str, bool]] = []  # (char, escaped)
    index = 0
    while index < len(body):
        if body[index] == "\\":
            step = {"x": 4, "u": 6, "U": 10}.get(body[index + 1], 2)
            items.append((_unescape(body[index:index + step])[0], True))
            index += step
        else:
            items.append((body[index], False))
            index += 1
    ranges: list[tuple[str, str]] = []
    index = 0
    while index < len(items):
        low = items[index][0]
        if index + 2 < len(items) and items[index + 1] == ("-", False):
            ranges.append((low, items[index + 2][0]))
            index += 3
        else:
            ranges.append((low, low))
            index += 1
    return Node("cls", (negated, tuple(ranges)))


def parse_grammar(text: str) -> dict[str, Node]:
    tokens = [(m.lastgroup, m.group()) for m in _TOKEN.finditer(text) if m.lastgroup != "space"]
    if sum(len(m.group()) for m in _TOKEN.finditer(text)) != len(text):
        raise GrammarError("unreadable text in the grammar")
    rules: dict[str, Node] = {}
    position = 0
    symbols: set[str] = set()  # rule names seen, as llama.cpp numbers them
    generated = 0  # rules llama.cpp generates for groups and repetitions

    def peek(offset: int = 0) -> tuple[str | None, str]:
        index = position + offset
        return tokens[index] if index < len(tokens) else (None, "")

    def alternatives() -> Node:
        nonlocal position
        options = [sequence()]
        while peek() == ("op", "|"):
            position += 1
            options.append(sequence())
        return options[0] if len(options) == 1 else Node("alt", tuple(options))

    def sequence() -> Node:
        nonlocal position, generated
        items: list[Node] = []
        while True:
            kind, value = peek()
            before = generated + len(symbols)
            if kind == "name" and peek(1)[0] == "define":
                break  # the next rule starts
            if kind == "name":
                symbols.add(value)
                item = Node("ref", value)
            elif kind == "string":
                item = Node("lit", "".join(_unescape(value[1:-1])))
            elif kind == "cls":
                item = _char_class(value)
            elif kind == "any":
                item = Node("any")
            elif (kind, value) == ("op", "("):
                position += 1
                generated += 1
                item = alternatives()
                if peek() != ("op", ")"):
                    raise GrammarError("missing ')'")
            else:
                break
            position += 1
            while (peek()[0] == "op" and peek()[1] in "*+?") or peek()[0] == "count":
                kind, value = peek()
                if kind == "count":
                    low, _, high = value.strip("{} ").partition(",")
                    bound = int(high) if high.strip() else (None if "," in value else int(low))
                    item = Node("rep", (int(low), bound, item))
                else:
                    bound, low = {"*": (None, "0"), "+": (None, "1"), "?": (1, "0")}[value]
                    item = Node({"*": "star", "+": "plus", "?": "opt"}[value], item)
                repeated = max(1, generated + len(symbols) - before)
                if int(low) > LLAMA_REPETITION_LIMIT or (bound or 0) > LLAMA_REPETITION_LIMIT or \
                        repeated * (bound or 1) >= LLAMA_REPETITION_LIMIT:
                    raise GrammarError(f"llama.cpp refuses {value}: an item of {repeated} rules repeated "
                                       f"up to {bound} times reaches its limit of {LLAMA_REPETITION_LIMIT}")
                generated += 1 if bound is None else bound - int(low)
                position += 1
            items.append(item)
        return items[0] if len(items) == 1 else Node("seq", tuple(items))

    while position < len(tokens):
        kind, name = peek()
        if kind != "name" or peek(1)[0] != "define":
            raise GrammarError(f"expected 'name ::=' at token {name!r}")
        position += 2
        symbols.add(name)
        rules[name] = alternatives()
    for node in rules.values():
        _check_refs(node, rules)
    if "root" not in rules:
        raise GrammarError("no root rule")
    return rules


def _walk(nodes: list[Node]) -> list[Node]:
    found, stack = [], list(nodes)
    while stack:
        node = stack.pop()
        found.append(node)
        if node.kind in ("seq", "alt"):
            stack.extend(node.value)
        elif node.kind in ("star", "plus", "opt"):
            stack.append(node.value)
        elif node.kind == "rep":
            stack.append(node.value[2])
    return found


def _check_refs(node: Node, rules: dict[str, Node]) -> None:
    if node.kind == "ref" and node.value not in rules:
        raise GrammarError(f"undefined rule {node.value}")
    if node.kind in ("seq", "alt"):
        for child in node.value:
            _check_refs(child, rules)
    elif node.kind in ("star", "plus", "opt"):
        _check_refs(node.value, rules)
    elif node.kind == "rep":
        _check_refs(node.value[2], rules)


def _single(node: Node, rules: dict[str, Node], seen: frozenset[str] = frozenset()) -> str | None:
    """A regex for a node that always matches exactly one character (a class, '.', or a rule or
    alternation of those), else None."""
    if node.kind == "any":
        return "(?s:.)"
    if node.kind == "cls":
        negated, ranges = node.value
        body = "".join(re.escape(low) + ("-" + re.escape(high) if high != low else "") for low, high in ranges)
        return f"[{'^' if negated else ''}{body}]"
    if node.kind == "ref" and node.value not in seen:
        return _single(rules[node.value], rules, seen | {node.value})
    if node.kind == "alt":
        parts = [_single(child, rules, seen) for child in node.value]
        if all(parts):
            return "(?:" + "|".join(part or "" for part in parts) + ")"
    return None


class Recogniser:
    def __init__(self, grammar: str):
        self.rules = parse_grammar(grammar)
        # Repetitions of single characters (ws, names, rest-of-line) are scanned with one regex.
        self.runs: dict[int, re.Pattern[str]] = {}
        self.chars: dict[int, re.Pattern[str]] = {}
        for node in _walk(list(self.rules.values())):
            if node.kind in ("star", "plus"):
                single = _single(node.value, self.rules)
                if single:
                    self.runs[id(node)] = re.compile(f"{single}*")
            elif node.kind == "rep":
                low, high, item = node.value
                single = _single(item, self.rules)
                if single:
                    self.runs[id(node)] = re.compile(f"{single}{{0,{'' if high is None else high}}}")
            elif node.kind in ("ref", "alt"):
                single = _single(node, self.rules)
                if single:
                    self.chars[id(node)] = re.compile(single)

    def accepts(self, text: str) -> bool:
        memo: dict[tuple[Any, int], frozenset[int]] = {}

        def match(node: Node, start: int) -> frozenset[int]:
            kind = node.kind
            if kind == "lit":
                literal = node.value
                return frozenset({start + len(literal)}) if text.startswith(literal, start) else frozenset()
            if kind in ("cls", "any"):
                if start >= len(text):
                    return frozenset()
                if kind == "any":
                    return frozenset({start + 1})
                negated, ranges = node.value
                char = text[start]
                inside = any(low <= char <= high for low, high in ranges)
                return frozenset({start + 1}) if inside != negated else frozenset()
            if id(node) in self.chars:
                return frozenset({start + 1}) if self.chars[id(node)].match(text, start) else frozenset()
            if id(node) in self.runs:
                run = self.runs[id(node)].match(text, start)
                end = run.end() if run else start
                fewest = {"star": 0, "plus": 1}.get(kind) if kind != "rep" else node.value[0]
                return frozenset(range(start + (fewest or 0), end + 1))
            if kind == "ref":
                key = (node.value, start)
                if key not in memo:
                    memo[key] = frozenset()  # a left-recursive call finds nothing rather than looping
                    memo[key] = match(self.rules[node.value], start)
                return memo[key]
            if kind == "seq":
                ends = frozenset({start})
                for child in node.value:
                    ends = frozenset(end for here in ends for end in match(child, here))
                    if not ends:
                        break
                return ends
            if kind == "alt":
                return frozenset(end for child in node.value for end in match(child, start))
            if kind == "opt":
                return match(node.value, start) | {start}
            if kind == "rep":
                # Level by level: the ends after exactly n repetitions, kept from `low` on.
                low, high, item = node.value
                level, kept, count = frozenset({start}), set(), 0
                while level and (high is None or count < high):
                    if count >= low:
                        kept |= level
                    level = frozenset(end for here in level for end in match(item, here) if end != here)
                    count += 1
                    if high is None and count > len(text) + low:
                        break
                if count >= low and (high is None or count <= high):
                    kept |= level
                return frozenset(kept)
            # star / plus: the closure of the child's steps, breadth first.
            first = match(node.value, start)
            reached = set(first)
            frontier = list(first)
            while frontier:
                here = frontier.pop()
                for end in match(node.value, here):
                    if end != here and end not in reached:
                        reached.add(end)
                        frontier.append(end)
            return frozenset(reached | ({start} if kind == "star" else set()))

        # Each nesting level of the text (a parenthesis) costs a few frames of match().
        limit = sys.getrecursionlimit()
        sys.setrecursionlimit(max(limit, 20000))
        try:
            return len(text) in match(Node("ref", "root"), 0)
        finally:
            sys.setrecursionlimit(limit)


_PICK = "abcxyz019 _"


def sample(grammar: str, rng: Any, depth: int = 10) -> str:
    """A random text of the grammar's language: alternatives and repetition counts drawn at random,
    and below `depth` rule references only the cheapest way to an end (classes give one of their
    characters, a negated class one of a few plain ones). Iterative, so deep grammars are fine."""
    rules = parse_grammar(grammar)
    cost = {name: 10**6 for name in rules}

    def weight(node: Node) -> int:
        kind = node.kind
        if kind == "ref":
            return cost[node.value] + 1
        if kind == "seq":
            return max((weight(c) for c in node.value), default=0)
        if kind == "alt":
            return min(weight(c) for c in node.value)
        if kind == "plus":
            return weight(node.value)
        if kind == "rep":
            return weight(node.value[2]) if node.value[0] else 0
        return 0

    changed = True
    while changed:
        changed = False
        for name, node in rules.items():
            new = weight(node)
            if new < cost[name]:
                cost[name], changed = new, True

    def char(node: Node) -> str:
        negated, ranges = node.value
        inside = [c for c in _PICK if any(low <= c <= high for low, high in ranges)]
        if negated:
            return rng.choice([c for c in _PICK if c not in inside])
        low, high = rng.choice(ranges)
        return chr(rng.randint(ord(low), ord(high)))

    out: list[str] = []
    stack: list[tuple[Node, int]] = [(rules["root"], 0)]
    while stack:
        node, level = stack.pop()
        kind, deep = node.kind, level > depth
        if kind == "lit":
            out.append(node.value)
        elif kind == "cls":
            out.append(char(node))
        elif kind == "any":
            out.append(rng.choice(_PICK))
        elif kind == "ref":
            stack.append((rules[node.value], level + 1))
        elif kind == "seq":
            stack.extend((child, level) for child in reversed(node.value))
        elif kind == "alt":
            options = node.value
            if deep:
                least = min(weight(c) for c in options)
                options = [c for c in options if weight(c) == least]
            stack.append((rng.choice(options), level))
        else:
            low, high, item = {"star": (0, 3, node.value), "plus": (1, 3, node.value),
                               "opt": (0, 1, node.value)}.get(kind) or node.value
            high = min(low + 3 if high is None else high, low + 3)
            count = low if deep else rng.randint(low, high)
            stack.extend((item, level) for _ in range(count))
    return "".join(out)
