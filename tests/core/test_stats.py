"""Each interval and test of core/stats.py against an independent implementation on the same data:
statsmodels' Wilson interval, McNemar's exact test and Holm's correction, scipy's binomial test and
(paired) percentile bootstrap, and statsmodels' cluster-robust standard error of a mean."""

from __future__ import annotations

import random
import warnings

import numpy as np
import pytest

stats_models = pytest.importorskip("statsmodels")
scipy_stats = pytest.importorskip("scipy.stats")

from statsmodels.stats.contingency_tables import mcnemar as sm_mcnemar  # noqa: E402
from statsmodels.stats.multitest import multipletests  # noqa: E402
from statsmodels.stats.proportion import proportion_confint  # noqa: E402

from logicpipe.core import stats  # noqa: E402


@pytest.mark.parametrize(("successes", "n"), [(0, 1), (1, 1), (0, 10), (10, 10), (122, 182), (1, 2),
                                              (3, 500), (499, 500)])
def test_wilson_is_statsmodels_wilson(successes, n):
    low, high = proportion_confint(successes, n, alpha=0.05, method="wilson")
    assert stats.wilson(successes, n) == pytest.approx((low, high), abs=1e-12)


def test_wilson_at_other_confidence_and_undefined():
    low, high = proportion_confint(40, 70, alpha=0.1, method="wilson")
    assert stats.wilson(40, 70, confidence=0.9) == pytest.approx((low, high), abs=1e-12)
    assert stats.wilson(0, 0) is None  # an undefined rate has no interval, not (0, 0)
    with pytest.raises(ValueError):
        stats.wilson(3, 2)


@pytest.mark.parametrize(("only_a", "only_b"), [(0, 0), (5, 0), (0, 7), (12, 0), (1, 1), (3, 9), (20, 31),
                                                (50, 50), (1, 0), (400, 350)])
def test_mcnemar_is_statsmodels_exact_and_scipy_binomtest(only_a, only_b):
    table = [[60, only_a], [only_b, 40]]
    expected = sm_mcnemar(table, exact=True).pvalue
    assert stats.mcnemar(only_a, only_b) == pytest.approx(expected, rel=1e-9, abs=1e-300)
    if only_a + only_b:  # scipy's binomtest needs at least one trial
        assert stats.mcnemar(only_a, only_b) == pytest.approx(
            scipy_stats.binomtest(only_a, only_a + only_b, 0.5).pvalue, rel=1e-9)
    else:
        assert stats.mcnemar(0, 0) == 1.0  # no discordant problem: nothing differs


def _scipy_interval(data, statistic, paired, resamples=20000):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a degenerate sample (all equal) warns, and its interval is a point
        result = scipy_stats.bootstrap(data, statistic, paired=paired, vectorized=True, method="percentile",
                                       n_resamples=resamples, rng=np.random.default_rng(1))
    return result.confidence_interval.low, result.confidence_interval.high


def _difference(x, y, axis=-1):
    return np.mean(x, axis) - np.mean(y, axis)


def _scores(n, p, seed):
    draw = random.Random(seed)
    return [int(draw.random() < p) for _ in range(n)]


@pytest.mark.parametrize(("n", "pa", "pb", "seed"), [(182, 0.72, 0.6, 1), (60, 0.5, 0.5, 2), (300, 0.9, 0.85, 3)])
def test_paired_bootstrap_is_scipys_paired_bootstrap(n, pa, pb, seed):
    a = _scores(n, pa, seed)
    # b agrees with a on most problems, as two runs on the same problems do
    b = [x if random.Random(seed * 1000 + i).random() < 0.7 else y for i, (x, y) in enumerate(zip(a, _scores(n, pb, seed + 7)))]
    ours = stats.paired_difference(a, b, resamples=20000)
    theirs = _scipy_interval((a, b), _difference, paired=True)
    assert ours is not None
    # Two Monte Carlo estimates of the same quantiles: equal up to resampling noise and one problem's step.
    assert ours[0] == pytest.approx(theirs[0], abs=1.5 / n + 0.004)
    assert ours[1] == pytest.approx(theirs[1], abs=1.5 / n + 0.004)
    # and the unpaired interval of the same data is wider: pairing is what buys the precision
    unpaired = _scipy_interval((a, b), _difference, paired=False, resamples=5000)
    assert unpaired[1] - unpaired[0] > ours[1] - ours[0]


def test_paired_bootstrap_edge_cases():
    same = [1, 0, 1, 1, 0]
    assert stats.paired_difference(same, same) == (0.0, 0.0)  # no discordant problem: a point at 0
    assert _scipy_interval((same, same), _difference, paired=True) == (0.0, 0.0)
    every = [1, 1, 1, 1]
    none = [0, 0, 0, 0]
    assert stats.paired_difference(every, none) == (1.0, 1.0)  # all discordant one way
    assert stats.paired_difference([1], [0]) == (1.0, 1.0)  # n = 1
    assert stats.paired_difference([], []) is None  # no problem in common: undefined
    with pytest.raises(ValueError):
        stats.paired_difference([1], [1, 0])


def test_exe_acc_bootstrap_is_scipys_ratio_bootstrap():
    # 182 problems, 150 executed, 120 of them right: Exe_Acc's denominator varies from resample to resample
    executed = [1] * 150 + [0] * 32
    right = [1] * 120 + [0] * 62
    ours = stats.ratio_interval(120, 150, 182, resamples=20000)
    theirs = _scipy_interval((right, executed), lambda r, e, axis=-1: np.sum(r, axis) / np.sum(e, axis), paired=True)
    assert ours is not None
    assert ours == pytest.approx(theirs, abs=0.008)
    assert stats.ratio_interval(0, 0, 10) is None  # nothing executed: undefined
    # at a ratio of 1 (or 0) every resample agrees; not a point, but Wilson's on the executed ones
    assert stats.ratio_interval(5, 5, 8) == stats.wilson(5, 5) and stats.wilson(5, 5)[0] < 1
    assert stats.ratio_interval(0, 3, 8) == stats.wilson(0, 3)
    assert stats.ratio_interval(0, 0, 0) is None


def test_bootstrap_is_seeded():
    rows = _scores(100, 0.6, 4)
    assert stats.bootstrap(rows, stats.mean) == stats.bootstrap(rows, stats.mean)
    assert stats.bootstrap(rows, stats.mean, seed=1) != stats.bootstrap(rows, stats.mean, seed=2)
    assert stats.bootstrap([], stats.mean) is None


@pytest.mark.parametrize("pvalues", [[0.01, 0.04, 0.03], [0.2], [0.001, 0.5, 0.02, 0.04, 0.049], [0.6, 0.6, 0.01], []])
def test_holm_is_statsmodels_holm(pvalues):
    expected = list(multipletests(pvalues, method="holm")[1]) if pvalues else []
    assert stats.holm(pvalues) == pytest.approx(expected, abs=1e-12)


def test_clustered_stderr_is_statsmodels_cluster_robust_mean():
    import statsmodels.api as sm

    draw = random.Random(5)
    problems = [f"p{i}" for i in range(40)]
    difficulty = {p: draw.random() for p in problems}
    scores, clusters = [], []
    for p in problems:
        for _ in range(3):  # three epochs of each problem, correlated through its difficulty
            scores.append(float(draw.random() < difficulty[p]))
            clusters.append(p)
    groups = np.array([problems.index(c) for c in clusters])
    fitted = sm.OLS(np.array(scores), np.ones((len(scores), 1))).fit(cov_type="cluster", cov_kwds={"groups": groups})
    assert stats.clustered_stderr(scores, clusters) == pytest.approx(float(fitted.bse[0]), rel=1e-9)
    # with one epoch per problem it is the ordinary standard error (population variance, n/(n-1) corrected)
    single = scores[::3]
    ordinary = float(np.std(single, ddof=1) / np.sqrt(len(single)))
    assert stats.clustered_stderr(single, problems) == pytest.approx(ordinary, rel=1e-9)
    assert stats.clustered_stderr([], []) is None
    assert stats.clustered_stderr([1.0, 0.0], ["p", "p"]) is None  # one cluster: no spread between problems


def test_percent():
    assert stats.percent((0.12345, 0.5)) == [12.35, 50.0]
    assert stats.percent(None) is None


@pytest.mark.parametrize(("n", "p"), [(1, 0.3), (10, 0.5), (182, 0.73), (600, 0.02), (5000, 0.999), (7, 0.0), (7, 1.0)])
def test_binomial_draws_follow_scipys_binomial(n, p):
    draw = random.Random(11)
    counts = [stats.binomial(draw, n, p) for _ in range(20000)]
    assert all(0 <= c <= n for c in counts)
    if p in (0.0, 1.0):
        assert set(counts) == {round(n * p)}
        return
    # the largest gap between the empirical and scipy's CDF, against the Kolmogorov-Smirnov 0.1% bound
    empirical = np.searchsorted(np.sort(counts), np.arange(n + 1), side="right") / len(counts)
    gap = np.max(np.abs(empirical - scipy_stats.binom.cdf(np.arange(n + 1), n, p)))
    assert gap < 1.95 / np.sqrt(len(counts))


def test_the_generic_bootstrap_is_scipys_on_scores_that_are_not_zero_or_one():
    # a vote's share of samples per problem: not a proportion of problems
    draw = random.Random(3)
    shares = [draw.choice([0, 0.2, 0.4, 0.6, 0.8, 1.0]) for _ in range(120)]
    ours = stats.bootstrap(shares, stats.mean, resamples=10000)
    theirs = _scipy_interval((shares,), np.mean, paired=False)
    assert ours == pytest.approx(theirs, abs=0.006)
    # paired scores that are not 0/1 take the same generic path
    other = [draw.choice([0, 0.5, 1.0]) for _ in range(120)]
    ours = stats.paired_difference(shares, other, resamples=10000)
    theirs = _scipy_interval((shares, other), _difference, paired=True)
    assert ours == pytest.approx(theirs, abs=0.01)
