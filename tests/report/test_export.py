"""`logicpipe export RUN --programs FILE`: a run whose model refined its programs is exported, then
replayed from the file with no model into a new folder, through the CLI on LogicalDeduction's real
programs; the replay must reach the original run's verdicts and answers by itself."""

import json

from logicpipe.testing import FakeOpenAI, ScriptedReplies
from tests.conftest import cli

RELEASED = "LogicalDeduction_dev_gpt-4.json"
LIMIT = 5


def by_id(path):
    return {r["id"]: r for r in (json.loads(line) for line in path.read_text().splitlines())}


def outcomes(stage_dir):
    """id -> (verdict of the round that answered, executed, predicted, final, correct)."""
    answered, scored = by_id(stage_dir / "interpret.jsonl"), by_id(stage_dir / "evaluate.jsonl")
    found = {}
    for pid, answer in answered.items():
        name = "solve.jsonl" if answer["round"] == 0 else f"solve-{answer['round']}.jsonl"
        solved = by_id(stage_dir / name)[pid]
        found[pid] = (solved["verdict"], answer["executed"], answer["predicted"], answer["final"],
                      scored[pid]["correct"])
    return found


def test_an_exported_run_replays_to_the_same_verdicts_without_the_model(data_dir, tmp_path):
    released = json.loads((data_dir / "programs" / RELEASED).read_text())[:LIMIT]
    fixed, unfixable = released[1], released[3]

    def broken(record, marker):
        lines = record["raw_logic_programs"][0].splitlines()
        return "\n".join([*lines[:-1], marker, lines[-1]])

    replies = ScriptedReplies({r["id"]: [r["raw_logic_programs"][0]] for r in released},
                              repairs={"@@@ fixable": fixed["raw_logic_programs"][0]})
    replies.programs[fixed["id"]] = [broken(fixed, "@@@ fixable")]
    replies.programs[unfixable["id"]] = [broken(unfixable, "@@@ unfixable")]  # refinement cannot repair it
    with FakeOpenAI(replies) as fake:
        done = cli("run", "-d", "logicaldeduction", "-n", str(LIMIT), "--data-dir", str(data_dir), "--out",
                   str(tmp_path / "original"), "--model", "scripted", "--base-url", fake.url, "--llm-timeout", "5",
                   "--max-rounds", "2", "--backup", "none")
        assert done.returncode == 0, done.stderr
    original = tmp_path / "original" / "logicaldeduction"
    assert by_id(original / "solve.jsonl")[fixed["id"]]["error"]["category"] == "parse"  # refinement mattered
    assert by_id(original / "interpret.jsonl")[fixed["id"]]["round"] == 1

    shared = tmp_path / "shared" / "programs.json"
    done = cli("export", str(tmp_path / "original"), "--programs", str(shared))
    assert done.returncode == 0, done.stderr
    assert f"wrote {LIMIT} programs of {LIMIT} logicaldeduction problems to {shared}" in done.stderr
    exported = {r["id"]: r["raw_logic_programs"] for r in json.loads(shared.read_text())}
    assert [p.strip() for p in exported[fixed["id"]]] == [fixed["raw_logic_programs"][0].strip()]  # the repair
    assert "@@@ unfixable" in exported[unfixable["id"]][0]  # no repair: the program that answered

    done = cli("run", "-d", "logicaldeduction", "-n", str(LIMIT), "--data-dir", str(data_dir), "--out",
               str(tmp_path / "replayed"), "--programs", str(shared), "--backup", "none")
    assert done.returncode == 0, done.stderr
    replayed = tmp_path / "replayed" / "logicaldeduction"
    assert not (replayed / "solve-1.jsonl").exists()  # the replay's programs were solved as they are
    got, expected = outcomes(replayed), outcomes(original)
    assert got == expected
    assert [executed for _, executed, *_ in expected.values()].count(False) == 1  # the unfixable one
    metrics = [json.loads((d / "metrics.json").read_text()) for d in (original, replayed)]
    assert metrics[0]["accuracy"] == metrics[1]["accuracy"]


def test_export_refuses_what_it_cannot_write_in_one_line(data_dir, tmp_path):
    done = cli("baseline", "--mode", "standard", "-d", "folio", "-n", "1", "--data-dir", str(data_dir),
               "--out", str(tmp_path / "base"), "--model", "m", "--base-url", "http://127.0.0.1:9/v1",
               "--max-retries", "0", "--llm-timeout", "1", "--max-errors", "5")
    assert done.returncode == 0, done.stderr
    baseline = str(tmp_path / "base" / "baseline-standard")
    cases = {(baseline, "p.json"): "has no programs to export (a baseline run",
             (str(tmp_path / "nowhere"), "p.json"): f"run directory {tmp_path / 'nowhere'} not found",
             (baseline, "p.jsonl"): "export writes Logic-LM's JSON format to a file"}
    for (run_dir, name), expected in cases.items():
        done = cli("export", run_dir, "--programs", str(tmp_path / name))
        assert done.returncode == 2 and done.stderr.startswith("error: ") and expected in done.stderr, done.stderr
        assert len(done.stderr.splitlines()) == 1 and not (tmp_path / name).exists()
