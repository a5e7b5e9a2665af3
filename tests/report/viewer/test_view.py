"""`logicpipe view` through the CLI on a real run (see conftest.py)."""

import json
import re
import shutil
import signal
import subprocess
import sys
import urllib.request

from tests.conftest import ROOT, cli, ctrl_c_default
from tests.report.viewer.conftest import INJECTED_ID, INJECTED_LINE, INJECTION
from tests.report.viewer.pages import by_id, payload, records


def view(run, *args, env=None):
    done = cli("view", str(run), *args, env=env)
    assert done.returncode == 0, done.stderr
    return done


def test_page_shows_metrics_charts_and_every_problem(viewer_run, data_dir, tmp_path):
    page = tmp_path / "page.html"
    view(viewer_run, "--out", str(page), "--data-dir", str(data_dir))
    html = page.read_text()
    for dataset in ("ar-lsat", "logicaldeduction", "prontoqa"):
        metrics = json.loads((viewer_run / dataset / "metrics.json").read_text())
        ci = {key: '<span class="ci">[{:.2f}, {:.2f}]</span>'.format(*metrics[f"{key}_ci"])
              for key in ("exe_rate", "exe_acc")}  # each rate with its 95% interval and n
        assert f"<td>{dataset}</td><td>{metrics['total']}</td><td>{metrics['executed']}</td>" \
               f"<td>{metrics['exe_rate']:.2f} {ci['exe_rate']} <span class=\"n\">n={metrics['total']}</span></td>" \
               f"<td>{metrics['exe_acc']:.2f} {ci['exe_acc']} <span class=\"n\">n={metrics['executed']}</span></td>" in html
    assert html.count("<svg") == 2 and "execution rate and accuracy" in html and "failures by category" in html
    failures = json.loads((viewer_run / "ar-lsat" / "metrics.json").read_text())["failures"]
    for category, count in failures.items():
        assert f"ar-lsat {category}: {count}</title>" in html
    problems = payload(html)["problems"]
    assert len(problems) == 50
    ld = by_id(problems, "logical_deduction_0")
    source = json.loads((data_dir / "data/LogicalDeduction/dev.json").read_text())[0]
    assert (ld["context"], ld["question"], ld["options"], ld["gold"]) == \
        (source["context"], source["question"], source["options"], source["answer"])
    assert ld["rounds"][0]["explanation"]["sample"]


def test_page_needs_no_network(viewer_run, tmp_path):
    page = tmp_path / "page.html"
    view(viewer_run, "--out", str(page))
    html = page.read_text()
    assert not re.search(r"""\b(src|href)\s*=|@import|url\(|https?://""", html)
    assert "default-src 'none'" in html  # the browser itself refuses any load the page might attempt


def test_model_text_cannot_inject_markup(viewer_run, tmp_path):
    page = tmp_path / "page.html"
    view(viewer_run, "--out", str(page))
    html = page.read_text()
    assert INJECTION not in html and "alert(1)</script>" not in html
    assert html.lower().count("<script") == 2 and html.lower().count("</script") == 2
    injected = by_id(payload(html)["problems"], INJECTED_ID)
    assert INJECTION in injected["rounds"][0]["program"]  # the text itself survives, as data


def test_drill_down_data_has_error_line_and_refinement_diff(viewer_run, tmp_path):
    page = tmp_path / "page.html"
    view(viewer_run, "--out", str(page))
    problem = by_id(payload(page.read_text())["problems"], INJECTED_ID)
    first, repaired = problem["rounds"]
    assert first["error"]["category"] == "parse" and first["error_line"] == INJECTED_LINE
    assert "-" + INJECTION in repaired["diff"] and repaired["error"] is None
    assert problem["refinements"] == 1 and problem["category"] is None
    solved = {r["id"]: r for r in records(viewer_run / "prontoqa" / "solve-1.jsonl")}[INJECTED_ID]
    assert repaired["explanation"] == solved["explanation"] and "goal_tree" in repaired["explanation"]


def test_default_output_is_report_html_in_the_run(viewer_run, tmp_path):
    run = tmp_path / "run"
    shutil.copytree(viewer_run / "logicaldeduction", run / "logicaldeduction")
    done = view(run)
    assert (run / "report.html").is_file() and str(run / "report.html") in done.stderr


def test_a_dataset_directory_can_be_viewed_alone(viewer_run, tmp_path):
    page = tmp_path / "page.html"
    view(viewer_run / "ar-lsat", "--out", str(page))
    problems = payload(page.read_text())["problems"]
    assert len(problems) == 10 and {p["dataset"] for p in problems} == {"ar-lsat"}


def test_without_data_the_page_shows_what_records_hold(viewer_run, tmp_path):
    run, page = tmp_path / "run", tmp_path / "page.html"
    shutil.copytree(viewer_run / "logicaldeduction", run / "logicaldeduction")
    identity = run / "logicaldeduction" / "run.json"  # the data folder it names is gone
    identity.write_text(json.dumps({**json.loads(identity.read_text()), "data_dir": str(tmp_path / "gone")}))
    view(run, "--out", str(page), env={"LOGICPIPE_DATA": ""})
    problem = by_id(payload(page.read_text())["problems"], "logical_deduction_0")
    assert problem["context"] is None and problem["gold"] == "D" and problem["rounds"][0]["program"]


def test_unknown_fields_missing_files_and_bad_lines_do_not_stop_the_page(viewer_run, tmp_path):
    run = tmp_path / "run"
    shutil.copytree(viewer_run / "prontoqa", run / "prontoqa")
    (run / "prontoqa" / "metrics.json").unlink()
    (run / "prontoqa" / "interpret.jsonl").unlink()
    solve = records(run / "prontoqa" / "solve.jsonl")
    solve[1]["explanation"] = {"steps": [{"rule": "r1", "premises": [[1, 2], {"deep": None}]}], "weird": 3.5}
    solve[2]["provenance"] = {"prompt_id": "lp-v2", "sha": "abc"}
    lines = [json.dumps(r) for r in solve] + ['{"id": "torn', "[1, 2]"]
    (run / "prontoqa" / "solve.jsonl").write_text("\n".join(lines) + "\n")
    page = tmp_path / "page.html"
    view(run, "--out", str(page))
    html = page.read_text()
    assert "solve.jsonl:21: skipped a malformed line" in html
    problems = payload(html)["problems"]
    assert len(problems) == 20
    assert problems[1]["rounds"][0]["explanation"]["steps"][0]["rule"] == "r1"
    assert problems[2]["rounds"][0]["details"]["solve.provenance"] == {"prompt_id": "lp-v2", "sha": "abc"}


def test_missing_run_is_one_error_line(tmp_path):
    done = cli("view", str(tmp_path / "nothing"))
    assert done.returncode == 2 and done.stderr.startswith("error: run directory") and "Traceback" not in done.stderr


def test_a_folder_without_runs_is_one_error_line_and_no_page(tmp_path):
    optimised = tmp_path / "opt"
    (optimised / "prompts").mkdir(parents=True)
    (optimised / "state.json").write_text("{}")
    (optimised / "steps.jsonl").write_text('{"step": 0}\n')  # an optimisation's records are no stage files
    for folder, says in ((optimised, f"{optimised} is a `logicpipe optimize` folder, not a run: its report is "
                                     f"{optimised / 'report.md'}"),
                         (tmp_path / "empty", "holds no run records")):
        folder.mkdir(exist_ok=True)
        for command in ("view", "failures"):
            done = cli(command, str(folder))
            lines = done.stderr.strip().splitlines()
            assert done.returncode == 2 and len(lines) == 1 and says in lines[0], done.stderr
        assert not (folder / "report.html").exists()


def test_serve_answers_on_localhost_until_interrupted(viewer_run, tmp_path):
    page = tmp_path / "page.html"
    server = subprocess.Popen([sys.executable, "-m", "logicpipe", "view", str(viewer_run), "--out", str(page),
                               "--serve"], cwd=ROOT, stderr=subprocess.PIPE, text=True, preexec_fn=ctrl_c_default)
    try:
        lines = []
        while not any("serving" in line for line in lines):
            line = server.stderr.readline()
            assert line, f"server ended: {''.join(lines)}"
            lines.append(line)
        url = re.search(r"http://127\.0\.0\.1:\d+/", "".join(lines)).group(0)
        with urllib.request.urlopen(url, timeout=10) as reply:
            assert reply.read() == page.read_bytes()
        server.send_signal(signal.SIGINT)
        assert server.wait(timeout=60) == 0
    finally:
        if server.poll() is None:
            server.kill()


def test_a_task_run_finds_its_task_from_run_json_or_task(tmp_path):
    files = ROOT / "tests" / "data" / "files"
    task = tmp_path / "task"
    shutil.copytree(files, task)
    run = tmp_path / "run"
    done = cli("run", "--task", str(task / "cats.yaml"), "--programs", str(task / "cats_programs.json"),
               "--out", str(run))
    assert done.returncode == 0, done.stderr
    page = tmp_path / "page.html"
    view(run, "--out", str(page))
    shown = by_id(payload(page.read_text())["problems"], "c2")
    assert (shown["question"], shown["context"], shown["gold"]) == ("Is the following true? Tom is a dog.",
                                                                    "Tom is a cat.\nNo cat is a dog.", "B")
    (task / "cats.yaml").rename(task / "renamed.yaml")
    view(run, "--out", str(page))
    html = page.read_text()
    assert by_id(payload(html)["problems"], "c2")["question"] is None
    assert f"problem texts for cats not shown: task file {task / 'cats.yaml'} (named in" in html
    view(run, "--out", str(page), "--task", str(task / "renamed.yaml"))
    assert by_id(payload(page.read_text())["problems"], "c2")["question"] == "Is the following true? Tom is a dog."
    other = cli("view", str(run), "--task", str(ROOT / "logicpipe" / "data" / "tasks" / "folio.json"))
    assert other.returncode == 2 and other.stderr.startswith("error: task folio (") and "(it has: cats)" in other.stderr


def test_a_page_holds_a_window_of_each_datasets_problems_and_says_which(viewer_run, data_dir, tmp_path):
    whole, page = tmp_path / "whole.html", tmp_path / "page.html"
    view(viewer_run, "--out", str(whole), "--data-dir", str(data_dir), "--limit", "0")
    view(viewer_run, "--out", str(page), "--data-dir", str(data_dir), "--limit", "5", "--offset", "5")
    html = page.read_text()
    everything = payload(whole.read_text())["problems"]
    shown = payload(html)["problems"]
    for dataset, total in (("logicaldeduction", 20), ("ar-lsat", 10), ("prontoqa", 20)):
        ids = [p["id"] for p in everything if p["dataset"] == dataset]
        assert len(ids) == total and [p["id"] for p in shown if p["dataset"] == dataset] == ids[5:10]
        assert f"{dataset}: problems 6 to 10 of {total} (in run order); the metrics and charts cover all " \
               f"{total}. See others with <code>logicpipe view {viewer_run} --offset 10 --limit N</code>" in html
    assert len(html) < len(whole.read_text()) and "problems 1 to" not in whole.read_text()
    for dataset in ("ar-lsat", "logicaldeduction", "prontoqa"):  # the metrics are all problems'
        total = json.loads((viewer_run / dataset / "metrics.json").read_text())["total"]
        assert f"<td>{dataset}</td><td>{total}</td>" in html
