"""Solvers as plugins: an out-of-tree package registers a solver through the `logicpipe.solvers` entry
points, is pip-installed (into a folder of its own on PYTHONPATH, so tests running beside this one never
see it) and runs end to end through `logicpipe run --task` against the scripted model server."""

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from logicpipe.testing import FakeOpenAI, ScriptedReplies
from tests.conftest import cli

# The plugin's solver reads `pick: X` (the option it is told to pick) and says which line it read; a
# second entry point in the same package names a module that fails to import; a third, a solver whose
# library cannot load under a memory bound (as one too large for the bound cannot): its check passes in
# the command, and its load fails in every worker.
PLUGIN = '''
from dataclasses import dataclass

from logicpipe.core.errors import PrerequisiteError, ProgramParseError
from logicpipe.solvers.base import Limits, SolverResult


@dataclass
class Pick:
    letter: str
    line: int


class PickSolver:
    name = "pick"
    formalism = "pick an option (a test plugin)"

    def check(self):
        return None

    def parse(self, text):
        for number, line in enumerate(text.splitlines(), start=1):
            word, _, letter = line.partition(":")
            if word.strip() == "pick":
                letter = letter.strip()
                if len(letter) != 1 or not letter.isupper():
                    raise ProgramParseError("pick takes one capital letter", number, text=line)
                return Pick(letter, number)
        raise ProgramParseError("no 'pick: X' line")

    def execute(self, program, limits):
        return SolverResult(program.letter, {"read": f"line {program.line}"})


class BoundedSolver(PickSolver):
    name = "bounded"

    def load(self):
        import resource

        if resource.getrlimit(resource.RLIMIT_AS)[0] != resource.RLIM_INFINITY:
            raise PrerequisiteError("its library does not load under a memory bound")
'''

PYPROJECT = '''
[build-system]
requires = ["setuptools>=77"]
build-backend = "setuptools.build_meta"

[project]
name = "logicpipe-pick"
version = "1.2.3"

[tool.setuptools]
py-modules = ["logicpipe_pick", "logicpipe_pick_broken"]

[project.entry-points."logicpipe.solvers"]
pick = "logicpipe_pick:PickSolver"
broken = "logicpipe_pick_broken:Solver"
bounded = "logicpipe_pick:BoundedSolver"
'''

ROWS = [{"id": "q1", "context": "c", "question": "Which?", "options": ["A) one", "B) two"], "answer": "B"},
        {"id": "q2", "context": "c", "question": "Which?", "options": ["A) one", "B) two"], "answer": "A"},
        {"id": "q3", "context": "c", "question": "Which?", "options": ["A) one", "B) two"], "answer": "A"}]


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    """The plugin package built and pip-installed (no dependencies: it uses this venv's logicpipe)."""
    root = tmp_path_factory.mktemp("plugin")
    source = root / "logicpipe-pick"
    source.mkdir()
    (source / "pyproject.toml").write_text(PYPROJECT)
    (source / "logicpipe_pick.py").write_text(textwrap.dedent(PLUGIN))
    (source / "logicpipe_pick_broken.py").write_text("raise ImportError('needs a library that is not there')\n")
    target = root / "site"
    done = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation",
                           "--no-index", "--target", str(target), str(source)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return target


def on_path(site: Path) -> dict[str, str]:
    return {"PYTHONPATH": os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")])}


def task(folder: Path, solver: str) -> Path:
    (folder / "rows.jsonl").write_text("".join(json.dumps(row) + "\n" for row in ROWS))
    path = folder / f"{solver}.yaml"
    path.write_text(f"name: picks\nsource: {{format: jsonl, path: rows.jsonl}}\nformalism: {solver}\n"
                    "prompt: logicaldeduction\ntimeout: 10\n")
    return path


def test_list_shows_the_plugin_where_it_comes_from_and_a_broken_one_in_one_line(site):
    done = cli("list", env=on_path(site))
    assert done.returncode == 0, done.stderr
    lines = {line.split()[0]: line for line in done.stdout.splitlines() if line.startswith("  ")}
    assert list(lines)[:4] == ["lp", "fol", "csp", "smt"]
    assert "built-in" in lines["csp"] and "logicpipe 0.2.0" in lines["csp"]
    assert "plugin" in lines["pick"] and "logicpipe-pick 1.2.3" in lines["pick"]
    assert "pick an option (a test plugin)" in lines["pick"]
    assert ("cannot be loaded: solver plugin 'broken' (logicpipe-pick 1.2.3, logicpipe_pick_broken:Solver) "
            "cannot be loaded: ImportError: needs a library that is not there") in lines["broken"]


def test_without_the_package_the_solver_is_unknown(tmp_path):
    done = cli("validate", "--task", str(task(tmp_path, "pick")))
    assert done.returncode == 2
    assert "formalism: unknown formalism 'pick'" in done.stderr and "choose from lp, fol, csp, smt" in done.stderr


def test_a_plugin_solver_runs_end_to_end_through_the_scripted_server(site, tmp_path):
    replies = ScriptedReplies({"q1": ["pick: B"], "q2": ["pick: A"], "q3": ["pick: 7"]})
    with FakeOpenAI(replies) as fake:
        done = cli("run", "--task", str(task(tmp_path, "pick")), "--out", str(tmp_path / "out"), "--model", "m",
                   "--base-url", fake.url, "--max-rounds", "0", "--backup", "none", env=on_path(site))
    assert done.returncode == 0, done.stderr
    assert len(fake.requests) == 3
    folder = tmp_path / "out" / "picks"
    solved = {r["id"]: r for r in map(json.loads, (folder / "solve.jsonl").read_text().splitlines())}
    assert solved["q1"]["verdict"] == "B" and solved["q1"]["explanation"] == {"read": "line 1"}
    assert solved["q3"]["verdict"] is None and solved["q3"]["error"]["category"] == "parse"
    assert "pick takes one capital letter" in solved["q3"]["error"]["message"]
    evaluated = {r["id"]: (r["gold"], r["predicted"]) for r in
                 map(json.loads, (folder / "evaluate.jsonl").read_text().splitlines())}
    assert evaluated == {"q1": ("B", "B"), "q2": ("A", "A"), "q3": ("A", None)}
    assert json.loads((folder / "run.json").read_text())["stages"]["solve"]["solver"] == "pick"


def test_a_broken_plugin_is_one_line_and_the_others_still_run(site, tmp_path):
    with FakeOpenAI(ScriptedReplies({"q1": ["pick: B"]})) as fake:
        done = cli("run", "--task", str(task(tmp_path, "broken")), "--out", str(tmp_path / "out"), "--model", "m",
                   "--base-url", fake.url, "--max-rounds", "0", env=on_path(site))
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert done.returncode == 3 and len(lines) == 1, done.stderr
    assert lines[0] == ("error: solver plugin 'broken' (logicpipe-pick 1.2.3, logicpipe_pick_broken:Solver) cannot "
                        "be loaded: ImportError: needs a library that is not there")
    assert not (tmp_path / "out" / "picks" / "solve.jsonl").exists()
    listed = cli("validate", "--task", str(task(tmp_path, "csp")), env=on_path(site))
    assert "choose from" not in listed.stderr


def test_workers_that_cannot_start_stop_the_run_and_record_nothing(site, tmp_path):
    # The command's own check passes; every worker, under its memory bound, fails to load the solver's
    # library before it runs a program: one line saying why, exit 3, no record for problems never run.
    programs = tmp_path / "programs.json"
    programs.write_text(json.dumps([{"id": row["id"], "raw_logic_programs": ["pick: A"]} for row in ROWS]))
    done = cli("run", "--task", str(task(tmp_path, "bounded")), "--programs", str(programs), "-w", "2",
               "--max-rounds", "0", "--out", str(tmp_path / "out"), env=on_path(site))
    assert done.returncode == 3
    assert done.stderr.splitlines() == [
        "error: solver workers cannot start: its library does not load under a memory bound"]
    solved = tmp_path / "out" / "picks" / "solve.jsonl"
    assert not solved.exists() or solved.read_text() == ""
