"""Paired comparison of a candidate with the current state on the same validation problems."""

from __future__ import annotations

import math

import pytest

from logicpipe.core.errors import UsageError
from logicpipe.optimize.stats import accept, describe, paired


def test_paired_differences_mean_se_wins_and_losses() -> None:
    result = paired([1, 1, 0, 1, 0], [0, 1, 0, 0, 1])
    # differences 1, 0, 0, 1, -1: mean 0.2, sample variance (0.64+0.04+0.04+0.64+1.44)/4 = 0.7
    assert result.n == 5 and result.wins == 2 and result.losses == 1
    assert result.mean == pytest.approx(0.2)
    assert result.se == pytest.approx(math.sqrt(0.7) / math.sqrt(5))


def test_paired_needs_the_same_problems() -> None:
    with pytest.raises(UsageError, match="same problems"):
        paired([1, 0], [1])


def test_accept_needs_a_positive_mean_beyond_z_standard_errors() -> None:
    clear = paired([1.0] * 8 + [0.0] * 2, [0.0] * 8 + [1.0] * 2)  # mean 0.6, se ~0.27
    assert accept(clear, z=1.0) and accept(clear, z=2.0) and not accept(clear, z=3.0)
    marginal = paired([1, 0, 1, 0], [0, 1, 0, 0])  # mean 0.25, se 0.48
    assert not accept(marginal)
    assert not accept(paired([0, 0, 1], [1, 0, 0]))  # mean 0
    assert not accept(paired([0, 0], [1, 1]))


def test_without_spread_a_gain_counts_only_with_two_wins() -> None:
    assert accept(paired([1, 1], [0, 0]))
    assert not accept(paired([1], [0]))  # one problem is one lucky draw
    assert not accept(paired([], []))


def test_describe_prints_mean_se_and_wins() -> None:
    assert describe(paired([1, 1, 0], [0, 1, 0])) == "+0.333 ± 0.333 (1 won, 0 lost of 3)"
