"""--prompts logic-lm: Logic-LM's own prompt files, downloaded from a local HTTP mirror laid out like the
pinned repository (models/prompts/). The files served here are SYNTHETIC stand-ins written by the tests,
shaped like Logic-LM's (placeholders, examples between lines of dashes), and their own sha256 pins
replace the real ones for the test: Logic-LM's text is never copied into this repository."""

import functools
import hashlib
import http.server
import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from logicpipe.core.errors import DataError, UsageError
from logicpipe.core.records import Problem
from logicpipe.data.fetch import cache_dir
from logicpipe.data.registry import source
from logicpipe.llm import Request, cache_key, request_body
from logicpipe.prompts import PromptSet, problem_fields
from logicpipe.testing import FakeOpenAI, ScriptedReplies
from tests.conftest import ROOT

SYNTHETIC = {
    "LogicalDeduction.txt": "SYNTHETIC csp task.\n------\nProblem:\nTwo books.\nQuestion:\nWhich?\nOptions:\n"
                            "(A) x\n###\nDomain:\n1: left\n------\nProblem:\n[[PROBLEM]]\nQuestion:\n"
                            "[[QUESTION]]\nOptions:\n[[CHOICES]]\n###",
    "self-correct-LogicalDeduction.txt": "SYNTHETIC repair task.\n------\n>>> Initial Program:\n[[PROGRAM]]\n"
                                         ">>> Error Message:\n[[ERROR MESSAGE]]\n>>> Corrected Program:",
    "ProntoQA.txt": "SYNTHETIC lp task.\n------\nProblem:\n[[PROBLEM]]\nQuestion:\n[[QUESTION]]\n###",
}
PAPER = Path("logic-lm")
STOP = ["------"]
# The real CLI in a child process, with the test's pins in place of the real ones (a test-only
# entry point: logicpipe itself has no way to change its pins).
_PINNED_CLI = ("import json, os; from logicpipe.data.registry import source; "
               "source().sha256.update(json.loads(os.environ['TEST_PROMPT_PINS'])); "
               "from logicpipe.cli import main; main()")


class Mirror:
    def __init__(self, root: Path, url: str, hits: list[str]):
        self.root, self.url, self.hits = root, url, hits
        self.pins = {f"prompts/{name}": hashlib.sha256(text.encode()).hexdigest() for name, text in SYNTHETIC.items()}

    def cli(self, *args: str) -> subprocess.CompletedProcess:
        env = {**os.environ, "TEST_PROMPT_PINS": json.dumps(self.pins)}
        return subprocess.run([sys.executable, "-c", _PINNED_CLI, *args], capture_output=True, text=True,
                              timeout=300, env=env, cwd=ROOT)


@pytest.fixture
def mirror(tmp_path, monkeypatch):
    root = tmp_path / "mirror"
    folder = root / "models" / "prompts"
    folder.mkdir(parents=True)
    for name, text in SYNTHETIC.items():
        (folder / name).write_text(text, encoding="utf-8")
    hits: list[str] = []

    class Counting(http.server.SimpleHTTPRequestHandler):
        def do_GET(self):  # noqa: N802 - http.server's naming
            hits.append(self.path)
            super().do_GET()

        def log_message(self, format, *args):  # noqa: A002 - http.server's signature
            return None

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Counting, directory=str(root)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    served = Mirror(root, f"http://127.0.0.1:{server.server_address[1]}", hits)
    for relative, pin in served.pins.items():
        monkeypatch.setitem(source().sha256, relative, pin)
    monkeypatch.setenv("LOGICPIPE_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("LOGICPIPE_DATA_URL", served.url)
    yield served
    server.shutdown()
    server.server_close()


def test_prompts_are_filled_as_logic_lm_filled_them(mirror):
    prompts = PromptSet(PAPER)
    formulate = prompts.get("logicaldeduction")
    assert formulate.paper and formulate.stop == tuple(STOP) and formulate.id == "logic-lm/LogicalDeduction"
    assert formulate.hash == mirror.pins["prompts/LogicalDeduction.txt"][:12]
    problem = Problem(id="p", context="Three books [[QUESTION]] stay.\n", question="  Which is left? \n",
                      options=["A) The red one. ", "B) The blue one."])
    sent = formulate.render(**problem_fields(problem))
    # One user message: the context as it is (a placeholder inside it is not filled), the question
    # stripped, the options as Logic-LM wrote them: "(A) ...".
    assert sent == [{"role": "user", "content": SYNTHETIC["LogicalDeduction.txt"].split("[[PROBLEM]]")[0]
                     + "Three books [[QUESTION]] stay.\n\nQuestion:\nWhich is left?\nOptions:\n"
                       "(A) The red one.\n(B) The blue one.\n###"}]
    repair = prompts.refine("logicaldeduction")
    assert repair.id == "logic-lm/self-correct-LogicalDeduction" and repair.stop == tuple(STOP)
    text = repair.render(program="\nDomain:\n1: left\n", error=" line 2: bad \n", guide="unused",
                         **problem_fields(problem))[0]["content"]
    assert text.endswith(">>> Initial Program:\nDomain:\n1: left\n>>> Error Message:\nline 2: bad\n"
                         ">>> Corrected Program:")
    # Logic-LM had no self-correct-ProntoQA.txt: our own refine prompt stands in, and nothing is fetched.
    before = list(mirror.hits)
    ours = prompts.refine("prontoqa")
    assert ours.id == "refine" and not ours.paper and ours.stop == () and mirror.hits == before
    # Our prompts for what Logic-LM's files do not cover (the cot backup, baselines).
    assert prompts.get("cot") == PromptSet().get("cot")


def test_downloads_once_then_reads_the_cache_offline(mirror, monkeypatch):
    PromptSet(PAPER).get("logicaldeduction")
    assert mirror.hits == ["/models/prompts/LogicalDeduction.txt"]
    cached = cache_dir() / "logic-lm" / source().commit / "prompts" / "LogicalDeduction.txt"
    assert cached.read_text(encoding="utf-8") == SYNTHETIC["LogicalDeduction.txt"]
    monkeypatch.setenv("LOGICPIPE_DATA_URL", "http://127.0.0.1:9")  # offline: the cache serves
    again = PromptSet(PAPER).get("logicaldeduction")
    assert again.user == SYNTHETIC["LogicalDeduction.txt"] and mirror.hits == ["/models/prompts/LogicalDeduction.txt"]
    # A cached copy that no longer matches its pin is fetched again, never used.
    cached.write_text("tampered", encoding="utf-8")
    with pytest.raises(DataError, match="cannot download .*--prompts logic-lm. needs the network once"):
        PromptSet(PAPER).get("logicaldeduction")


def test_a_checksum_mismatch_and_an_unreachable_host_are_one_error_each(mirror, data_dir, tmp_path):
    (mirror.root / "models" / "prompts" / "LogicalDeduction.txt").write_text("not the pinned text")
    out = tmp_path / "out"
    args = ("run", "-d", "logicaldeduction", "--data-dir", str(data_dir), "--out", str(out), "--model", "m",
            "--base-url", "http://127.0.0.1:9/v1", "--prompts", "logic-lm", "--limit", "2")
    bad = mirror.cli(*args)
    lines = bad.stderr.strip().splitlines()
    assert bad.returncode == 2 and len(lines) == 1, bad.stderr
    assert lines[0] == (f"error: checksum mismatch for {mirror.url}/models/prompts/LogicalDeduction.txt: "
                        "the download is corrupt or not the pinned version")
    offline = subprocess.run([sys.executable, "-c", _PINNED_CLI, *args], capture_output=True, text=True,
                             timeout=300, cwd=ROOT, env={**os.environ, "LOGICPIPE_DATA_URL": "http://127.0.0.1:9",
                                                         "TEST_PROMPT_PINS": json.dumps(mirror.pins)})
    lines = offline.stderr.strip().splitlines()
    assert offline.returncode == 2 and len(lines) == 1, offline.stderr
    assert lines[0].startswith("error: cannot download http://127.0.0.1:9/models/prompts/LogicalDeduction.txt (")
    assert lines[0].endswith("`--prompts logic-lm` needs the network once; after that the cached copy is used")
    assert not out.exists()  # both stopped before anything was written


class PaperFormat:
    """A reply function that serves a program only to a request in Logic-LM's form: the filled paper
    prompt as the one user message, and the stop marker. Anything else gets prose, which fails to parse."""

    def __init__(self, rows: dict[str, dict], replies: ScriptedReplies, broken: dict[str, str]):
        self.rows, self.replies, self.broken = rows, replies, broken
        self.refused: list[str] = []

    def formulate_text(self, pid: str) -> str:
        row = self.rows[pid]
        choices = "\n".join(f"({option.strip()}" for option in row["options"])
        return (SYNTHETIC["LogicalDeduction.txt"].replace("[[PROBLEM]]", row["context"])
                .replace("[[QUESTION]]", row["question"].strip()).replace("[[CHOICES]]", choices))

    def __call__(self, body: dict) -> str:
        meta = body["_logicpipe"]
        pid, messages = meta["problem"], body["messages"]
        if body.get("stop") != STOP or len(messages) != 1 or messages[0]["role"] != "user":
            self.refused.append(pid)
            return "This request is not in Logic-LM's form."
        if meta["purpose"] == "formulate" and messages[0]["content"] == self.formulate_text(pid):
            return self.broken.get(pid) or self.replies(body)
        head = SYNTHETIC["self-correct-LogicalDeduction.txt"].split("[[ERROR MESSAGE]]")[0]
        if meta["purpose"] == "refine" and messages[0]["content"].startswith(
                head.replace("[[PROGRAM]]", self.broken.get(pid, "").strip())):
            return self.replies.programs[pid][0]
        self.refused.append(pid)
        return "This prompt is not the paper's."


def test_a_run_sends_the_paper_prompts_with_the_stop_marker(mirror, data_dir, tmp_path):
    rows = {r["id"]: r for r in json.loads((data_dir / "data" / "LogicalDeduction" / "dev.json").read_text())}
    replies = ScriptedReplies.from_logic_lm(data_dir / "programs" / "LogicalDeduction_dev_gpt-4.json")
    first = "logical_deduction_0"
    broken = replies.programs[first][0].replace("Constraints:", "Constraints:\nBROKEN = = 1", 1)
    server = PaperFormat(rows, replies, {first: broken})
    out = tmp_path / "out"
    with FakeOpenAI(server) as fake:
        args = ("run", "-d", "logicaldeduction", "--data-dir", str(data_dir), "--out", str(out), "--model", "fake",
                "--base-url", fake.url, "--prompts", "logic-lm", "--limit", "3", "--backup", "none")
        done = mirror.cli(*args)
        assert done.returncode == 0, done.stderr
        assert server.refused == [] and len(fake.requests) == 4  # three programs and one repair
        stage_dir = out / "logicaldeduction"
        solved = {r["id"]: r for r in map(json.loads, (stage_dir / "solve.jsonl").read_text().splitlines())}
        error = solved[first]["error"]["message"]
        repair = next(r for r in fake.requests if r["_logicpipe"]["purpose"] == "refine")
        assert repair["messages"][0]["content"].endswith(f">>> Error Message:\n{error.strip()}\n>>> Corrected Program:")
        formulated = [json.loads(line) for line in (stage_dir / "formulate.jsonl").read_text().splitlines()]
        assert {(r["prompt_id"], r["prompt_hash"]) for r in formulated} == {
            ("logic-lm/LogicalDeduction", mirror.pins["prompts/LogicalDeduction.txt"][:12])}
        refined = json.loads((stage_dir / "refine-1.jsonl").read_text())
        assert refined["prompt_id"] == "logic-lm/self-correct-LogicalDeduction"
        metrics = json.loads((stage_dir / "metrics.json").read_text())
        assert metrics["executed"] == 3 and metrics["exe_rate_before_refinement"] < metrics["exe_rate"]
        stages = json.loads((stage_dir / "run.json").read_text())["stages"]
        assert stages["formulate"]["prompt_set"] == "logic-lm" and stages["formulate"]["stop"] == STOP
        assert stages["refine"]["prompts"] == {"logic-lm/self-correct-LogicalDeduction":
                                               mirror.pins["prompts/self-correct-LogicalDeduction.txt"][:12]}
        downloads = list(mirror.hits)
        assert sorted(downloads) == ["/models/prompts/LogicalDeduction.txt",
                                     "/models/prompts/self-correct-LogicalDeduction.txt"]
        # Again into a new directory: the prompts come from the cache and the replies too.
        again = mirror.cli(*args[:6], str(tmp_path / "again"), *args[7:])
        assert again.returncode == 0, again.stderr
        assert mirror.hits == downloads and len(fake.requests) == 4
        # Our own prompts made the first directory's records: resuming it with them is refused.
        ours = mirror.cli(*args[:-6], "--limit", "3", "--backup", "none")
        assert ours.returncode == 2 and "formulate.prompts" in ours.stderr, ours.stderr


def test_where_logic_lm_had_no_self_correction_prompt_ours_stands_in(mirror, data_dir, tmp_path):
    replies = ScriptedReplies.from_logic_lm(data_dir / "programs" / "ProntoQA_dev_gpt-4.json")
    first = "ProntoQA_1"
    good = replies.programs[first][0]
    replies.programs[first] = [good.replace("Rules:", "Rules:\n@@@ broken line", 1)]
    replies.repairs["@@@ broken line"] = good
    out = tmp_path / "out"
    with FakeOpenAI(replies) as fake:
        done = mirror.cli("run", "-d", "prontoqa", "--data-dir", str(data_dir), "--out", str(out), "--model", "fake",
                          "--base-url", fake.url, "--prompts", "logic-lm", "--limit", "1", "--backup", "none")
        assert done.returncode == 0, done.stderr
        formulate, repair = fake.requests
    assert formulate["stop"] == STOP and formulate["messages"][0]["content"].startswith("SYNTHETIC lp task.")
    assert "stop" not in repair and repair["messages"][0]["role"] == "system"  # our refine prompt, as ever
    stages = json.loads((out / "prontoqa" / "run.json").read_text())["stages"]
    assert stages["refine"]["prompt_set"] == "logic-lm" and stages["refine"]["prompts"].keys() == {"refine", "guide-lp"}
    assert stages["refine"]["note"] == ("Logic-LM has no self-correction prompt for ProntoQA: "
                                        "logicpipe's own 'refine' prompt stands in")
    assert json.loads((out / "prontoqa" / "metrics.json").read_text())["executed"] == 1


def test_the_stop_marker_is_sent_and_is_part_of_the_cache_key():
    plain = Request("k", [{"role": "user", "content": "hi"}])
    stopped = Request("k", plain.messages, stop=("------",))
    assert "stop" not in request_body("m", plain) and request_body("m", stopped)["stop"] == ["------"]
    assert cache_key("m", "u", plain) != cache_key("m", "u", stopped)


def test_every_dataset_has_a_pinned_logic_lm_prompt_and_the_self_correction_ones_are_those_logic_lm_had():
    from logicpipe.prompts import logiclm

    pinned = source().sha256
    assert all(logiclm.formulate_file(key) in pinned for key in logiclm.NAMES)
    assert {key for key in logiclm.NAMES if logiclm.refine_file(key)} == {"folio", "ar-lsat", "logicaldeduction"}
    assert source().remote_paths["prompts/"] == "models/prompts/"
    with pytest.raises(UsageError, match="Logic-LM has no prompt for 'mytask'"):
        logiclm.formulate_file("mytask")
