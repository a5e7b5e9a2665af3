"""Phased constrained decoding for the languages whose names must be declared before use (CSP, SMT).

No context-free grammar can say "only names declared above", and SmolLM2-135M's constrained CSP and SMT
programs parsed but never ran: they used names they never declared. So --constrain writes them in
phases. The first writes the declarations under a part of the decoding grammar (CSP: up to the
Constraints: header; SMT: its sorts, up to the first function or the constraints header). Each next
phase writes the whole text again, what the phases before wrote as a fixed start, then more under a
grammar built from what was declared: a CSP constraint or option names declared variables only; an
SMT function's sorts are declared sorts, and its constraints and options are typed by those sorts
(llm/typed_smt.py). The start is fixed by the grammar rather than sent as a partial assistant message,
so this needs nothing from an endpoint but the grammar field (llama.cpp's `grammar`, vLLM's
`guided_grammar`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .grammars import LINE_TOKENS, LINES, SPARE_TOKENS, load
from .typed_smt import sorts_of, typed_rules

# Languages written in phases: the rule their first phase writes, and the rule that writes the rest
# after the declarations.
PHASED = {"csp": ("csp-declare", "csp-rest"), "smt": ("smt-sorts", "smt-rest")}
# At most this many phases (SMT: sorts, functions, the rest): a server that ignores grammars cannot
# keep a request going round.
MAX_PHASES = 3
# Changes whenever a later phase's rules change: it is hashed into the run identity with the grammar.
VERSION = "declared-names-6"

_CSP_VARIABLE = re.compile(r"^[ \t]*([A-Za-z_][A-Za-z0-9_]*)[ \t]*\[IN\]")
_SMT_DECLARATION = re.compile(r"^[ \t]*([A-Za-z0-9_]+)[ \t]*=[ \t]*(EnumSort|IntSort|Function)[ \t]*\((.*)\)")
_SMT_FUNCTION_START = re.compile(r"(^|\n)[ \t]*[A-Za-z0-9_]+[ \t]*=[ \t]*Function[ \t]*\($")
_ANY_DECLARATION = re.compile(r"^[ \t]*([A-Za-z0-9_]+)[ \t]*(?:=|\[IN\])")
# Characters a token of code holds, at the least (SmolLM2's tokenizer on the released programs: 3 to 4).
_CHARS_PER_TOKEN = 3
# The header that ends the declarations, per language (the scripted server cuts a first phase there).
HEADERS = {"csp": re.compile(r"^[ \t]*Constraints[ \t]*::?"),
           "smt": re.compile(r"^[ \t]*#+[ \t]*constraints[ \t]*(:::.*)?$", re.IGNORECASE)}


def phased(language: str) -> bool:
    return language in PHASED


def first_grammar(language: str, max_tokens: int | None) -> str:
    """The decoding grammar of the first phase: the declarations, or their first part."""
    return _set_rules(load(language, decoding=True, max_tokens=max_tokens), {"root": PHASED[language][0]})


def next_grammar(language: str, max_tokens: int | None, text: str) -> str | None:
    """The grammar of the next phase after the phases so far wrote `text`: `text` as written (a repeated
    declaration left out), then more with declared names only. None when `text` is the whole reply: a
    whole program, or a first phase cut short at max_tokens, which then fails in the parser with its own
    message."""
    grammar = load(language, decoding=True, max_tokens=max_tokens)
    if language == "smt" and _SMT_FUNCTION_START.search(text):
        prefix = _first_declarations(language, text)
        sorts = list(smt_declarations(prefix).sorts)
        return _set_rules(grammar, {"smt-sort": _choice(sorts + ["bool", "int"]),
                                    "root": f"{literal(prefix)} smt-functions"})
    lines = text.splitlines()
    if not text.endswith("\n") or not lines or not HEADERS[language].match(lines[-1]):
        return None
    prefix = _first_declarations(language, text)
    rules = _csp_rules(prefix) if language == "csp" else _smt_rules(prefix)
    if rules is None:
        return None
    # Space between tokens is one space at most from here on (the fixed start keeps its own): SmolLM2
    # padded its expressions with tabs, a token each, until a program's options were cut off.
    rules["ws"] = '" "?'
    rest = PHASED[language][1]
    rules[rest] = _rest_lines(_rule_body(grammar, rest), max_tokens, prefix)
    return _set_rules(grammar, {**rules, "root": f"{literal(prefix)} {rest}"})


def _rest_lines(body: str, max_tokens: int | None, prefix: str) -> str:
    """The rest's two sections (constraints, then query or options) with no more lines each than the
    decoding grammar allows, nor than fit the tokens the fixed start leaves: its lines name what was
    declared, and SmolLM2-135M declared names of 24 characters and wrote lines of 30 tokens, so its
    last option was cut at max_tokens."""
    if max_tokens is None:
        return body
    names = [len(m.group(1)) for m in map(_ANY_DECLARATION.match, prefix.splitlines()) if m]
    line = LINE_TOKENS + 2 * (max(names, default=0) // _CHARS_PER_TOKEN)
    spare = max_tokens - len(prefix) // _CHARS_PER_TOKEN - SPARE_TOKENS // 2
    lines = max(1, min(LINES, spare // (2 * line)))
    # Never more than the one-phase decoding grammar allows (sized for the whole program).
    return re.sub(r"\{0,(\d+)\}", lambda m: f"{{0,{min(int(m.group(1)), lines - 1)}}}", body)


def _rule_body(grammar: str, name: str) -> str:
    start = f"{name} ::= "
    return next(line[len(start):] for line in grammar.splitlines() if line.startswith(start))


@dataclass(frozen=True)
class Declarations:
    sorts: dict[str, tuple[str, list[str]]]  # name -> (EnumSort or IntSort, members: numbers included)
    functions: dict[str, list[str]]  # name -> its sorts, the result's last


def smt_declarations(text: str) -> Declarations:
    sorts: dict[str, tuple[str, list[str]]] = {}
    functions: dict[str, list[str]] = {}
    for line in text.splitlines():
        match = _SMT_DECLARATION.match(line)
        if match is None:
            continue
        name, kind, inside = match.groups()
        inside = inside.split(":::")[0]
        if kind == "Function":
            functions[name] = [t for t in re.split(r"->|,|\[|\]|\s", inside) if t]
        else:
            members = [m.strip().strip("'\"") for m in inside.strip().strip("[]").split(",") if m.strip()]
            sorts[name] = (kind, members)
    return Declarations(sorts, functions)


def csp_variables(text: str) -> list[str]:
    return list(dict.fromkeys(m.group(1) for m in map(_CSP_VARIABLE.match, text.splitlines()) if m))


def _first_declarations(language: str, prefix: str) -> str:
    """The prefix without a repeated declaration of a name (the parser refuses a program that declares
    a name twice, and SmolLM2-135M repeats lines): the next phase fixes the first of each."""
    pattern = _CSP_VARIABLE if language == "csp" else _SMT_DECLARATION
    seen: set[str] = set()
    kept = []
    for line in prefix.splitlines(keepends=True):
        match = pattern.match(line)
        if match is not None:
            if match.group(1) in seen:
                continue
            seen.add(match.group(1))
        kept.append(line)
    return "".join(kept)


def _csp_rules(prefix: str) -> dict[str, str] | None:
    names = csp_variables(prefix)
    return {"py-name": _choice(names)} if names else None


def _smt_rules(prefix: str) -> dict[str, str] | None:
    declared = smt_declarations(prefix)
    if not declared.sorts:
        return None
    return typed_rules(sorts_of(declared.sorts, declared.functions), literal)


def _choice(words: list[str]) -> str:
    return " | ".join(literal(w) for w in sorted(words, key=lambda w: (-len(w), w)))


def literal(text: str) -> str:
    """A GBNF string literal matching exactly `text`."""
    out = []
    for char in text:
        if char in "\"\\":
            out.append("\\" + char)
        elif char == "\n":
            out.append("\\n")
        elif char == "\r":
            out.append("\\r")
        elif char == "\t":
            out.append("\\t")
        elif ord(char) < 0x20 or ord(char) == 0x7F:
            out.append(f"\\x{ord(char):02x}")
        else:
            out.append(char)
    return '"' + "".join(out) + '"'


def _set_rules(grammar: str, rules: dict[str, str]) -> str:
    """Replace each named rule (one line each in these grammars), or add it, in one pass."""
    lines, seen = [], set()
    for line in grammar.splitlines():
        name = line.split(" ::= ", 1)[0] if " ::= " in line and not line.startswith("#") else None
        if name in rules:
            line = f"{name} ::= {rules[name]}"
            seen.add(name)
        lines.append(line)
    lines += [f"{name} ::= {body}" for name, body in rules.items() if name not in seen]
    return "\n".join(lines) + "\n"
