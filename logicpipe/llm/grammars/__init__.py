"""GBNF grammars (llama.cpp's format) for each formal language, shipped as package data.

A language's file names the shared fragments it uses on its first line (`# include: common pyexpr`);
`load` returns the file with those fragments appended, one self-contained grammar whose start rule
is `root`.
"""

from __future__ import annotations

from importlib import resources

LANGUAGES = ("lp", "fol", "csp", "smt")
_INCLUDE = "# include:"


def _read(name: str) -> str:
    return resources.files(__package__).joinpath(f"{name}.gbnf").read_text(encoding="utf-8")


def load(language: str) -> str:
    """The complete grammar for a solver's language (lp, fol, csp, smt)."""
    if language not in LANGUAGES:
        raise ValueError(f"no grammar for language {language!r}; known: {', '.join(LANGUAGES)}")
    text = _read(language)
    first = text.splitlines()[0] if text else ""
    parts = [text]
    if first.startswith(_INCLUDE):
        parts += [_read(name) for name in first[len(_INCLUDE):].split()]
    return "\n".join(part.rstrip("\n") for part in parts) + "\n"
