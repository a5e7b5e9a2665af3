"""`logicpipe compare`: ProntoQA through LP (its own formalism, the released programs), ASP and FOL (our
own programs, tests/solvers/files), one run per formalism through the scripted server, and the table
read back from each run's folder. The oracle for each row is the run's own records: metrics.json and
the solve records counted here."""

import json

from logicpipe.testing import FakeOpenAI, ScriptedReplies
from tests.conftest import cli
from tests.solvers.test_formalism import own_programs, records

IDS = ["ProntoQA_1", "ProntoQA_2", "ProntoQA_3"]


def replies(data_dir):
    """Each formalism's programs, told apart by the prompt's first line (one server for all runs); the
    ASP program of ProntoQA_3 loses a period, so it does not parse."""
    released = ScriptedReplies.from_logic_lm(data_dir / "programs" / "ProntoQA_dev_gpt-4.json")
    asp = own_programs("prontoqa", "asp")
    asp["ProntoQA_3"] = asp["ProntoQA_3"].replace("tumpus(wren).", "tumpus(wren)")
    by_formalism = {"answer set program": ScriptedReplies({k: [v] for k, v in asp.items()}),
                    "first-order logic": ScriptedReplies({k: [v] for k, v in own_programs("prontoqa", "fol").items()})}

    def reply(body):
        system = body["messages"][0]["content"]
        return next((scripted for cue, scripted in by_formalism.items() if cue in system), released)(body)

    return reply


def test_compare_runs_each_formalism_and_tables_what_each_run_recorded(data_dir, tmp_path):
    ids = tmp_path / "ids.txt"
    ids.write_text("\n".join(IDS) + "\n")
    out = tmp_path / "out"
    with FakeOpenAI(replies(data_dir)) as fake:
        done = cli("compare", "-d", "prontoqa", "--formalisms", "lp, asp,FOL", "--data-dir", str(data_dir),
                   "--out", str(out), "--model", "scripted", "--base-url", fake.url, "--ids", str(ids),
                   "--max-rounds", "0", "--backup", "none")
        assert done.returncode == 0, done.stderr
        # Run again: every run resumes from its folder (nothing asked anew) and the table is the same.
        asked = len(fake.requests)
        again = cli("compare", "-d", "prontoqa", "--formalisms", "lp,asp,fol", "--data-dir", str(data_dir),
                    "--out", str(out), "--model", "scripted", "--base-url", fake.url, "--ids", str(ids),
                    "--max-rounds", "0", "--backup", "none")
        assert again.returncode == 0, again.stderr
        assert len(fake.requests) == asked == 9
    table, paired = (out / "compare-prontoqa.md").read_text().split("\n\n")
    # each rate's figure, its 95% interval after it (checked in test_pairs_... below)
    rows = {line.split("|")[1].strip(): [cell.strip().split(" [")[0] for cell in line.split("|")[2:-1]]
            for line in table.splitlines()[2:]}
    assert list(rows) == ["lp", "asp", "fol"]
    # Our own ASP and FOL programs answer as gold; the broken ASP one neither parses nor answers.
    assert rows["asp"] == ["3", "66.7", "66.7", "100.0", "66.7"]
    assert rows["fol"] == ["3", "100.0", "100.0", "100.0", "100.0"]
    assert rows["lp"] == ["3", "100.0", "100.0", "66.7", "66.7"]  # a released gpt-4 program answers wrong
    for formalism, row in rows.items():
        stage_dir = out / formalism / "prontoqa"
        metrics = json.loads((stage_dir / "metrics.json").read_text())
        parsed = sum(r["error"] is None or r["error"]["category"] not in ("parse", "no_program", "llm")
                     for r in records(stage_dir / "solve.jsonl"))
        assert row == [str(metrics["total"]), f"{100 * parsed / 3:.1f}", f"{metrics['exe_rate']:.1f}",
                       f"{metrics['exe_acc']:.1f}", f"{metrics['accuracy']:.1f}"], formalism
        # each rate's cell: the figure, its 95% interval from metrics.json, Exe_Acc's n
        line = next(line for line in table.splitlines() if line.startswith(f"| {formalism} |"))
        cells = [cell.strip() for cell in line.split("|")[2:-1]]
        interval = "[{:.1f}, {:.1f}]"
        assert cells[2] == f"{metrics['exe_rate']:.1f} " + interval.format(*metrics["exe_rate_ci"])
        assert cells[3] == f"{metrics['exe_acc']:.1f} " + interval.format(*metrics["exe_acc_ci"]) + f" (n={metrics['executed']})"
        assert cells[4] == f"{metrics['accuracy']:.1f} " + interval.format(*metrics["accuracy_ci"])
        solvers = {r["solver"] for r in records(stage_dir / "solve.jsonl")}
        assert solvers == {formalism}
    assert "prontoqa by formalism" in done.stdout and "66.7" in done.stdout
    assert again.stdout == done.stdout
    _check_pairs(out, paired, done.stdout)


def _evaluated(stage_dir):
    return {r["id"]: r["correct"] for r in records(stage_dir / "evaluate.jsonl")}


def _check_pairs(out, paired, shown):
    """Each pair of formalisms: the 2x2 counts from the two runs' evaluate records, McNemar's p on them,
    Holm's correction over the three pairs, and the verdict at --alpha 0.05."""
    from logicpipe.core import stats

    lines = paired.strip().splitlines()[2:]
    assert [tuple(c.strip() for c in line.split("|")[1:3]) for line in lines] == [("lp", "asp"), ("lp", "fol"), ("asp", "fol")]
    expected = []
    for line in lines:
        cells = [c.strip() for c in line.split("|")[1:-1]]
        a, b = (_evaluated(out / name / "prontoqa") for name in cells[:2])
        counts = [sum(a[i] == x and b[i] == y for i in a) for x, y in ((True, True), (True, False), (False, True), (False, False))]
        assert [int(c) for c in cells[2:6]] == counts
        expected.append(stats.mcnemar(counts[1], counts[2]))
        assert cells[8] == f"{expected[-1]:.3g}"
        assert cells[6] == f"{100 * (counts[1] - counts[2]) / 3:+.1f}"
    for line, q in zip(lines, stats.holm(expected)):
        cells = [c.strip() for c in line.split("|")[1:-1]]
        assert cells[9] == f"{q:.3g}" and cells[10] == ("yes (p < 0.05)" if q < 0.05 else "no")
    assert "Holm-corrected over 3 pairs" in shown


def test_compare_refuses_a_formalism_without_a_prompt_before_any_run(data_dir, tmp_path):
    with FakeOpenAI(lambda body: "never asked") as fake:
        done = cli("compare", "-d", "folio", "--formalisms", "fol,asp", "--data-dir", str(data_dir),
                   "--out", str(tmp_path), "--model", "m", "--base-url", fake.url)
        misspelt = cli("compare", "-d", "folio", "--formalisms", "fol,aps", "--data-dir", str(data_dir),
                       "--out", str(tmp_path), "--model", "m", "--base-url", fake.url)
        assert fake.requests == []
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert done.returncode == 2 and len(lines) == 1, done.stderr
    assert lines[0] == ("error: --formalisms: no prompt for folio in asp ('folio-asp' is missing); the "
                        "formalisms with a prompt for it: lp, fol")
    assert misspelt.returncode == 2 and "unknown formalism 'aps' (did you mean 'asp'?)" in misspelt.stderr
    assert not any(tmp_path.iterdir())


def test_a_spending_cap_is_over_the_whole_compare_command(data_dir, tmp_path):
    ids = tmp_path / "ids.txt"
    ids.write_text("\n".join(IDS) + "\n")

    def compare(fake, out, *extra):
        return cli("compare", "-d", "prontoqa", "--formalisms", "lp,asp,fol", "--data-dir", str(data_dir),
                   "--out", str(out), "--model", "scripted", "--base-url", fake.url, "--ids", str(ids),
                   "--max-rounds", "0", "--backup", "none", "--llm-cache", str(out) + ".sqlite",
                   "--max-concurrency", "1", *extra)

    with FakeOpenAI(replies(data_dir)) as fake:
        free = compare(fake, tmp_path / "free")
        assert free.returncode == 0, free.stderr
        tokens = json.loads((tmp_path / "free" / "lp" / "prontoqa" / "metrics.json").read_text())["tokens"]
        lp = tokens["prompt_tokens"] + tokens["completion_tokens"]
        fake.requests.clear()
        out = tmp_path / "capped"
        # Room for LP's three requests and not much more: the cap stops the command in the next formalism.
        capped = compare(fake, out, "--max-tokens-total", str(lp + 1))
        assert capped.returncode == 4, capped.stderr
        assert f"--max-tokens-total {lp + 1} reached" in capped.stderr
        assert len(fake.requests) == 4 and json.loads((out / "spent.json").read_text())["sent"] == 4
        assert len(records(out / "asp" / "prontoqa" / "formulate.jsonl")) == 1
        assert not (out / "fol" / "prontoqa" / "formulate.jsonl").exists()
        assert not list(out.glob("*/prontoqa/spent.json"))  # one ledger for the command, not one per run
        done = compare(fake, out, "--max-tokens-total", "1000000")
        assert done.returncode == 0, done.stderr
        assert len(fake.requests) == 9  # the rest, each asked once


def test_compare_runs_each_formalism_for_each_epoch(data_dir, tmp_path):
    from collections import Counter

    ids = tmp_path / "ids.txt"
    ids.write_text("\n".join(IDS) + "\n")
    out = tmp_path / "out"
    with FakeOpenAI(replies(data_dir)) as fake:
        done = cli("compare", "-d", "prontoqa", "--formalisms", "lp,asp", "--data-dir", str(data_dir), "--out", str(out),
                   "--model", "scripted", "--base-url", fake.url, "--ids", str(ids), "--max-rounds", "0",
                   "--backup", "none", "--temperature", "0.5", "--epochs", "2")
        assert done.returncode == 0, done.stderr
    # two formalisms x three problems x two epochs, each epoch its own request (seed 2 for the second)
    assert Counter(body.get("seed") for body in fake.requests) == {None: 6, 2: 6}
    for formalism in ("lp", "asp"):
        summary = json.loads((out / formalism / "epochs-prontoqa.json").read_text())
        assert summary["epochs"] == 2 and summary["problems"] == 3
        assert summary["folders"][1] == str(out / formalism / "epoch-2" / "prontoqa")
        assert f"{formalism}: 2 epochs, mean accuracy {summary['mean_accuracy']}%" in done.stdout
