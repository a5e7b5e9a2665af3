"""Counts in words: "1 batch", "2 batches"."""

from __future__ import annotations


def counted(number: int, noun: str, plural: str | None = None) -> str:
    """`number` and the noun, singular for one; the plural adds "s" unless given ("batch" -> "batches")."""
    many = plural or (noun + "es" if noun.endswith(("s", "sh", "ch", "x")) else noun + "s")
    return f"{number:,} {noun if number == 1 else many}"
