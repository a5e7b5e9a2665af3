"""`logicpipe diff` between two replays of Logic-LM's released FOLIO programs (gpt-4 and
text-davinci-003): its 2x2 table equals a count made by hand from the two evaluate.jsonl files, its
p-value and interval are core/stats.py's on those counts, and a problem that changed shows both runs'
answers, verdicts and programs."""

from __future__ import annotations

import csv
import io
import json

import pytest

from logicpipe.core import stats

from ..conftest import cli, program


@pytest.fixture(scope="module")
def runs(tmp_path_factory, data_dir):
    root = tmp_path_factory.mktemp("diff")
    made = {}
    # A scores the first 60 problems, B the first 70: ten problems are B's alone.
    for name, model, limit in (("gpt4", "gpt-4", "60"), ("davinci", "text-davinci-003", "70")):
        done = cli("run", "-d", "folio", "--data-dir", str(data_dir), "--programs",
                   str(data_dir / "programs" / f"FOLIO_dev_{model}.json"), "--limit", limit, "--out", str(root / name))
        assert done.returncode == 0, done.stderr
        made[name] = root / name
    return made


def _evaluated(run):
    return {r["id"]: r for r in map(json.loads, (run / "folio" / "evaluate.jsonl").read_text().splitlines())}


def test_the_table_is_a_count_by_hand_of_the_two_evaluate_files(runs, data_dir):
    a, b = _evaluated(runs["gpt4"]), _evaluated(runs["davinci"])
    common = [i for i in a if i in b]
    by_hand = {"both_right": 0, "only_a": 0, "only_b": 0, "both_wrong": 0}
    for i in common:
        key = {(True, True): "both_right", (True, False): "only_a", (False, True): "only_b",
               (False, False): "both_wrong"}[a[i]["correct"], b[i]["correct"]]
        by_hand[key] += 1
    assert by_hand["only_a"] != by_hand["only_b"]  # the two models differ, and not evenly: A and B can't swap

    done = cli("diff", str(runs["gpt4"]), str(runs["davinci"]), "--format", "json")
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert {key: result[key] for key in by_hand} == by_hand
    assert result["paired"] == len(common) == 60
    assert result["only_in_a"] == [] and result["only_in_b"] == [i for i in b if i not in a] and len(result["only_in_b"]) == 10
    assert result["p_value"] == stats.mcnemar(by_hand["only_a"], by_hand["only_b"])
    right_a = [int(a[i]["correct"]) for i in common]
    right_b = [int(b[i]["correct"]) for i in common]
    assert result["difference"] == pytest.approx(sum(right_a) / 60 - sum(right_b) / 60)
    assert result["interval"] == list(stats.paired_difference(right_a, right_b))
    low, high = result["interval"]
    assert low <= result["difference"] <= high
    changed = {c["id"]: c for c in result["changed"]}
    assert set(changed) == {i for i in common if a[i]["correct"] != b[i]["correct"]}
    for i, c in changed.items():
        assert (c["a"]["answer"], c["b"]["answer"], c["gold"]) == (a[i]["final"], b[i]["final"], a[i]["gold"])
        assert c["a"]["correct"] != c["b"]["correct"]
    # each side carries the program its answer came from, as the released file has it, and its verdict
    for i, c in changed.items():
        assert c["a"]["program"] == program("FOLIO_dev_gpt-4.json", data_dir, i)
        assert c["b"]["program"] == program("FOLIO_dev_text-davinci-003.json", data_dir, i)
        for side in (c["a"], c["b"]):
            assert side["verdict"] in ("True", "False", "Unknown", "parse", "execution", "timeout", "no_answer")


def test_the_table_csv_and_the_api_agree(runs):
    from logicpipe import diff

    result = diff(runs["gpt4"], runs["davinci"])
    shown = cli("diff", str(runs["gpt4"]), str(runs["davinci"]))
    assert shown.returncode == 0, shown.stderr
    text = shown.stdout
    assert "60 problems scored in both runs" in text and "McNemar exact p = " in text
    assert f"{result.p_value:.3g}" in text and "95% CI" in text
    assert "10 problems scored only in B: " + ", ".join(result.only_in_b) in text
    for c in result.changed:
        assert c.id in text
    rows = list(csv.DictReader(io.StringIO(cli("diff", str(runs["gpt4"]), str(runs["davinci"]), "--format", "csv").stdout)))
    assert [r["id"] for r in rows] == [c.id for c in result.changed]
    assert {r["correct_a"] for r in rows} <= {"True", "False"}
    # the order of the runs flips the sign and swaps the discordant cells, nothing else
    back = diff(runs["davinci"], runs["gpt4"])
    assert (back.only_a, back.only_b, back.p_value) == (result.only_b, result.only_a, result.p_value)
    assert back.difference == pytest.approx(-result.difference)


def test_runs_with_nothing_in_common_are_one_line_errors(runs, tmp_path, data_dir):
    first = tmp_path / "first.txt"
    first.write_text("\n".join(list(_evaluated(runs["davinci"]))) + "\n")
    apart = tmp_path / "apart"
    done = cli("run", "-d", "folio", "--data-dir", str(data_dir), "--programs",
               str(data_dir / "programs" / "FOLIO_dev_gpt-4.json"), "--exclude-ids", str(first), "--limit", "3",
               "--out", str(apart))
    assert done.returncode == 0, done.stderr
    refused = cli("diff", str(runs["davinci"]), str(apart))
    assert refused.returncode == 2 and refused.stdout == ""
    assert refused.stderr.count("\n") == 1 and "no scored problem in common" in refused.stderr
    other = tmp_path / "other"
    done = cli("run", "-d", "prontoqa", "--data-dir", str(data_dir), "--programs",
               str(data_dir / "programs" / "ProntoQA_dev_gpt-4.json"), "--limit", "2", "--out", str(other))
    assert done.returncode == 0, done.stderr
    refused = cli("diff", str(runs["gpt4"]), str(other))
    assert refused.returncode == 2 and refused.stderr.strip() == \
        f"error: different datasets: {runs['gpt4']} is folio, {other} is prontoqa"
    bad = cli("diff", str(runs["gpt4"]), str(runs["davinci"]), "--format", "xml")
    assert bad.returncode == 2 and "--format 'xml'" in bad.stderr


def test_compare_pairs_are_holm_corrected_and_judged_at_alpha(runs, tmp_path):
    """compare's paired figures for three columns: each pair is diff's, the p-values are Holm-adjusted
    over the three (statsmodels' multipletests), and a pair is significant when its adjusted p is below
    --alpha. The third column is a copy of A's run with eight of its right answers scored wrong, so that
    one pair differs and the correction decides whether it passes 0.01."""
    import shutil

    from statsmodels.stats.multitest import multipletests

    from logicpipe import diff
    from logicpipe.report.compare import pairs, read_row

    worse = tmp_path / "worse"
    shutil.copytree(runs["gpt4"], worse)
    scored = worse / "folio" / "evaluate.jsonl"
    records = [json.loads(line) for line in scored.read_text().splitlines()]
    flipped = [r["id"] for r in records if r["correct"]][:8]
    for r in records:
        if r["id"] in flipped:
            r["correct"] = r["correct_executed"] = False
    scored.write_text("".join(json.dumps(r) + "\n" for r in records))
    rows = [read_row(name, folder / "folio") for name, folder in
            (("gpt4", runs["gpt4"]), ("davinci", runs["davinci"]), ("worse", worse))]
    raw = [diff(a.folder, b.folder).p_value for i, a in enumerate(rows) for b in rows[i + 1:]]
    expected = list(multipletests(raw, method="holm")[1])
    assert raw[1] == stats.mcnemar(8, 0) < 0.01 < expected[1]  # significant alone, not after the correction
    for alpha in (0.01, 0.05, 1.0):
        found = pairs(rows, alpha)
        assert [(p.a, p.b) for p in found] == [("gpt4", "davinci"), ("gpt4", "worse"), ("davinci", "worse")]
        assert [p.p_value for p in found] == raw
        assert [p.adjusted for p in found] == pytest.approx(expected)
        assert [p.significant for p in found] == [q < alpha for q in expected]
    assert pairs(rows, 0.05)[1].significant and not pairs(rows, 0.01)[1].significant
