"""GBNF grammars (llama.cpp's format) for each formal language, shipped as package data.

A language's file names the shared fragments it uses on its first line (`# include: common pyexpr`);
`load` returns the file with those fragments appended, one self-contained grammar whose start rule
is `root`.

Each file gives two grammars. Three markers stand where they differ:
- `{lines}` after the line of a section (or blank lines), `{chars}` after a free-running character
  class (names, comments, text the parser reads as documentation), `{tail}` for what may follow the
  last section.
- The exact grammar (`load(language)`) is the language the parser accepts: `{lines}` and `{chars}`
  are `*`, and `{tail}` is any lines, which the parser ignores. Tests hold it to the parser.
- The decoding grammar (`load(language, decoding=True)`), sent with --constrain, is the same grammar
  with every repetition bounded and nothing after the last section, so a subset of the exact one:
  a small model that loops on a line or a section is made to move on and finish its program, rather
  than run to max_tokens and have it cut before the query.
"""

from __future__ import annotations

from importlib import resources

LANGUAGES = ("lp", "fol", "csp", "smt")
_INCLUDE = "# include:"
# The decoding bounds: above the longest section (24 lines) and nearly every line (95% are under
# 160 characters) of the released gpt-4 programs.
LINES = 30
CHARS = 200
_EXACT = {"{lines}": "*", "{chars}": "*", "{tail}": "any-line*"}
_DECODING = {"{lines}": f"{{0,{LINES}}}", "{chars}": f"{{0,{CHARS}}}", "{tail}": ""}


def _read(name: str) -> str:
    return resources.files(__package__).joinpath(f"{name}.gbnf").read_text(encoding="utf-8")


def load(language: str, decoding: bool = False) -> str:
    """The complete grammar for a solver's language (lp, fol, csp, smt): exact, or for decoding."""
    if language not in LANGUAGES:
        raise ValueError(f"no grammar for language {language!r}; known: {', '.join(LANGUAGES)}")
    text = _read(language)
    first = text.splitlines()[0] if text else ""
    parts = [text]
    if first.startswith(_INCLUDE):
        parts += [_read(name) for name in first[len(_INCLUDE):].split()]
    grammar = "\n".join(part.rstrip("\n") for part in parts) + "\n"
    for marker, value in (_DECODING if decoding else _EXACT).items():
        grammar = grammar.replace(marker, value)
    return grammar
