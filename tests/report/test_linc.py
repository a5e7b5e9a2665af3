"""`reproduce --paper linc` against LINC's own figures: its per-sample verdicts (*_generations_prc.json) and
its majority metric (Counter.most_common over the samples that are not Error, eval/base.py), on the
released files read through $LOGICPIPE_LINC (skipped where they are absent)."""

from __future__ import annotations

import json
import os
import random
import shutil
from collections import Counter
from pathlib import Path

import pytest

from logicpipe.core.records import SolveRecord
from logicpipe.data.linc import folio_ids, releases
from logicpipe.data.loaders import load_problems
from logicpipe.data.registry import get_dataset
from logicpipe.stages.solve import vote
from tests.conftest import cli

LINC = Path(os.environ.get("LOGICPIPE_LINC", Path(__file__).resolve().parents[3] / "shared" / "linc"))
needs_linc = pytest.mark.skipif(not (LINC / "outputs").is_dir(), reason="LINC's released files not found "
                                "(set LOGICPIPE_LINC)")
_LETTER = {"True": "A", "False": "B", "Uncertain": "C"}


def _linc_majority(verdicts: list[list[str]], references: list[str]) -> float:
    """LINC's OWAFOLTask.metric, as LINC wrote it."""
    correct = 0
    for samples, reference in zip(verdicts, references):
        kept = [v for v in samples if v != "Error"]
        if kept and Counter(kept).most_common(1)[0][0] == reference:
            correct += 1
    return correct / len(references)


@needs_linc
def test_folio_problems_map_one_to_one_onto_logic_lm_ids_with_the_same_gold(data_dir):
    release = next(r for r in releases(LINC) if r.dataset == "folio")
    dev = {p.id: p for p in load_problems(get_dataset("folio"), "dev", data_dir)}
    ids = folio_ids(release.generations(), list(dev.values()))
    assert len(ids) == len(set(ids)) == len(release.references())
    # LINC's gold labels are an independent check of the text match: each agrees with the mapped problem's
    assert [dev[i].answer for i in ids] == [_LETTER[r] for r in release.references()]


@needs_linc
def test_the_mapping_orders_problems_as_lincs_shuffle_does(data_dir):
    """LINC's order is Hugging Face datasets' shuffle(seed=7) of the problems it kept (numpy's
    default_rng(7).permutation): the text mapping must give exactly that order."""
    numpy = pytest.importorskip("numpy")
    release = next(r for r in releases(LINC) if r.dataset == "folio")
    ids = folio_ids(release.generations(), load_problems(get_dataset("folio"), "dev", data_dir))
    kept = sorted(ids, key=lambda i: int(i.rsplit("_", 1)[1]))
    assert [kept[k] for k in numpy.random.default_rng(7).permutation(len(kept))] == ids


@needs_linc
@pytest.mark.slow
def test_lincs_folio_selection_is_what_our_parser_proves_of_the_converted_gold(data_dir):
    """LINC kept a FOLIO validation problem when it had one FOL annotation per premise and its gold FOL,
    through convert_to_nltk_rep, proved the label; our port of both, run by the FOL solver, keeps
    exactly the problems the text mapping finds (about 20 s)."""
    from logicpipe.data.logicbench import DATASETS_ENV
    from logicpipe.solvers.base import Limits
    from logicpipe.solvers.fol import FOLSolver
    from logicpipe.solvers.nltk_syntax import convert_annotation

    folder = Path(os.environ.get(DATASETS_ENV, LINC.parent / "datasets")) / "folio-v0.0"
    if not folder.is_dir():
        pytest.skip("FOLIO v0.0 not found (set LOGICPIPE_DATASETS)")
    rows = [json.loads(line) for line in (folder / "folio-validation.jsonl").read_text().splitlines()]
    solver, kept = FOLSolver(), set()
    for index, row in enumerate(rows):
        if len(row["premises"]) != len(row["premises-FOL"]):
            continue
        text = "".join(f"FOL:\t{convert_annotation(f)}\n" for f in [*row["premises-FOL"], row["conclusion-FOL"]])
        try:
            verdict = solver.execute(solver.parse(text), Limits(seconds=10)).verdict
        except Exception:  # noqa: BLE001 - LINC drops a problem whose gold fails in any way
            continue
        if {"True": "True", "False": "False", "Unknown": "Uncertain"}.get(verdict or "") == row["label"]:
            kept.add(f"FOLIO_dev_{index}")
    release = next(r for r in releases(LINC) if r.dataset == "folio")
    assert kept == set(folio_ids(release.generations(), load_problems(get_dataset("folio"), "dev", data_dir)))


@needs_linc
def test_replay_gives_lincs_accuracy_and_its_per_sample_verdicts(tmp_path, data_dir):
    # the first 25 problems of each released file, laid out as LINC's repository
    part = tmp_path / "linc" / "outputs"
    part.mkdir(parents=True)
    for path in (LINC / "outputs").glob("*"):
        value = json.loads(path.read_text())
        (part / path.name).write_text(json.dumps(value[:25] if isinstance(value, list) else value))
    out = tmp_path / "results"
    done = cli("reproduce", "--paper", "linc", "-o", str(out), "-w", "2",
               env={"LOGICPIPE_LINC": str(part.parent), "LOGICPIPE_DATA": str(data_dir)})
    assert done.returncode == 0, done.stderr
    rows = json.loads((out / "linc.json").read_text())
    assert {row["dataset"] for row in rows} == {"folio", "proofwriter"}
    for row in rows:
        stem = LINC / "outputs" / row["file"]
        verdicts = json.loads(Path(f"{stem}_generations_prc.json").read_text())[:25]
        references = json.loads(Path(f"{stem}_references.json").read_text())[:25]
        assert row["problems"] == 25 and row["samples"] == sum(map(len, verdicts))
        assert abs(row["accuracy"] - _linc_majority(verdicts, references)) <= 1 / 25 + 1e-9
        assert row["sample_agreement"] >= 0.98
    differences = json.loads((out / "linc-differences.json").read_text())
    assert sum(row["differing_samples"] for row in rows) == len(differences)
    assert all(d["reason"] and d["logicpipe"] != d["linc"] for d in differences)
    # a normal run folder: formulate and solve records, one per problem, K samples each
    run = out / "replay" / "linc" / rows[0]["file"]
    solves = [json.loads(line) for folder in run.iterdir() if (folder / "solve.jsonl").exists()
              for line in (folder / "solve.jsonl").read_text().splitlines()]
    assert len(solves) == 25 and all(len(s["explanation"]["votes"]) == 10 for s in solves if s.get("explanation"))
    _logic_lm_beside_linc(out, data_dir)
    shutil.rmtree(out)


def _logic_lm_beside_linc(out: Path, data_dir: Path) -> None:
    """The FOLIO replay is a run over FOLIO/Logic-LM ids: Logic-LM's released gpt-4 programs replayed on
    the same ids make the second run, and `logicpipe diff` pairs them problem by problem."""
    folio = next(folder for folder in (out / "replay" / "linc").glob("*/*") if (folder / "solve.jsonl").exists()
                 and json.loads((folder / "run.json").read_text()).get("dataset") == "folio")
    ids = [json.loads(line)["id"] for line in (folio / "evaluate.jsonl").read_text().splitlines()]
    assert len(ids) == 25 and all(i.startswith("FOLIO_dev_") for i in ids)
    (out / "ids.txt").write_text("\n".join(ids) + "\n")
    done = cli("run", "-d", "folio", "--data-dir", str(data_dir), "--ids", str(out / "ids.txt"), "--programs",
               str(data_dir / "programs" / "FOLIO_dev_gpt-4.json"), "--out", str(out / "logic-lm"), "-w", "2")
    assert done.returncode == 0, done.stderr
    paired = cli("diff", str(out / "logic-lm" / "folio"), str(folio), "--format", "json")
    assert paired.returncode == 0, paired.stderr
    table = json.loads(paired.stdout)
    assert sum(table[k] for k in ("both_right", "only_a", "only_b", "both_wrong")) == 25
    linc = {json.loads(line)["id"]: json.loads(line)["correct"] for line in (folio / "evaluate.jsonl").read_text().splitlines()}
    assert table["only_b"] + table["both_right"] == sum(linc.values())


def test_the_vote_is_lincs_counter_most_common_over_samples_that_gave_a_verdict():
    rng = random.Random(7)
    for _ in range(300):
        verdicts = [rng.choice(["True", "False", "Unknown", None]) for _ in range(rng.randint(2, 10))]
        records = [SolveRecord(id="p", dataset="d", solver="fol", verdict=v) for v in verdicts]
        kept = [v for v in verdicts if v is not None]
        expected = Counter(kept).most_common(1)[0][0] if kept else None
        assert vote(records).verdict == expected


def test_a_jsonl_line_may_hold_k_samples(tmp_path):
    from logicpipe.core.errors import DataError
    from logicpipe.data.program_files import index_written

    path = tmp_path / "programs.jsonl"
    path.write_text(json.dumps({"id": "a", "programs": ["FOL: P(x)", "", "FOL: Q(x)"]}) + "\n"
                    + json.dumps({"id": "b", "program": "FOL: R(x)"}) + "\n")
    index = index_written(path)
    assert index.samples(["a", "b"]) == {"a": ["FOL: P(x)", "", "FOL: Q(x)"], "b": ["FOL: R(x)"]}
    assert index.texts(["a"]) == {"a": "FOL: P(x)"}
    path.write_text(json.dumps({"id": "a", "programs": "FOL: P(x)"}) + "\n")
    with pytest.raises(DataError, match="non-empty list"):
        index_written(path)
