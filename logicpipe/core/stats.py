"""How sure a figure is, and whether two runs differ: pure functions over plain numbers, no pandas or
scipy (the tests check each one against statsmodels and scipy).

- A proportion (accuracy, Exe_Rate): Wilson's score interval, which stays inside [0, 1] and is not
  empty at a rate of 0 or 1, where the normal approximation collapses to a point.
- A figure that is not one proportion (Exe_Acc, whose denominator is itself random; a vote): a seeded
  percentile bootstrap over problems, so the same data give the same interval on every run (Exe_Acc at
  0 or 1, where every resample agrees: Wilson's on the executed problems).
- Two runs on the same problems: McNemar's exact test on the problems only one of them got right, and a
  paired bootstrap interval of the difference in accuracy. Pairing removes the problems' own difficulty
  from the comparison, so it sees differences an unpaired test (two standard errors) would call noise.
- Several comparisons at once: Holm's step-down correction of the p-values.
- Repeated epochs: the standard error of the mean clustered by problem (as inspect_ai's `stderr(cluster=)`),
  because the epochs of one problem are not independent samples.

An undefined figure (no problems, no executed program) has no interval: None, never (0, 0).
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Sequence
from statistics import NormalDist
from typing import TypeVar

T = TypeVar("T")
Interval = tuple[float, float]

CONFIDENCE = 0.95
RESAMPLES = 2000
SEED = 0


def _z(confidence: float) -> float:
    return NormalDist().inv_cdf(1 - (1 - confidence) / 2)


def wilson(successes: int, n: int, confidence: float = CONFIDENCE) -> Interval | None:
    """Wilson's score interval of successes / n, as fractions; None when n is 0."""
    if n <= 0:
        return None
    if not 0 <= successes <= n:
        raise ValueError(f"{successes} successes of {n}")
    z = _z(confidence)
    p = successes / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z / (1 + z * z / n) * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    # At p = 0 or 1 the bound is exactly 0 or 1; rounding must not push it past.
    return max(0.0, centre - half), min(1.0, centre + half)


def _percentile(values: list[float], q: float) -> float:
    """The q-quantile of sorted values, linearly interpolated (numpy's default, which scipy uses)."""
    position = q * (len(values) - 1)
    low = math.floor(position)
    high = min(low + 1, len(values) - 1)
    return values[low] + (values[high] - values[low]) * (position - low)


def bootstrap(rows: Sequence[T], statistic: Callable[[Sequence[T]], float | None],
              confidence: float = CONFIDENCE, resamples: int = RESAMPLES, seed: int = SEED) -> Interval | None:
    """A percentile bootstrap interval of statistic(rows): rows are drawn with replacement, len(rows) at a
    time, `resamples` times from a generator seeded with `seed`. A resample whose statistic is undefined
    (None: Exe_Acc of a resample with nothing executed) is left out; None when rows are empty or no
    resample is defined."""
    if not rows or statistic(rows) is None:
        return None
    draw = random.Random(seed)
    n = len(rows)
    values = []
    for _ in range(resamples):
        value = statistic([rows[int(draw.random() * n)] for _ in range(n)])
        if value is not None:
            values.append(value)
    return _quantiles(values, confidence)


def ratio(pairs: Sequence[tuple[int, int]]) -> float | None:
    """sum of numerators / sum of denominators (Exe_Acc: correct and executed per problem); None at 0."""
    whole = sum(d for _, d in pairs)
    return sum(p for p, _ in pairs) / whole if whole else None


def ratio_interval(part: int, whole: int, total: int, confidence: float = CONFIDENCE,
                   resamples: int = RESAMPLES, seed: int = SEED) -> Interval | None:
    """The bootstrap interval of part / whole where whole is itself a count out of `total` problems
    (Exe_Acc: correct among executed, executed among all). Built from the counts alone: a problem is one
    of three kinds, so a resample of the problems is the number of executed ones, Binomial(total,
    whole / total), and the right ones among those, Binomial(executed, part / whole): the same
    distribution as drawing problems one by one, at a cost that does not grow with the problems.

    At a ratio of 0 or 1 every resample gives the same ratio, and a percentile interval would be a
    point that claims certainty: there, Wilson's interval of part / whole is given instead."""
    if not 0 <= part <= whole <= total:
        raise ValueError(f"counts {part} <= {whole} <= {total} expected")
    if whole == 0:
        return None
    if part in (0, whole):
        return wilson(part, whole, confidence)
    draw = random.Random(seed)
    values = []
    for _ in range(resamples):
        executed = binomial(draw, total, whole / total)
        if executed:  # a resample with nothing executed has no Exe_Acc: left out
            values.append(binomial(draw, executed, part / whole) / executed)
    return _quantiles(values, confidence)


def binomial(draw: random.Random, n: int, p: float) -> int:
    """One draw of Binomial(n, p) by inversion, searching outward from the mode (about sqrt(n p (1 - p))
    steps), exact up to floating point. (random.binomialvariate needs Python 3.12.)"""
    if p <= 0 or n == 0:
        return 0
    if p >= 1:
        return n
    mode = min(n, int((n + 1) * p))
    at_mode = math.exp(math.lgamma(n + 1) - math.lgamma(mode + 1) - math.lgamma(n - mode + 1)
                       + mode * math.log(p) + (n - mode) * math.log1p(-p))
    odds = p / (1 - p)
    u = draw.random() - at_mode
    low = high = mode
    p_low = p_high = at_mode
    while u >= 0:
        if high < n:
            p_high *= (n - high) / (high + 1) * odds
            high += 1
            u -= p_high
            if u < 0:
                return high
        if low > 0:
            p_low *= low / ((n - low + 1) * odds)
            low -= 1
            u -= p_low
            if u < 0:
                return low
        if high >= n and low <= 0:
            break  # what rounding left over: the mode
    return mode


def _quantiles(values: list[float], confidence: float) -> Interval | None:
    if not values:
        return None
    values.sort()
    alpha = 1 - confidence
    return _percentile(values, alpha / 2), _percentile(values, 1 - alpha / 2)


def mean(values: Sequence[float]) -> float | None:
    return sum(values) / len(values) if values else None


def mcnemar(only_a: int, only_b: int) -> float:
    """McNemar's exact two-sided p-value from the discordant problems (right in one run only): the
    binomial test of only_a successes in only_a + only_b trials at 1/2. With no discordant problem
    nothing differs: 1.0 (as statsmodels' `mcnemar(exact=True)`)."""
    if only_a < 0 or only_b < 0:
        raise ValueError(f"discordant counts must not be negative ({only_a}, {only_b})")
    n = only_a + only_b
    low = min(only_a, only_b)
    # Exact integers: the tail of Binomial(n, 1/2), doubled; for n in the thousands floats would underflow.
    tail = sum(math.comb(n, k) for k in range(low + 1))
    return min(1.0, 2 * tail / 2**n)


def paired_difference(a: Sequence[int | float], b: Sequence[int | float], confidence: float = CONFIDENCE,
                      resamples: int = RESAMPLES, seed: int = SEED) -> Interval | None:
    """The paired bootstrap interval of mean(a) - mean(b), a[i] and b[i] the two runs' scores on problem
    i: a resample draws problems, each with both its scores. None when there is no problem. Scores of
    0 and 1 (right or wrong) are resampled by their counts, as ratio_interval's are."""
    if len(a) != len(b):
        raise ValueError(f"paired scores need the same problems ({len(a)} and {len(b)})")
    if not a:
        return None
    if not all(x in (0, 1) and y in (0, 1) for x, y in zip(a, b)):
        return bootstrap([x - y for x, y in zip(a, b)], mean, confidence, resamples, seed)
    n = len(a)
    only_a = sum(x > y for x, y in zip(a, b))
    only_b = sum(x < y for x, y in zip(a, b))
    draw = random.Random(seed)
    values = []
    for _ in range(resamples):
        wins = binomial(draw, n, only_a / n)
        losses = binomial(draw, n - wins, only_b / (n - only_a)) if n > only_a else 0
        values.append((wins - losses) / n)
    return _quantiles(values, confidence)


def holm(pvalues: Sequence[float]) -> list[float]:
    """Holm's step-down adjusted p-values, in the order given: the k-th smallest is multiplied by
    (m - k + 1), kept at least as large as the one before, and capped at 1."""
    m = len(pvalues)
    adjusted = [0.0] * m
    running = 0.0
    for rank, index in enumerate(sorted(range(m), key=lambda i: pvalues[i])):
        running = max(running, min(1.0, (m - rank) * pvalues[index]))
        adjusted[index] = running
    return adjusted


def clustered_stderr(scores: Sequence[float], clusters: Sequence[str]) -> float | None:
    """The standard error of mean(scores), clustered by `clusters` (a problem's id, one score per epoch):
    sqrt(G / (G - 1) * sum over clusters of (sum of deviations)^2) / N, with G clusters and N scores.
    None when undefined (fewer than two clusters)."""
    if len(scores) != len(clusters):
        raise ValueError(f"{len(scores)} scores and {len(clusters)} clusters")
    n = len(scores)
    centre = mean(scores)
    if centre is None:
        return None
    sums: dict[str, float] = {}
    for score, cluster in zip(scores, clusters):
        sums[cluster] = sums.get(cluster, 0.0) + (score - centre)
    g = len(sums)
    if g < 2:
        return None
    return math.sqrt(g / (g - 1) * sum(s * s for s in sums.values())) / n


def percent(interval: Interval | None) -> list[float] | None:
    """An interval of fractions as percentages rounded as the figures are (metrics.json, tables)."""
    return None if interval is None else [round(100 * interval[0], 2), round(100 * interval[1], 2)]
