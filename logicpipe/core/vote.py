"""The one vote over samples the pipeline has (self-consistency, LINC's majority): the most common value
among the samples that gave one, ties to the value seen first."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable


def majority(values: Iterable[str | None]) -> str | None:
    """The most common of the values that are not None, ties to the first seen (Counter.most_common keeps
    insertion order among equal counts, as LINC's and Wang et al.'s code rely on); None when none is."""
    counts = Counter(value for value in values if value is not None)
    return counts.most_common(1)[0][0] if counts else None
