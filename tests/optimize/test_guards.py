"""What `logicpipe optimize` refuses, through the CLI against the scripted server: a second run on the
same OUT, a resume with other deciding options, an OUT or cache path of the wrong kind, no API key, an
endpoint that refuses or is down; each is one `error:` line, and nothing is written (or left behind)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from logicpipe.optimize.config import OptimizeConfig
from logicpipe.optimize.loop import optimize
from logicpipe.optimize.params import PRINCIPLES_HEADING
from logicpipe.optimize.splits import make_splits
from logicpipe.prompts import PromptSet
from logicpipe.runtime.folder import DirectoryLock
from logicpipe.testing import FakeOpenAI, Fault
from tests.optimize.conftest import GOOD
from tests.optimize.test_cli import in_process, optimize_args


def snapshot(folder: Path) -> dict[str, tuple[int, int]]:
    return {str(p.relative_to(folder)): (p.stat().st_mtime_ns, p.stat().st_size)
            for p in sorted(folder.rglob("*")) if p.is_file()}


def one_line(done) -> str:
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert done.returncode != 0 and len(lines) == 1 and lines[0].startswith("error: "), done.stderr
    return lines[0]


@pytest.fixture()
def started(scripted, data_dir, tmp_path, capsys):
    """An optimisation folder whose start was validated (step 0), and the server that answered it."""
    model = scripted(rewrites={"principles": [f"- {GOOD}"]})
    out = tmp_path / "out"
    with FakeOpenAI(model) as fake:
        done = in_process(capsys, *optimize_args(fake, data_dir, out, "--steps", "0"))
        assert done.returncode == 0, done.stderr
        yield fake, out


def test_a_second_run_on_the_same_out_is_refused_and_writes_nothing(started, data_dir, capsys):
    fake, out = started
    before, sent = snapshot(out), len(fake.requests)
    with DirectoryLock(out):  # what a running optimisation holds
        line = one_line(in_process(capsys, *optimize_args(fake, data_dir, out, "--steps", "1")))
    assert line == (f"error: {out} is in use by another logicpipe run (it holds {out / '.lock'}); "
                    "wait for it to end or use another --out")
    assert snapshot(out) == before and len(fake.requests) == sent


@pytest.mark.parametrize(("extra", "says"), [
    (["--model", "other"], "--model fake (now other)"),  # not --optimizer-model too: it only followed --model
    (["--optimizer-model", "judge"], "--optimizer-model fake (now judge)"),
    (["--seed", "3"], "--seed 0 (now 3)"),
    (["--limit-val", "6"], "--limit-val 8 (now 6)"),
    (["--unsupervised"], "--unsupervised off (now on)"),
    (["--batch-size", "2"], "--batch-size 3 (now 2)"),
])
def test_a_resume_with_other_deciding_options_is_refused_in_optimize_words(started, data_dir, capsys, extra, says):
    fake, out = started
    before, sent = snapshot(out), len(fake.requests)
    line = one_line(in_process(capsys, *optimize_args(fake, data_dir, out, "--steps", "0", *extra)))
    assert line == f"error: {out} was made with {says}; re-run with the same options to go on, or give a new --out"
    assert "--overwrite" not in line and "runs/" not in line
    assert snapshot(out) == before and len(fake.requests) == sent
    # Options that only bound or pace the run may change on a resume.
    again = in_process(capsys, *optimize_args(fake, data_dir, out, "--steps", "0", "--max-calls", "500",
                                              "--workers", "2", "--max-concurrency", "3"))
    assert again.returncode == 0, again.stderr


def test_out_or_cache_of_the_wrong_kind_is_one_line_before_any_file(data_dir, tmp_path, capsys):
    (tmp_path / "file").write_text("x")
    with FakeOpenAI(lambda body: "") as fake:
        line = one_line(in_process(capsys, *optimize_args(fake, data_dir, tmp_path / "file")))
        assert line == f"error: invalid option --out: {tmp_path / 'file'} is a file, not a folder"
        out = tmp_path / "out"
        line = one_line(in_process(capsys, *optimize_args(fake, data_dir, out, "--llm-cache",
                                                          str(tmp_path / "file" / "cache.sqlite"))))
        assert line.startswith(f"error: invalid option --llm-cache: {tmp_path / 'file'} is a file, so ")
        assert fake.requests == []
    assert not out.exists() and (tmp_path / "file").read_text() == "x"


def test_no_api_key_is_one_line_before_any_file(data_dir, tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    out = tmp_path / "out"
    line = one_line(in_process(capsys, "optimize", "-d", "prontoqa", "--data-dir", str(data_dir), "--model", "fake",
                               "--out", str(out)))
    assert line == "error: set OPENAI_API_KEY, or --base-url for a local OpenAI-compatible server"
    assert not out.exists()


@pytest.mark.parametrize("down", [False, True])
def test_an_endpoint_that_refuses_or_is_down_leaves_no_new_folder(data_dir, tmp_path, capsys, down):
    out, cache = tmp_path / "out", tmp_path / "elsewhere" / "cache.sqlite"
    with FakeOpenAI(lambda body: "") as fake:
        fake.inject(*[Fault(status=401)] * 20)
        url = "http://127.0.0.1:9/v1" if down else fake.url
        args = optimize_args(fake, data_dir, out, "--llm-cache", str(cache), "--max-retries", "0")
        done = in_process(capsys, *[url if arg == fake.url else arg for arg in args])
    line = one_line(done)
    assert done.returncode == 4 and line.startswith("error: the model failed (")
    assert ("HTTP 401" in line) != down
    assert line.endswith("check --model, --optimizer-model, --base-url and the API key, then re-run the same "
                         "command to go on (what was answered is cached)")
    assert "--max-errors" not in line
    assert not out.exists()
    assert cache.exists()  # a cache outside OUT is left: other runs may share it


def test_an_endpoint_failure_on_a_resume_keeps_the_folder(started, data_dir, capsys):
    fake, out = started
    fake.inject(*[Fault(status=401)] * 20)
    done = in_process(capsys, *optimize_args(fake, data_dir, out, "--steps", "1"))
    assert done.returncode == 4 and "HTTP 401" in done.stderr.strip().splitlines()[-1]
    assert json.loads((out / "state.json").read_text())["step"] == 0  # what the first run paid for stays


def test_the_bare_word_logic_lm_is_refused_but_a_folder_of_that_name_is_a_start_set(data_dir, tmp_path, capsys,
                                                                                    monkeypatch, scripted):
    monkeypatch.chdir(tmp_path)
    folder = tmp_path / "logic-lm"
    folder.mkdir()
    shipped = PromptSet().get("prontoqa")
    (folder / "prontoqa.txt").write_text(f"{shipped.system}\n\nMARKER-7.\n=== user ===\n{shipped.user}")
    with FakeOpenAI(scripted()) as fake:
        line = one_line(in_process(capsys, *optimize_args(fake, data_dir, tmp_path / "a", "--prompts", "logic-lm")))
        assert "Logic-LM's prompts (--prompts logic-lm) are one block of text" in line
        for spelled, out in (("./logic-lm", tmp_path / "b"), ("logic-lm/", tmp_path / "c")):
            done = in_process(capsys, *optimize_args(fake, data_dir, out, "--prompts", spelled, "--steps", "0"))
            assert done.returncode == 0, done.stderr
            start = json.loads((out / "state.json").read_text())["start_hash"]
            assert "MARKER-7." in (out / "prompts" / start / "prontoqa.txt").read_text()


@pytest.mark.parametrize(("make", "says"), [
    (lambda folder: None, "holds no template (*.txt file), so it would change nothing"),
    (lambda folder: (folder / "state.json").write_text("{}"), "its OUT/best"),
    (lambda folder: (folder / "prontoqa.txt").write_text("Translate.\n=== user ===\nQuestion: {{question}}\n"),
     "prontoqa.txt lacks {{context}}, which the stage fills in"),
    (lambda folder: (folder / "notes.txt").write_text("mine"),
     "overrides no template this run uses (it holds notes.txt); the names it could override (case matters): "
     "guide-lp.txt"),  # optimize lists its opt-*.txt templates next, run does not
    (lambda folder: (folder / "ProntoQA.txt").write_text(PromptSet().get("prontoqa").user),
     "overrides no template this run uses (it holds ProntoQA.txt)"),
])
def test_a_start_folder_that_changes_nothing_or_lacks_a_variable_is_refused(data_dir, tmp_path, capsys, make, says):
    folder = tmp_path / "prompts"
    folder.mkdir()
    make(folder)
    out = tmp_path / "out"
    with FakeOpenAI(lambda body: "") as fake:
        line = one_line(in_process(capsys, *optimize_args(fake, data_dir, out, "--prompts", str(folder))))
        assert says in line
        run = in_process(capsys, "run", "-d", "prontoqa", "--data-dir", str(data_dir), "--model", "fake",
                         "--base-url", fake.url, "--prompts", str(folder), "--out", str(out))
        assert says in one_line(run)
        assert fake.requests == []
    assert not out.exists()


def test_the_splits_note_says_what_was_used(data_dir, tmp_path):
    both = make_splits(OptimizeConfig(dataset="folio", data_dir=data_dir, model="m", val_split="train",
                                      out=tmp_path))
    assert both.carved and both.note.startswith("--train-split and --val-split are both train: train was split")
    limited = make_splits(OptimizeConfig(dataset="folio", data_dir=data_dir, model="m", limit_val=20, out=tmp_path))
    assert limited.note == (f"training on train ({len(limited.train)}), validating on dev ({limited.val_total}, "
                            "of which --limit-val keeps 20); testing on the rest of dev (96), never seen while optimising")
    carved = make_splits(OptimizeConfig(dataset="prontoqa", data_dir=data_dir, model="m", out=tmp_path))
    assert carved.note.startswith("no 'train' split: dev was split by sha256 of each id into")


def test_a_rewrite_that_repeats_the_principles_heading_has_it_once(scripted, data_dir, tmp_path):
    model = scripted(rewrites={"principles": [f"**{PRINCIPLES_HEADING}**\n- {GOOD}"]})
    with FakeOpenAI(model) as fake:
        result = optimize(OptimizeConfig(dataset="prontoqa", model="fake", base_url=fake.url, data_dir=data_dir,
                                         steps=1, batch_size=3, limit_val=8, limit_test=4, out=tmp_path / "out", llm_timeout=5, candidates=1,
                                         max_retries=1))
    accepted = result.candidates[0]
    assert accepted.status == "accepted"
    text = (result.folder / "prompts" / accepted.params_hash / "prontoqa.txt").read_text()
    assert text.count(PRINCIPLES_HEADING) == 1 and f"{PRINCIPLES_HEADING}\n- {GOOD}\n" in text
    shutil.rmtree(result.folder)


class RefusingModel(FakeOpenAI):
    """The scripted server, answering HTTP 404 (unknown model) to requests for `unknown`."""

    def __init__(self, reply, unknown: str):
        super().__init__(reply)
        self.unknown = unknown

    def _next(self, body: dict) -> Fault | None:
        fault = super()._next(body)
        return Fault(status=404) if body.get("model") == self.unknown else fault


def test_a_mistyped_optimizer_model_may_be_corrected_on_the_rerun(scripted, data_dir, tmp_path, capsys):
    model = scripted(rewrites={"principles": [f"- {GOOD}"]})
    out = tmp_path / "out"
    with RefusingModel(model, unknown="gtp-typo") as fake:
        failed = in_process(capsys, *optimize_args(fake, data_dir, out, "--optimizer-model", "gtp-typo"))
        assert failed.returncode == 4 and "HTTP 404" in failed.stderr.strip().splitlines()[-1]
        # The start was validated before the judge was asked: its report is written all the same.
        assert f"wrote {out / 'report.md'}" in failed.stdout and (out / "report.md").is_file()
        options = json.loads((out / "options.json").read_text())
        assert options["--model"] == "fake" and "--optimizer-model" not in options
        fixed = in_process(capsys, *optimize_args(fake, data_dir, out))
        assert fixed.returncode == 0, fixed.stderr
        assert json.loads((out / "state.json").read_text())["step"] == 1
        # Once its model has answered, --optimizer-model binds the folder like the other options.
        assert json.loads((out / "options.json").read_text())["--optimizer-model"] == "fake"
        again = one_line(in_process(capsys, *optimize_args(fake, data_dir, out, "--optimizer-model", "gtp-typo")))
        assert "was made with --optimizer-model fake (now gtp-typo)" in again


def test_a_run_that_got_no_reply_leaves_an_existing_out_as_it_was(data_dir, tmp_path, capsys):
    empty, kept = tmp_path / "empty", tmp_path / "kept"
    empty.mkdir()
    (kept / "prompts").mkdir(parents=True)
    (kept / "notes.txt").write_text("mine")
    with FakeOpenAI(lambda body: "") as fake:
        for out in (empty, kept):
            fake.inject(*[Fault(status=401)] * 20)
            done = in_process(capsys, *optimize_args(fake, data_dir, out, "--max-retries", "0"))
            assert done.returncode == 4 and "HTTP 401" in one_line(done)
    assert list(empty.iterdir()) == []  # no .lock, options.json, prompts/, runs/, cache or spent.json
    assert sorted(p.name for p in kept.rglob("*")) == ["notes.txt", "prompts"]
    assert (kept / "notes.txt").read_text() == "mine"
    # A new OUT whose parents were made for it goes with them.
    deep = tmp_path / "a" / "b" / "out"
    with FakeOpenAI(lambda body: "") as fake:
        fake.inject(*[Fault(status=401)] * 20)
        assert in_process(capsys, *optimize_args(fake, data_dir, deep, "--max-retries", "0")).returncode == 4
    assert not (tmp_path / "a").exists()


def test_requests_the_server_may_have_billed_keep_their_spend_record(data_dir, tmp_path, capsys):
    out = tmp_path / "out"
    with FakeOpenAI(lambda body: "") as fake:
        fake.inject(*[Fault(status=500)] * 20)  # a server error: it may have worked on the request
        done = in_process(capsys, *optimize_args(fake, data_dir, out, "--max-retries", "0", "--max-calls", "100"))
        assert done.returncode == 4, done.stderr
    assert json.loads((out / "spent.json").read_text())["sent"] > 0
    assert not (out / "state.json").exists()


def test_a_dangling_link_as_out_is_one_line_before_any_file(data_dir, tmp_path, capsys):
    link = tmp_path / "link"
    link.symlink_to(tmp_path / "gone")
    says = f"error: invalid option --out: {link} is a link to {tmp_path / 'gone'}, which does not exist"
    with FakeOpenAI(lambda body: "") as fake:
        for out in (link, link / "sub"):
            assert one_line(in_process(capsys, *optimize_args(fake, data_dir, out))) == says
            run = in_process(capsys, "run", "-d", "prontoqa", "--data-dir", str(data_dir), "--model", "fake",
                             "--base-url", fake.url, "--out", str(out))
            assert one_line(run) == says
        assert fake.requests == []
    assert link.is_symlink() and not (tmp_path / "gone").exists()


def test_a_resume_after_a_logicpipe_upgrade_is_not_refused(started, data_dir, capsys):
    fake, out = started
    options = json.loads((out / "options.json").read_text())
    (out / "options.json").write_text(json.dumps({**options, "logicpipe": "0.0.1"}))  # made by an older version
    done = in_process(capsys, *optimize_args(fake, data_dir, out, "--steps", "0"))
    assert done.returncode == 0, done.stderr
