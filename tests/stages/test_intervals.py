"""Every rate of a run carries its 95% interval and its n: metrics.json's `<rate>_ci` (Wilson's for
accuracy and Exe_Rate, checked against statsmodels on the run's own counts; a bootstrap for Exe_Acc,
checked against scipy's on the run's evaluate records), per LogicBench logic type and pattern too, and
the summary the command prints shows them."""

from __future__ import annotations

import json

import numpy as np
import pytest

from logicpipe.core.records import EvaluateRecord
from logicpipe.stages.metrics import Tally

from ..conftest import cli

proportion = pytest.importorskip("statsmodels.stats.proportion")
scipy_stats = pytest.importorskip("scipy.stats")


def _wilson(part, whole):
    return [round(100 * x, 2) for x in proportion.proportion_confint(part, whole, method="wilson")]


def test_a_replays_metrics_carry_each_rates_interval(tmp_path, data_dir):
    done = cli("run", "-d", "folio", "--data-dir", str(data_dir), "--programs",
               str(data_dir / "programs" / "FOLIO_dev_text-davinci-003.json"), "--limit", "60", "--out", str(tmp_path))
    assert done.returncode == 0, done.stderr
    metrics = json.loads((tmp_path / "folio" / "metrics.json").read_text())
    total, executed, correct = metrics["total"], metrics["executed"], metrics["correct"]
    assert total == 60 and 0 < executed < total  # some programs fail: Exe_Acc's denominator is not n
    assert metrics["accuracy_ci"] == pytest.approx(_wilson(correct, total), abs=0.006)
    assert metrics["exe_rate_ci"] == pytest.approx(_wilson(executed, total), abs=0.006)
    records = [json.loads(line) for line in (tmp_path / "folio" / "evaluate.jsonl").read_text().splitlines()]
    ran = np.array([r["executed"] for r in records], dtype=float)
    right = np.array([r["correct_executed"] for r in records], dtype=float)
    theirs = scipy_stats.bootstrap((right, ran), lambda r, e, axis=-1: 100 * r.sum(axis) / e.sum(axis), paired=True,
                                   method="percentile", n_resamples=20000, rng=np.random.default_rng(0))
    low, high = metrics["exe_acc_ci"]
    assert low == pytest.approx(theirs.confidence_interval.low, abs=1.5)
    assert high == pytest.approx(theirs.confidence_interval.high, abs=1.5)
    assert low <= metrics["exe_acc"] <= high
    assert metrics["executed_logiclm"] == executed and metrics["exe_acc_logiclm_ci"] == metrics["exe_acc_ci"]
    # the summary shows each rate with its interval and n
    acc = metrics["accuracy_ci"]
    assert f"{metrics['accuracy']:.2f}% [{acc[0]:.1f}, {acc[1]:.1f}] (n=60)" in done.stdout
    assert f"{metrics['exe_acc']:.2f}% [{low:.1f}, {high:.1f}] (n={executed})" in done.stdout


def _record(i, executed, right):
    return EvaluateRecord(id=f"{i}", gold="A", predicted="A" if right else None, final="A" if right else "B",
                          executed=executed, correct_executed=executed and right, correct=right)


def test_an_undefined_rate_has_no_interval_and_a_sure_one_is_not_a_point():
    nothing_ran = Tally("lp").scores([_record(i, False, i % 2 == 0) for i in range(4)]).intervals()
    assert nothing_ran["exe_acc_ci"] is None and nothing_ran["exe_rate_ci"] == _wilson(0, 4)
    assert nothing_ran["exe_rate_ci"][1] > 0  # a rate of 0 of 4 is not known to be 0
    empty = Tally("lp").intervals()
    assert (empty["accuracy_ci"], empty["exe_rate_ci"], empty["exe_acc_ci"]) == (None, None, None)
    perfect = Tally("lp").scores([_record(i, True, True) for i in range(5)]).intervals()
    assert perfect["accuracy_ci"] == _wilson(5, 5) and perfect["accuracy_ci"][0] < 100
    assert perfect["exe_acc_ci"] == _wilson(5, 5)  # every resample agrees at 100%: Wilson's, not a point


def test_logicbench_groups_carry_intervals():
    from logicpipe.stages.metrics import _intervals

    shown = _intervals([10, 8, 6, 7])
    assert shown["accuracy_ci"] == _wilson(7, 10) and shown["exe_rate_ci"] == _wilson(8, 10)
    assert shown["exe_acc_ci"][0] <= 75.0 <= shown["exe_acc_ci"][1]
