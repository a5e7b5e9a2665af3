"""LogicBench as built-in tasks: rows and ids from the pinned files, subsets, validate, list, the prompts'
demonstrations, per-pattern metrics, and our own programs replayed through the CLI with the scripted
server. The data is read from $LOGICPIPE_DATASETS (the Makefile points it at ../shared/datasets)."""

import functools
import http.server
import json
import os
import re
import shutil
import threading
from pathlib import Path

import pytest

from logicpipe.core.errors import DataError
from logicpipe.data import get_dataset, load_problems
from logicpipe.prompts import PromptSet
from logicpipe.solvers import execute_task
from tests.conftest import ROOT, cli
from tests.testing.test_serve_scripted import start, stop

FILES = ROOT / "logicpipe" / "data" / "logicbench_programs"  # our own programs (`reproduce` replays them too)
NM_PROGRAMS = FILES / "bqa-nm-asp.jsonl"  # our own ASP programs: 3 samples of each non-monotonic pattern
FOL_PROGRAMS = FILES / "bqa-fol.jsonl"  # our own FOL programs for propositional and first-order patterns
MCQA_PROGRAMS = FILES / "mcqa-nm-asp.jsonl"  # our own ASP programs: 3 MCQA samples of 7 non-monotonic patterns
MCQA_PF_PROGRAMS = FILES / "mcqa-pf-asp.jsonl"  # our own ASP programs: 3 MCQA samples of 16 prop. and FOL patterns
LP_PROGRAMS = FILES / "bqa-lp.jsonl"  # our own LP programs: 4 questions of each of 23 patterns
PF_ASP_PROGRAMS = FILES / "bqa-pf-asp.jsonl"  # our own ASP programs: 4 questions of each of 17 patterns (prop, FOL)


def _datasets() -> Path | None:
    for chosen in (os.environ.get("LOGICPIPE_DATASETS"), str(ROOT.parent / "shared" / "datasets")):
        if chosen and (Path(chosen) / "logicbench-eval").is_dir():
            return Path(chosen)
    return None


DATASETS = _datasets()
pytestmark = pytest.mark.skipif(DATASETS is None, reason="LogicBench not found: set LOGICPIPE_DATASETS to a "
                                "folder holding logicbench-eval/ (the Makefile uses ../shared/datasets)")


@pytest.fixture(autouse=True)
def _datasets_env(monkeypatch):
    monkeypatch.setenv("LOGICPIPE_DATASETS", str(DATASETS))


def ids_of(path: Path) -> list[str]:
    return [json.loads(line)["id"] for line in path.read_text().splitlines()]


def records(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_bqa_is_one_problem_per_question_with_ids_from_the_source():
    problems = load_problems(get_dataset("logicbench-bqa"), "eval")
    by_id = {p.id: p for p in problems}
    assert len(problems) == len(by_id) == 1520
    counts = {logic: sum(p.id.startswith(logic + "/") for p in problems)
              for logic in ("propositional_logic", "first_order_logic", "nm_logic")}
    assert counts == {"propositional_logic": 560, "first_order_logic": 520, "nm_logic": 440}
    # Sample 1 of default_reasoning_default, its two questions: the first entailed, the second not.
    source = json.loads((DATASETS / "logicbench-eval/BQA/nm_logic/default_reasoning_default/data_instances.json")
                        .read_text())["samples"][0]
    first, second = by_id["nm_logic/default_reasoning_default/1/0"], by_id["nm_logic/default_reasoning_default/1/1"]
    assert (first.context, first.question, first.answer) == (source["context"], source["qa_pairs"][0]["question"], "A")
    assert (second.question, second.answer) == (source["qa_pairs"][1]["question"], "B")
    assert first.options == ["A) True", "B) False", "C) Unknown"]


def test_mcqa_options_follow_the_choice_numbers():
    problems = load_problems(get_dataset("logicbench-mcqa"), "eval")
    assert len(problems) == 500
    first = next(p for p in problems if p.id == "nm_logic/default_reasoning_default/1")
    assert first.options == ["A) Anna plays volleyball", "B) Jenny is good at skipping", "C) Jenny plays volleyball",
                             "D) Jenny plays basketball"] and first.answer == "D"


def test_a_file_that_differs_from_the_pinned_one_is_refused(tmp_path, monkeypatch):
    shutil.copytree(DATASETS / "logicbench-eval", tmp_path / "logicbench-eval")
    changed = tmp_path / "logicbench-eval/BQA/nm_logic/default_reasoning_irr/data_instances.json"
    changed.write_text(changed.read_text().replace("Once upon a time", "Once", 1))
    monkeypatch.setenv("LOGICPIPE_DATASETS", str(tmp_path))
    with pytest.raises(DataError, match="default_reasoning_irr.*sha256 differs"):
        load_problems(get_dataset("logicbench-bqa"), "eval")


def test_without_a_local_copy_the_download_is_checksummed_and_cached(tmp_path, monkeypatch):
    """As Logic-LM's files: fetched from the pinned commit's layout (a local mirror here), cached."""
    root = tmp_path / "mirror"
    shutil.copytree(DATASETS / "logicbench-eval", root / "data" / "LogicBench(Eval)")
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(root))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        monkeypatch.delenv("LOGICPIPE_DATASETS")
        monkeypatch.setenv("LOGICPIPE_CACHE", str(tmp_path / "cache"))
        monkeypatch.setenv("LOGICPIPE_DATA_URL", f"http://127.0.0.1:{server.server_address[1]}")
        assert len(load_problems(get_dataset("logicbench-mcqa"), "eval")) == 500
        monkeypatch.setenv("LOGICPIPE_DATA_URL", "http://127.0.0.1:9")  # offline: the cache serves
        assert len(load_problems(get_dataset("logicbench-mcqa"), "eval")) == 500
        with pytest.raises(DataError, match="cannot download"):  # BQA's files were never fetched
            load_problems(get_dataset("logicbench-bqa"), "eval")
    finally:
        server.shutdown()


def test_validate_accepts_both_tasks_with_every_split_and_list_describes_them():
    for key, size in (("logicbench-bqa", 1520), ("logicbench-mcqa", 500)):
        done = cli("validate", "-d", key)
        assert done.returncode == 0 and f"{key} eval: {size} problems" in done.stdout and ": ok" in done.stdout, \
            done.stdout + done.stderr
    listed = cli("list").stdout
    assert re.search(r"logicbench-bqa .* problems=eval:1520 formalisms=lp,fol,asp licence=MIT subsets="
                     r"propositional_logic,first_order_logic,nm_logic and 25", listed), listed
    assert re.search(r"logicbench-mcqa .* problems=eval:500 formalisms=asp licence=MIT", listed), listed


@pytest.mark.parametrize("prompt, solver, verdicts", [("logicbench-bqa", "fol", ["True", "Unknown"]),
                                                      ("logicbench-bqa-asp", "asp", ["True", "False", "True"]),
                                                      ("logicbench-bqa-lp", "lp", ["True", "True"]),
                                                      ("logicbench-mcqa", "asp", ["C", "B", "B"])])
def test_every_demonstration_is_checked_by_its_solver(prompt, solver, verdicts):
    demos = re.findall(r"Program:\n(.*?)\n\n", PromptSet().get(prompt).user, re.S)
    assert [execute_task({"solver": solver, "program": demo}).verdict for demo in demos] == verdicts


def test_an_unknown_subset_is_one_line_with_a_suggestion_before_anything_is_written(tmp_path):
    for subset, close in (("nm_logc", "nm_logic"), ("nm_logic/default_reasoning_defaul",
                                                     "nm_logic/default_reasoning_default")):
        done = cli("run", "-d", "logicbench-bqa", "--subset", subset, "--programs", str(NM_PROGRAMS),
                   "--formalism", "asp", "--out", str(tmp_path / "out"))
        lines = done.stderr.strip().splitlines()
        assert done.returncode == 2 and len(lines) == 1 and f"did you mean '{close}'" in lines[0], done.stderr
    assert not (tmp_path / "out").exists()


def test_our_asp_programs_get_the_gold_answers_of_the_nm_subset_through_the_scripted_server(tmp_path):
    """`run --subset nm_logic --formalism asp --model scripted`: all 440 non-monotonic questions are run
    (no other), ours (63) answered as the dataset does; the others have no program, a typed failure each."""
    server, url = start("--programs", str(NM_PROGRAMS))
    try:
        done = cli("run", "-d", "logicbench-bqa", "--subset", "nm_logic", "--formalism", "asp", "--model", "scripted",
                   "--base-url", url, "--out", str(tmp_path), "--max-rounds", "0", "--backup", "none",
                   "--max-errors", "100%", "--llm-timeout", "10")
    finally:
        stop(server)
    assert done.returncode == 0, done.stderr
    folder = tmp_path / "logicbench-bqa"
    ours = set(ids_of(NM_PROGRAMS))
    evaluated = records(folder / "evaluate.jsonl")
    assert len(evaluated) == 440 and all(r["id"].startswith("nm_logic/") for r in evaluated)
    assert {r["id"] for r in evaluated if r["correct"]} == ours
    assert all(r["error"] is not None for r in evaluated if r["id"] not in ours)
    metrics = json.loads((folder / "metrics.json").read_text())
    assert (metrics["total"], metrics["executed"], metrics["exe_acc"], metrics["subset"]) == (440, 63, 100.0, "nm_logic")
    assert list(metrics["by_logic"]) == ["nm_logic"] and len(metrics["by_pattern"]) == 8
    priority = metrics["by_pattern"]["nm_logic/reasoning_about_priority"]
    assert (priority["total"], priority["executed"], priority["correct"]) == (80, 12, 12)
    exceptions = metrics["by_pattern"]["nm_logic/reasoning_about_exceptions_1"]
    assert (exceptions["total"], exceptions["executed"], exceptions["exe_rate"]) == (80, 9, 11.25)
    assert "by pattern" in done.stdout and "nm_logic/default_reasoning_open" in done.stdout
    page = tmp_path / "page.html"
    shown = cli("view", str(tmp_path), "--out", str(page))
    assert shown.returncode == 0, shown.stderr
    html = page.read_text()
    assert "logicbench-bqa by logic type and pattern" in html
    # each rate with its 95% interval and n (Wilson's for Exe_Rate: 12 of 80)
    assert ('<td>nm_logic/reasoning_about_priority</td><td>80</td><td>12</td><td>15.00 <span class="ci">[8.79, 24.41]'
            '</span> <span class="n">n=80</span></td>') in html
    # The subset is part of the run's identity: the same folder without it is refused.
    again = cli("run", "-d", "logicbench-bqa", "--formalism", "asp", "--programs", str(NM_PROGRAMS), "--out", str(tmp_path))
    assert again.returncode == 2 and "subset" in again.stderr, again.stderr


def replay(tmp_path: Path, programs: Path, task: str, *extra: str) -> dict:
    """Our programs for `task`, served by the scripted server to a run of just their ids: the metrics."""
    ids = tmp_path / "ids.txt"
    ids.write_text("\n".join(ids_of(programs)))
    server, url = start("--programs", str(programs))
    try:
        done = cli("run", "-d", task, "--model", "scripted", "--base-url", url, "--ids", str(ids), *extra,
                   "--out", str(tmp_path / "run"), "--max-rounds", "0", "--llm-timeout", "10", "--workers", "2")
    finally:
        stop(server)
    assert done.returncode == 0, done.stderr
    return json.loads((tmp_path / "run" / task / "metrics.json").read_text())


def test_our_fol_programs_get_the_gold_answers_of_propositional_and_first_order_patterns(tmp_path):
    metrics = replay(tmp_path, FOL_PROGRAMS, "logicbench-bqa")
    assert (metrics["total"], metrics["executed"], metrics["correct"]) == (20, 20, 20)
    assert {k: v["total"] for k, v in metrics["by_logic"].items()} == {"first_order_logic": 10, "propositional_logic": 10}
    assert len(metrics["by_pattern"]) == 6
    # each group's rates carry their 95% interval: 10 of 10 right is not known to be 100%
    assert all(v["accuracy_ci"][0] < 100 == v["accuracy_ci"][1] for v in metrics["by_logic"].values())


def test_our_asp_programs_pick_the_gold_choice_of_mcqa_nm_samples(tmp_path):
    metrics = replay(tmp_path, MCQA_PROGRAMS, "logicbench-mcqa", "--subset", "nm_logic")
    assert (metrics["total"], metrics["executed"], metrics["correct"], metrics["subset"]) == (21, 21, 21, "nm_logic")
    assert {k: v["correct"] for k, v in metrics["by_pattern"].items()} == {
        f"nm_logic/{pattern}": 3 for pattern in ("default_reasoning_default", "default_reasoning_irr",
                                                 "default_reasoning_open", "default_reasoning_several",
                                                 "reasoning_about_exceptions_1", "reasoning_about_exceptions_2",
                                                 "reasoning_about_exceptions_3")}


PATTERNS = {"propositional_logic": ("bidirectional_dilemma", "commutation", "constructive_dilemma", "destructive_dilemma",
                                    "disjunctive_syllogism", "hypothetical_syllogism", "material_implication",
                                    "modus_tollens"),
            "first_order_logic": ("bidirectional_dilemma", "constructive_dilemma", "destructive_dilemma",
                                  "disjunctive_syllogism", "existential_generalization", "hypothetical_syllogism",
                                  "modus_ponens", "modus_tollens", "universal_instantiation"),
            # LP states no count and no "exactly one of": reasoning_about_exceptions_1 and _2 are left out.
            "nm_logic": ("default_reasoning_default", "default_reasoning_irr", "default_reasoning_open",
                         "default_reasoning_several", "reasoning_about_exceptions_3", "reasoning_about_priority")}


def test_our_lp_programs_get_the_gold_answers_of_every_pattern_they_cover(tmp_path):
    """`--formalism lp` (prompt logicbench-bqa-lp) with the scripted server: contrapositives, disjunctions
    as two rules and defaults with explicit exceptions, 4 questions of each of 23 patterns, all right."""
    metrics = replay(tmp_path, LP_PROGRAMS, "logicbench-bqa", "--formalism", "lp")
    assert (metrics["total"], metrics["executed"], metrics["correct"]) == (92, 92, 92)
    assert {k: v["total"] for k, v in metrics["by_logic"].items()} == {
        "first_order_logic": 36, "nm_logic": 24, "propositional_logic": 32}
    assert sorted(metrics["by_pattern"]) == sorted(f"{logic}/{p}" for logic, names in PATTERNS.items() for p in names)
    assert all(v["correct"] == v["total"] == 4 for v in metrics["by_pattern"].values())
    run = json.loads((tmp_path / "run" / "logicbench-bqa" / "run.json").read_text())
    assert "logicbench-bqa-lp" in json.dumps(run), "the LP prompt formulated the programs"


def test_our_asp_programs_get_the_gold_answers_of_propositional_and_first_order_patterns(tmp_path):
    """The open-world part of logicbench-bqa-asp: each statement holds or not, each if-then and or a
    constraint; 4 questions of each of the 17 propositional and first-order patterns, all right."""
    metrics = replay(tmp_path, PF_ASP_PROGRAMS, "logicbench-bqa", "--formalism", "asp")
    assert (metrics["total"], metrics["executed"], metrics["correct"]) == (68, 68, 68)
    assert {k: v["total"] for k, v in metrics["by_logic"].items()} == {"first_order_logic": 36, "propositional_logic": 32}
    expected = [f"{logic}/{p}" for logic in ("propositional_logic", "first_order_logic") for p in PATTERNS[logic]]
    assert sorted(metrics["by_pattern"]) == sorted(expected)
    assert all(v["correct"] == v["total"] == 4 for v in metrics["by_pattern"].values())


def test_our_asp_programs_pick_the_gold_choice_of_mcqa_propositional_and_first_order_samples(tmp_path):
    """The open-world part of the logicbench-mcqa prompt: each statement holds or not, each if-then and
    "or" a constraint, an option "A or B" two rules; the option that holds in every answer set is the
    answer. Three samples of each of the 16 patterns with a faithful answer (first-order hypothetical
    syllogism has none: no story names someone who takes the first step; docs/datasets.md)."""
    metrics = replay(tmp_path, MCQA_PF_PROGRAMS, "logicbench-mcqa")
    assert (metrics["total"], metrics["executed"], metrics["correct"]) == (48, 48, 48)
    assert {k: v["total"] for k, v in metrics["by_logic"].items()} == {"first_order_logic": 24, "propositional_logic": 24}
    expected = [f"{logic}/{p}" for logic in ("propositional_logic", "first_order_logic") for p in PATTERNS[logic]
                if (logic, p) != ("first_order_logic", "hypothetical_syllogism")]
    assert sorted(metrics["by_pattern"]) == sorted(expected)
    assert all(v["correct"] == v["total"] == 3 for v in metrics["by_pattern"].values())
    run = json.loads((tmp_path / "run" / "logicbench-mcqa" / "run.json").read_text())
    assert run["stages"]["formulate"]["prompts"] == {"logicbench-mcqa": PromptSet().get("logicbench-mcqa").hash}


def test_a_replay_through_a_formalism_the_task_does_not_take_is_one_line_before_anything_is_written(tmp_path):
    # MCQA takes ASP only (`logicpipe list`): its ASP programs replayed "as FOL" ran 0% and exited 0.
    programs = ROOT / "logicpipe" / "data" / "logicbench_programs" / "mcqa-nm-asp.jsonl"
    done = cli("run", "-d", "logicbench-mcqa", "--formalism", "fol", "--programs", str(programs),
               "--out", str(tmp_path / "out"))
    assert done.returncode == 2
    assert done.stderr == "error: --formalism fol: logicbench-mcqa takes asp only; its programs would be run as fol\n"
    assert not (tmp_path / "out").exists()
    listed = cli("list").stdout
    assert "logicbench-mcqa" in listed and "formalisms=asp " in listed
