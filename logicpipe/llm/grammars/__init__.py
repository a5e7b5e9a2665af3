"""GBNF grammars (llama.cpp's format) for each formal language, shipped as package data.

A language's file names the shared fragments it uses on its first line (`# include: common pyexpr`);
`load` returns the file with those fragments appended, one self-contained grammar whose start rule
is `root`.

Each file gives two grammars. Markers stand where they differ:
- `{sections}` after the sections before the last one, `{lines}` after the line of a section (or
  blank lines), `{chars}` after a free-running character class or item inside a line (names,
  comments, arguments), `{spaces}` after a run of spaces and tabs, `{note}` after free text in a
  decoding rule (notes, comments, strings), `{name}` after the characters of a CSP or SMT name,
  `{tail}` for lines the parser ignores after the last section, and `X{after}` for sections the
  parser reads after the last required one. A rule named `decoding-X` replaces rule X in the
  decoding grammar (and is left out of the exact one): a canonical shape for a model to write,
  where the parser accepts many (sections in their usual order, each once).
- The exact grammar (`load(language)`) is the language the parser accepts: every marker is `*`
  (`{tail}` is any lines). Tests hold it to the parser.
- The decoding grammar (`load(language, decoding=True, max_tokens=N)`), sent with --constrain, is the
  same grammar with every repetition bounded and nothing after the last section, so a subset of the
  exact one: a small model that loops on a line or a section is made to move on and finish its
  program, rather than run to max_tokens and have it cut before the query. The lines per section
  are sized so that a program of typical lines fits in max_tokens.
"""

from __future__ import annotations

import re
from importlib import resources

LANGUAGES = ("lp", "fol", "csp", "smt", "asp")
_INCLUDE = "# include:"
_REPLACE = "decoding-"
# The decoding bounds. At most LINES lines per section (above the longest section of the released
# programs, 24 lines) and CHARS per run inside a line (a name, a number, a list of operands): SmolLM2-135M
# wrote a 200-character variable name where 200 were allowed, and its program ran out of tokens.
LINES = 30
CHARS = 48
# Characters of a CSP or SMT name after its first (Python's names: after the prefix that tells it from
# a keyword, so a few more after 'False' or 'continue'): the released programs' longest is 22, and a
# name of random letters costs SmolLM2 a token a letter.
NAME = 24
# Spaces in a row: SmolLM2-135M filled whole replies with tabs where 200 were allowed.
SPACES = 4
# Characters of free text in a line (a ':::' note, a comment, a Domain: line, a string): SmolLM2-135M
# wrote sentences there until its tokens ran out.
NOTE = 40
# Sections a program may repeat before its last one, per language (LP: predicates, facts, rules; ASP:
# its statements, which get the lines of two sections, asp.gbnf).
SECTIONS = {"lp": 3, "fol": 2, "csp": 3, "smt": 2, "asp": 2}
# Tokens in a program line with its ':::' comment (SmolLM2's tokenizer: 12 to 18 on its own lines;
# SmolLM2-135M's constrained programs averaged 13 to 16), and tokens kept spare for lines longer than
# that (its long-winded replies ran up to 200 past a program of typical lines), so that a model that
# fills every section, header included, still ends within max_tokens. At the default 2048 a section
# holds 25 lines (LP, CSP) or 30, as many as the released programs' longest.
LINE_TOKENS = 18
SPARE_TOKENS = 160


# What each marker stands for in the exact grammar.
EXACT_MARKS = {"{sections}": "*", "{lines}": "*", "{chars}": "*", "{spaces}": "*", "{tail}": "any-line*",
               "{after}": "*", "{name}": "*"}


def _read(name: str) -> str:
    return resources.files(__package__).joinpath(f"{name}.gbnf").read_text(encoding="utf-8")


def lines_per_section(language: str, max_tokens: int | None) -> int:
    """LINES, or fewer where max_tokens would not hold every section at that length (its header, its
    first line, which every section but the Domain and Predicates ones must have, and the lines after
    it, which this bounds); never fewer than two, so that a section can say something."""
    if max_tokens is None:
        return LINES
    return max(2, min(LINES, (max_tokens - SPARE_TOKENS) // (LINE_TOKENS * (SECTIONS[language] + 1)) - 2))


def _pick_rules(grammar: str, decoding: bool) -> str:
    """Keep X or its `decoding-X` replacement (rules are one line each in these files)."""
    lines = grammar.splitlines()
    replaced = {line.split("::=")[0].strip()[len(_REPLACE):] for line in lines if line.startswith(_REPLACE)}
    kept = []
    for line in lines:
        name = line.split("::=")[0].strip() if "::=" in line and not line.startswith("#") else ""
        if name.startswith(_REPLACE):
            if decoding:
                kept.append(line[len(_REPLACE):])
        elif not (decoding and name in replaced):
            kept.append(line)
    return "\n".join(kept) + "\n"


def load(language: str, decoding: bool = False, max_tokens: int | None = None) -> str:
    """The complete grammar for a solver's language (lp, fol, csp, smt, asp): exact, or for decoding
    replies of at most max_tokens tokens."""
    if language not in LANGUAGES:
        raise ValueError(f"no grammar for language {language!r}; known: {', '.join(LANGUAGES)}")
    text = _read(language)
    first = text.splitlines()[0] if text else ""
    parts = [text]
    if first.startswith(_INCLUDE):
        parts += [_read(name) for name in first[len(_INCLUDE):].split()]
    grammar = "\n".join(part.rstrip("\n") for part in parts) + "\n"
    grammar = _pick_rules(grammar, decoding)
    if not decoding:
        marks = EXACT_MARKS
    else:
        grammar = re.sub(r"\S+\{after\}", "", grammar)
        marks = {"{sections}": f"{{0,{SECTIONS[language]}}}",
                 "{lines}": f"{{0,{lines_per_section(language, max_tokens)}}}", "{chars}": f"{{0,{CHARS}}}",
                 "{spaces}": f"{{0,{SPACES}}}", "{note}": f"{{0,{NOTE}}}", "{name}": f"{{0,{NAME - 1}}}",
                 "{tail}": ""}
    for marker, value in marks.items():
        grammar = grammar.replace(marker, value)
    return grammar
