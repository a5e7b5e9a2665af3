"""Every shell block of README.md and docs/*.md, pasted into a fresh clone: a page's blocks run in order
in one bash session (as a reader pastes them into one shell), with the clone's .venv activated, no
LOGICPIPE_DATA set and nothing to download, and Logic-LM's data at ../shared/logic-lm as on the
project's machines. A block marked `<!-- not run: why -->` (a model key, a GPU, the network, minutes of
work) is checked instead: bash syntax, its make targets, its scripts and their options (its
`logicpipe` options are checked by test_commands.py, with every other block's). One test per page, so
pytest-xdist spreads the pages over its workers."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
from functools import cache
from pathlib import Path

import pytest

from .blocks import ROOT, Block, doc_pages, page_blocks
from .test_quickstart import fresh_clone, lend_venv, newcomer_env

PAGE_TIMEOUT = 240
# Pages whose blocks run under `make test-all` only (-m slow): each is a full-dataset run whose commands
# other tests drive on the same data in `make test`, named here.
SLOW_PAGES = {
    "docs/datasets.md": "three runs over all 204 FOLIO dev problems, ~40 s (one gpt-4 program runs to Prover9's "
                        "limit); tests/report/test_gold_reference.py runs the gold replay, the audit and a gpt-4 "
                        "run held against the gold verdicts",
}


def blocks(page: Path) -> list[Block]:
    return page_blocks(page)


def all_blocks() -> list[Block]:
    return [block for page in doc_pages() for block in blocks(page)]


def runnable_pages() -> list[str]:
    return [page.relative_to(ROOT).as_posix() for page in doc_pages()
            if any(block.why_not_run is None for block in blocks(page))]


def page_script(runnable: list[Block]) -> str:
    # A server a page starts in the background ends with the page, also when a later block fails (it
    # would hold the output pipes open until the page's timeout).
    parts = ["set -eo pipefail", "trap 'kill $(jobs -p) 2>/dev/null || true' EXIT", "source .venv/bin/activate"]
    for block in runnable:
        parts += [f"echo '::block {block.number}::' >&2", block.script()]
    parts.append("echo '::done::' >&2")
    return "\n".join(parts) + "\n"


def lend(clone: Path, data_dir: Path) -> None:
    """This checkout's .venv and the data at ../shared: Logic-LM's, and the other datasets where this
    checkout has them (docs/datasets.md's blocks read them from there)."""
    lend_venv(clone)
    shared = clone.parent / "shared"
    shared.mkdir(exist_ok=True)
    (shared / "logic-lm").symlink_to(data_dir)
    datasets = Path(os.environ.get("LOGICPIPE_DATASETS") or ROOT.parent / "shared" / "datasets")
    if (datasets / "folio-v0.0").is_dir():
        (shared / "datasets").symlink_to(datasets.resolve())


def run_page(clone: Path, runnable: list[Block], env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", "-c", page_script(runnable)], cwd=clone, env=env, capture_output=True,
                          text=True, timeout=PAGE_TIMEOUT, stdin=subprocess.DEVNULL)


def failed_block(done: subprocess.CompletedProcess, runnable: list[Block]) -> str:
    started = re.findall(r"::block (\d+)::", done.stderr)
    number = int(started[-1]) if started else 0
    block = next((b for b in runnable if b.number == number), None)
    where = f"{block.page} block {block.number} ({block.first_line!r})" if block else "before the first block"
    return (f"{where} exits {done.returncode}\nstdout:\n{done.stdout[-3000:]}\nstderr:\n{done.stderr[-3000:]}")


def page_params() -> list:
    return [pytest.param(page, marks=pytest.mark.slow) if page in SLOW_PAGES else page for page in runnable_pages()]


@pytest.mark.parametrize("page", page_params())
def test_a_pages_blocks_run_in_order_in_a_fresh_clone(page, data_dir, tmp_path):
    runnable = [block for block in blocks(ROOT / page) if block.why_not_run is None]
    clone = fresh_clone(tmp_path)
    lend(clone, data_dir)
    env = newcomer_env(tmp_path)
    done = run_page(clone, runnable, env)
    assert done.returncode == 0 and "::done::" in done.stderr, failed_block(done, runnable)


def test_the_runner_names_the_block_that_fails(tmp_path):
    # The page test above must be able to fail, and say where: a block that exits non-zero stops the page.
    page = tmp_path / "page.md"
    page.write_text("```sh\ntrue\n```\n\n```sh\nfalse\necho never\n```\n\n<!-- not run: a model key -->\n"
                    "```sh\nexit 3\n```\n")
    found = page_blocks(page, root=tmp_path)
    assert [b.why_not_run for b in found] == [None, None, "a model key"]
    (tmp_path / ".venv" / "bin").mkdir(parents=True)
    (tmp_path / ".venv" / "bin" / "activate").write_text("")
    runnable = [b for b in found if b.why_not_run is None]
    done = subprocess.run(["bash", "-c", page_script(runnable)], cwd=tmp_path, capture_output=True, text=True)
    assert done.returncode == 1 and "never" not in done.stdout and "::done::" not in done.stderr
    assert failed_block(done, runnable).startswith("page.md block 2 ('false') exits 1")


@pytest.mark.parametrize("body,fails", [
    ("$ false\nerror: it failed", False), ("$ true\nerror: it failed", True),  # a transcript showing an error
    ("$ true\nit worked", False), ("$ false\nit worked", True),
    ("false   # exit status 1: shown failing", False), ("true   # exit status 1: shown failing", True),
    ("(exit 2)   # exit status 1", True),
])
def test_a_block_fails_unless_it_ends_as_the_page_shows(tmp_path, body, fails):
    page = tmp_path / "page.md"
    page.write_text(f"```\n{body}\n```\n" if body.startswith("$") else f"```sh\n{body}\n```\n")
    (tmp_path / ".venv" / "bin").mkdir(parents=True)
    (tmp_path / ".venv" / "bin" / "activate").write_text("")
    done = subprocess.run(["bash", "-c", page_script(page_blocks(page, root=tmp_path))], cwd=tmp_path,
                          capture_output=True, text=True)
    assert (done.returncode != 0) == fails, (page_script(page_blocks(page, root=tmp_path)), done.stderr)


# The blocks that are not run.

def not_run() -> list[Block]:
    return [block for block in all_blocks() if block.why_not_run is not None]


@cache
def make_targets() -> set[str]:
    rules = re.findall(r"^([A-Za-z][\w -]*?)\s*:(?!=)", (ROOT / "Makefile").read_text(), re.M)
    return {name for rule in rules for name in rule.split()}


@cache
def script_options(script: str) -> str:
    done = subprocess.run([str(ROOT / ".venv" / "bin" / "python"), script, "--help"], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, f"{script} --help: {done.stderr[-2000:]}"
    return done.stdout


def words_of(script: str) -> list[list[str]]:
    """Each command line of a script as words (continuations joined, comments dropped)."""
    lines = re.sub(r"\\\n\s*", " ", script).splitlines()
    found = []
    for line in lines:
        try:
            words = shlex.split(line, comments=True)
        except ValueError:
            continue
        if words:
            found.append(words)
    return found


@pytest.mark.parametrize("block", not_run(), ids=lambda b: f"{b.page}#{b.number}")
def test_a_block_that_is_not_run_is_still_right(block):
    assert block.why_not_run.strip(), "say why the block is not run"
    syntax = subprocess.run(["bash", "-n"], input=block.script(), capture_output=True, text=True)
    assert syntax.returncode == 0, f"{block.page} block {block.number}: {syntax.stderr}"
    for words in words_of(block.script()):
        if words[0] == "make":
            targets = [w for w in words[1:] if not w.startswith("-") and "=" not in w]
            assert set(targets) <= make_targets(), f"{block.page} block {block.number}: no make target in {words}"
        if len(words) > 1 and words[0].endswith("python") and words[1].startswith("scripts/"):
            assert (ROOT / words[1]).exists(), f"{block.page} block {block.number}: no {words[1]}"
            shown = script_options(words[1])
            for word in words[2:]:
                if word.startswith("--"):
                    assert word.split("=")[0] in shown, f"{block.page} block {block.number}: {words[1]} has no {word}"


def test_the_pages_have_blocks_that_run_and_say_why_the_others_do_not():
    found = all_blocks()
    assert len(found) >= 30
    runnable = [b for b in found if b.why_not_run is None]
    assert len(runnable) >= len(found) // 3, [f"{b.page}#{b.number}" for b in runnable]
    assert {"README.md", "docs/pipeline.md", "docs/viewer.md", "docs/reproduce.md"} <= set(runnable_pages())
    assert set(SLOW_PAGES) <= set(runnable_pages())  # a page left slow is still one the test runs


def background_logs_reused(script: str) -> list[str]:
    """Files a background command writes that the page wrote before it. A reader's `until grep -q serving
    LOG` then finds the earlier server's line before the new one truncates LOG, and the next `grep` reads
    an empty file (CI hit this: docs/kb.md's batch dry run reused its first dry run's serve.log)."""
    written: set[str] = set()
    reused = []
    for line in re.sub(r"\\\n\s*", " ", script).splitlines():
        targets = re.findall(r"(?<![0-9&])>\s*([\w./-]+)", line.split("#")[0])
        if line.rstrip().endswith("&"):
            reused += [target for target in targets if target in written]
        written.update(targets)
    return reused


@pytest.mark.parametrize("page", runnable_pages())
def test_a_background_server_writes_a_log_of_its_own(page):
    script = "\n".join(block.script() for block in blocks(ROOT / page) if block.why_not_run is None)
    assert background_logs_reused(script) == [], f"{page}: a background command reuses an earlier log"


def test_a_reused_background_log_is_found():
    script = "serve > serve.log 2>&1 &\nkill $S\nserve --other > serve.log 2>&1 &\n"
    assert background_logs_reused(script) == ["serve.log"]
    assert background_logs_reused("a > one.log 2>&1 &\nb > two.log 2>&1 &\n") == []
