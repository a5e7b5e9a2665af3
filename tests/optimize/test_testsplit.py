"""The test part (issue 26): a third part of the data that neither the minibatches nor acceptance see,
cut deterministically and recorded; the start and best prompt sets scored on it at the end of every run
(finished, stopped by the budget, or Ctrl-C), in report.json and report.md; and `logicpipe run --ids`
reproducing the best prompt set's test score from the command the report gives."""

from __future__ import annotations

import json
import shlex
import signal
import subprocess
import sys
import threading

from logicpipe.data import load_problems
from logicpipe.data.registry import get_dataset
from logicpipe.optimize.config import OptimizeConfig
from logicpipe.optimize.splits import make_splits
from logicpipe.stages import RunConfig, problems_for
from logicpipe.testing import FakeOpenAI
from tests.conftest import ROOT, ctrl_c_default
from tests.optimize.conftest import GOOD
from tests.optimize.test_cli import in_process, optimize_args


def test_three_parts_never_overlap_and_the_cut_is_the_same_every_time(data_dir, tmp_path):
    dev = [p.id for p in load_problems(get_dataset("prontoqa"), "dev", data_dir)]
    cut = make_splits(OptimizeConfig(dataset="prontoqa", data_dir=data_dir, model="m", out=tmp_path))
    parts = [set(cut.train), set(cut.val), set(cut.test)]
    assert sum(map(len, parts)) == len(dev) and set().union(*parts) == set(dev)
    assert not (parts[0] & parts[1] or parts[0] & parts[2] or parts[1] & parts[2])
    # About 40/30/30 of ProntoQA's 500 problems, by hash: far from any of them by chance alone.
    assert [round(len(p) / len(dev), 1) for p in parts] == [0.4, 0.3, 0.3]
    again = make_splits(OptimizeConfig(dataset="prontoqa", data_dir=data_dir, model="m", out=tmp_path, seed=7))
    assert (again.train, again.val, again.test) == (cut.train, cut.val, cut.test)
    assert f"testing on the rest of dev ({len(cut.test)}), never seen while optimising" in cut.note
    # With a train split, the validation split is halved into validation and test.
    folio = make_splits(OptimizeConfig(dataset="folio", data_dir=data_dir, model="m", out=tmp_path))
    folio_dev = {p.id for p in load_problems(get_dataset("folio"), "dev", data_dir)}
    assert folio.train_split == "train" and set(folio.val) | set(folio.test) == folio_dev
    assert not set(folio.val) & set(folio.test)
    # A test split of the dataset's own is used whole, and validation keeps all of its split.
    own = make_splits(OptimizeConfig(dataset="proofwriter", data_dir=data_dir, model="m", out=tmp_path,
                                     test_split="test", limit_test=5, limit_val=5))
    assert own.test_split == "test" and len(own.test) == 5 and own.test_total > 5
    assert own.val_total == len(load_problems(get_dataset("proofwriter"), "dev", data_dir))
    # The cut is written where `run --ids` reads it.
    paths = cut.write(tmp_path)
    assert paths["test"].read_text().split() == cut.test and paths["train"].read_text().split() == cut.train


def test_ids_and_exclude_ids_choose_the_problems(data_dir, tmp_path, capsys):
    chosen = RunConfig(dataset="prontoqa", data_dir=data_dir, exclude_ids=["ProntoQA_1", "ProntoQA_3"], limit=3)
    assert [p.id for p in problems_for(chosen)] == ["ProntoQA_2", "ProntoQA_4", "ProntoQA_5"]
    missing = in_process(capsys, "run", "-d", "prontoqa", "--data-dir", str(data_dir), "--model", "m",
                         "--base-url", "http://127.0.0.1:9/v1", "--ids", str(tmp_path / "nosuch.txt"),
                         "--out", str(tmp_path / "out"))
    assert missing.returncode == 2 and missing.stderr.startswith("error: --ids ") and "cannot read it" in missing.stderr
    (tmp_path / "bad.txt").write_text("ProntoQA_1\nNoSuchId\n")
    unknown = in_process(capsys, "run", "-d", "prontoqa", "--data-dir", str(data_dir), "--model", "m",
                         "--base-url", "http://127.0.0.1:9/v1", "--exclude-ids", str(tmp_path / "bad.txt"),
                         "--out", str(tmp_path / "out"))
    assert unknown.returncode == 2 and "no problem 'NoSuchId' in prontoqa/dev (--exclude-ids)" in unknown.stderr
    assert not (tmp_path / "out").exists()


def test_the_report_scores_start_and_best_on_the_test_part_and_run_ids_reproduces_it(scripted, data_dir, tmp_path,
                                                                                      capsys):
    model = scripted(rewrites={"principles": [f"- {GOOD}"]})
    out = tmp_path / "out"
    with FakeOpenAI(model) as fake:
        done = in_process(capsys, *optimize_args(fake, data_dir, out, "--limit-test", "10"))
        assert done.returncode == 0, done.stderr
        test_ids = (out / "splits" / "test.txt").read_text().split()
        val_ids = set((out / "splits" / "val.txt").read_text().split())
        train_ids = set((out / "splits" / "train.txt").read_text().split())
        assert len(test_ids) == 10 and not set(test_ids) & (val_ids | train_ids)
        # Nothing but the final scoring ever ran a test problem: no loss, gradient or rewrite names one.
        seen = [r for r in fake.requests if r["_logicpipe"]["problem"] in test_ids]
        assert seen and {r["_logicpipe"]["purpose"] for r in seen} == {"formulate"}
        assert all(r["_logicpipe"]["problem"] not in test_ids for r in fake.requests
                   if r["_logicpipe"]["purpose"] in ("loss", "gradient", "optimize"))
    report = json.loads((out / "report.json").read_text())
    lucky = sum(model.lucky(pid) for pid in test_ids) / len(test_ids)
    # The scripted model gets every problem right once the principle is learnt, and only the lucky ones before.
    assert report["test_problems"] == 10 and report["test_split"] == "dev"
    assert report["test_start"] == lucky and report["test_best"] == 1.0 and report["stopped"] is None
    paired = report["test_paired"]
    assert paired["n"] == 10 and paired["mean"] == 1.0 - lucky and paired["losses"] == 0
    low, high = report["test_interval"]
    assert low < paired["mean"] < high
    markdown = (out / "report.md").read_text()
    assert "## Test" in markdown and f"| best ({report['best_hash']}) | 1.000 |" in markdown
    command = report["command"]
    assert command in markdown and "DATASET" not in markdown and "MODEL" not in markdown
    assert f"--model fake --base-url {fake.url}" in command and f"--ids {out}/splits/test.txt" in command
    # The command, run as it is given but with a fresh reply cache, so the model answers again.
    words = shlex.split(command)
    assert words[:2] == ["logicpipe", "run"]
    words[words.index("--llm-cache") + 1] = str(tmp_path / "fresh-cache.sqlite")
    words[words.index("--out") + 1] = str(tmp_path / "again")
    with FakeOpenAI(model) as fake:
        # The same scripted model on a new port: point the command at it.
        words[words.index("--base-url") + 1] = fake.url
        again = in_process(capsys, *words[1:])
        assert again.returncode == 0, again.stderr
        formulate = [r for r in fake.requests if r["_logicpipe"]["purpose"] == "formulate"]
        assert sorted(r["_logicpipe"]["problem"] for r in formulate) == sorted(test_ids)
    metrics = json.loads((tmp_path / "again" / "prontoqa" / "metrics.json").read_text())
    assert metrics["accuracy"] / 100 == report["test_best"]


class _Held:
    """The scripted model, holding step 2's rewrite request until the test has pressed Ctrl-C."""

    def __init__(self, model):
        self.model = model
        self.reached, self.release = threading.Event(), threading.Event()

    def __call__(self, body: dict) -> str:
        if body["_logicpipe"]["purpose"] == "optimize" and "training batch of step 2" in json.dumps(body["messages"]):
            self.reached.set()
            self.release.wait(60)
        return self.model(body)


def test_ctrl_c_scores_the_test_part_and_writes_the_report(scripted, data_dir, tmp_path):
    held = _Held(scripted(rewrites={"principles": [f"- {GOOD}"]}))
    out = tmp_path / "out"
    with FakeOpenAI(held) as fake:
        process = subprocess.Popen([sys.executable, "-m", "logicpipe",
                                    *optimize_args(fake, data_dir, out, "--steps", "3")],
                                   cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                   preexec_fn=ctrl_c_default)
        try:
            assert held.reached.wait(120), "step 2 never asked for its rewrite"
            process.send_signal(signal.SIGINT)
            threading.Timer(0.5, held.release.set).start()
            stdout, stderr = process.communicate(timeout=120)
        finally:
            held.release.set()
            if process.poll() is None:
                process.kill()
    assert process.returncode == 130, stderr
    assert "interrupted: scoring the start and best prompt sets on the 4 test problems" in stderr
    report = json.loads((out / "report.json").read_text())
    assert report["stopped"] == "interrupted (Ctrl-C)" and report["steps_done"] == 1
    assert report["test_problems"] == 4 and report["test_best"] == 1.0 and report["test_start"] is not None
    assert report["test_error"] is None and report["test_interval"] is not None
    assert "## Test" in (out / "report.md").read_text() and f"wrote {out / 'report.md'}" in stdout


def test_a_run_resumed_with_other_excluded_ids_is_refused(data_dir, tmp_path, capsys):
    programs = str(data_dir / "programs" / "ProntoQA_dev_gpt-4.json")
    (tmp_path / "a.txt").write_text("ProntoQA_1\n")
    (tmp_path / "b.txt").write_text("ProntoQA_2\n")
    base = ["run", "-d", "prontoqa", "--data-dir", str(data_dir), "--programs", programs, "--limit", "2",
            "--max-rounds", "0", "--out", str(tmp_path / "out")]
    first = in_process(capsys, *base, "--exclude-ids", str(tmp_path / "a.txt"))
    assert first.returncode == 0, first.stderr
    evaluated = (tmp_path / "out" / "prontoqa" / "evaluate.jsonl").read_text().splitlines()
    assert [json.loads(line)["id"] for line in evaluated] == ["ProntoQA_2", "ProntoQA_3"]
    again = in_process(capsys, *base, "--exclude-ids", str(tmp_path / "b.txt"))
    assert again.returncode == 2 and "exclude_ids" in again.stderr and "--overwrite" in again.stderr


def test_the_docs_recipe_for_scoring_the_result_on_other_problems(data_dir, tmp_path, capsys):
    """docs/optimize.md: trained on `train`, a run of `dev` leaves out OUT/splits/val.txt (the training ids
    are not dev's, and --exclude-ids refuses them); trained on a part of the val split, train + val."""
    page = (ROOT / "docs" / "optimize.md").read_text(encoding="utf-8")
    assert "--exclude-ids OUT/splits/val.txt" in page and "cat OUT/splits/train.txt OUT/splits/val.txt" in page
    out = tmp_path / "opt"
    cut = make_splits(OptimizeConfig(dataset="proofwriter", data_dir=data_dir, model="m", out=out))
    assert cut.train_split == "train"
    paths = cut.write(out)
    seen = tmp_path / "seen.txt"
    seen.write_text(paths["train"].read_text() + paths["val"].read_text())
    base = ["run", "-d", "proofwriter", "--split", "dev", "--data-dir", str(data_dir), "--programs",
            str(data_dir / "programs" / "ProofWriter_dev_gpt-4.json"), "--limit", "5", "--max-rounds", "0"]
    both = in_process(capsys, *base, "--exclude-ids", str(seen), "--out", str(tmp_path / "both"))
    assert both.returncode == 2 and "in proofwriter/dev (--exclude-ids)" in both.stderr
    val = in_process(capsys, *base, "--exclude-ids", str(paths["val"]), "--out", str(tmp_path / "val"))
    assert val.returncode == 0, val.stderr
    evaluated = (tmp_path / "val" / "proofwriter" / "evaluate.jsonl").read_text().splitlines()
    scored = [json.loads(line)["id"] for line in evaluated]
    assert len(scored) == 5 and not set(scored) & set(cut.val)
    # Carved from one split, train and val are both that split's ids: the `cat` recipe runs.
    carved = make_splits(OptimizeConfig(dataset="proofwriter", data_dir=data_dir, model="m",
                                        out=tmp_path / "carved", train_split="dev"))
    assert carved.carved
    parts = carved.write(tmp_path / "carved")
    seen.write_text(parts["train"].read_text() + parts["val"].read_text())
    both = in_process(capsys, *base, "--exclude-ids", str(seen), "--out", str(tmp_path / "carved-run"))
    assert both.returncode == 0, both.stderr
