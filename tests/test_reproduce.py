import json
from pathlib import Path

from logicpipe.reproduce import paper, reproduce

FLOORS = json.loads((Path(__file__).parent / "golden" / "gpt4_replay_floors.json").read_text())


def test_gpt4_replay_does_not_regress_and_tables_are_written(data_dir, tmp_path):
    result = reproduce(tmp_path, data_dir, workers=2, models=("gpt-4",))
    rows = {r["dataset"]: r for r in result["rows"]}
    assert set(rows) == {k for k in FLOORS if not k.startswith("_")}
    for dataset, floor in FLOORS.items():
        if dataset.startswith("_"):
            continue
        assert rows[dataset]["exe_rate"] >= floor["exe_rate"], dataset
        assert rows[dataset]["exe_acc"] >= floor["exe_acc"], dataset
    table = json.loads((tmp_path / "table3.json").read_text())
    folio = next(r for r in table if r["dataset"] == "folio")
    assert folio["paper_exe_rate"] == paper()["table3"]["gpt-4"]["folio"]["exe_rate"]
    assert folio["diff_exe_rate"] == round(folio["exe_rate"] - folio["paper_exe_rate"], 2)
    assert "| folio | gpt-4 |" in (tmp_path / "table3.md").read_text()
    assert (tmp_path / "table2.csv").read_text().count("not run") >= 10
    assert (tmp_path / "accuracy.png").read_bytes()[:4] == b"\x89PNG"


def test_table2_baselines_come_from_a_configured_model(data_dir, tmp_path):
    from logicpipe.config import RunConfig
    from logicpipe.testing import FakeOpenAI, ScriptedReplies

    answers = {}
    for name in ("FOLIO", "LogicalDeduction", "ProntoQA", "ProofWriter", "AR-LSAT"):
        for problem in json.loads((data_dir / "data" / name / "dev.json").read_text())[:4]:
            answers[problem["id"]] = problem["answer"]
    with FakeOpenAI(ScriptedReplies({}, answers=answers)) as fake:
        llm = RunConfig(dataset="folio", model="gpt-4", base_url=fake.url, max_concurrency=4)
        result = reproduce(tmp_path, data_dir, workers=2, models=("gpt-4",), llm=llm, limit=4)
        assert len(fake.requests) == 5 * 2 * 4
    assert set(result["baselines"].values()) == {100.0}
    table = {r["dataset"]: r for r in json.loads((tmp_path / "table2.json").read_text())}
    assert table["folio"]["standard"] == 100.0 and table["folio"]["paper_standard"] == 69.11
    assert table["folio"]["diff_cot"] == round(100.0 - 70.58, 2)
