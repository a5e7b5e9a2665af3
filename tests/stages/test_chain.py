"""A chain of prompted steps (SymbCoT's translate, plan, solve, verify) through the CLI and the API against
the scripted server: each step asked with the earlier replies, one record per step per problem, the
answer read from the verifier (else the solver), failures typed downstream with no answer, resumption,
the reply cache and the run's identity."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from logicpipe.core.errors import BudgetSpent
from logicpipe.data.methods import load_method
from logicpipe.llm.budget import Budget
from logicpipe.report.viewer.run import load_run
from logicpipe.solvers.base import option_letters
from logicpipe.stages.config import RunConfig
from logicpipe.stages.methods import run_method
from logicpipe.stages.runner import problems_for
from logicpipe.testing import FakeOpenAI, Fault
from tests.conftest import cli

STEPS = ["translate", "plan", "solve", "verify"]
SYSTEM = "You are a helpful assistant. Make sure you carefully and fully understand the details"


@pytest.fixture(autouse=True)
def _own_cache(tmp_path, monkeypatch):
    """The reply cache of this test alone: the requests the server sees are this test's."""
    monkeypatch.setenv("LOGICPIPE_CACHE", str(tmp_path / "cache"))


def records(path):
    return [json.loads(line) for line in path.read_text().splitlines()]


def answers(data_dir, dataset, limit):
    """Per problem: the text of its gold option and of another option (a wrong answer)."""
    config = RunConfig(dataset=dataset, data_dir=data_dir, limit=limit)
    found = {}
    for problem in problems_for(config):
        letters = option_letters(problem.options)
        other = next(letter for letter in sorted(letters) if letter != problem.answer)
        truth = dataset in ("folio", "prontoqa", "proofwriter")  # SymbCoT states a truth value there, else a letter
        found[problem.id] = ((letters[problem.answer] if truth else problem.answer),
                             (letters[other] if truth else other))
    return found


def scripted(gold, verify="right", empty=(), plan_text="PLAN"):
    """Replies routed on the step (the request's purpose) and the problem: the solver states a wrong
    answer; the verifier the right one ("right"), a wrong one ("wrong") or none ("none")."""

    def reply(body):
        meta = body["_logicpipe"]
        step, pid = meta["purpose"].removeprefix("chain-"), meta["problem"]
        if (step, pid) in empty:
            return ""
        right, wrong = gold[pid]
        if step == "translate":
            return f"TRANSLATION of {pid}"
        if step == "plan":
            return f"{plan_text} for {pid}"
        if step == "solve":
            return f"SOLUTION for {pid}\nFinal answer: {{{wrong}}}"
        said = {"right": f"Final answer: {{{right}}}", "wrong": f"Final answer: {{{wrong}}}", "none": "I cannot tell."}
        return f"VERIFIED {pid}\n{said[verify]}"

    return reply


def by_step(fake):
    """The requests the server got, per step: (problem, user message)."""
    found = {step: [] for step in STEPS}
    for body in fake.requests:
        meta = body["_logicpipe"]
        found[meta["purpose"].removeprefix("chain-")].append((meta["problem"], body["messages"][-1]["content"]))
    return found


def baseline(fake, data_dir, out, dataset="folio", limit=4, *extra):
    return cli("baseline", "--method", "symbcot", "-d", dataset, "--limit", str(limit), "--data-dir", str(data_dir),
               "--out", str(out), "--model", "m", "--base-url", fake.url, *extra)


def test_symbcot_asks_each_step_with_the_earlier_replies_and_reads_the_verifier(data_dir, tmp_path):
    gold = answers(data_dir, "folio", 4)
    with FakeOpenAI(scripted(gold)) as fake:
        done = baseline(fake, data_dir, tmp_path)
        assert done.returncode == 0, done.stderr
        asked = by_step(fake)
        assert all(body["stop"] == ["------"] and body["messages"][0]["content"].startswith(SYSTEM)
                   for body in fake.requests)
        assert {step: len(sent) for step, sent in asked.items()} == dict.fromkeys(STEPS, 4)
        problems = {p.id: p for p in problems_for(RunConfig(dataset="folio", data_dir=data_dir, limit=4))}
        for pid, text in asked["translate"]:
            assert problems[pid].context in text and problems[pid].question.strip() in text and "{{" not in text
        for pid, text in asked["plan"]:
            assert f"TRANSLATION of {pid}" in text and "PLAN" not in text
        for pid, text in asked["solve"]:
            assert f"TRANSLATION of {pid}" in text and f"PLAN for {pid}" in text
        for pid, text in asked["verify"]:
            assert f"TRANSLATION of {pid}" in text and f"SOLUTION for {pid}" in text
        folder = tmp_path / "baseline-symbcot" / "folio"
        for step in STEPS:
            written = records(folder / f"chain-{step}.jsonl")
            assert [r["id"] for r in written] == list(gold) and all(r["error"] is None for r in written)
            assert {r["step"] for r in written} == {step} and written[0]["prompt_id"] == f"symbcot-folio-{step}"
        metrics = json.loads((folder / "metrics.json").read_text())
        assert metrics["total"] == 4 and metrics["accuracy"] == 100.0 and metrics["tokens"]["calls"] == 16
        before = {path.name: path.read_bytes() for path in folder.glob("*.jsonl")}
        again = baseline(fake, data_dir, tmp_path)
        assert again.returncode == 0, again.stderr
        assert len(fake.requests) == 16  # nothing asked twice, not even of the reply cache:
        assert {path.name: path.read_bytes() for path in folder.glob("*.jsonl")} == before
    pid = next(iter(gold))
    shown = cli("explain", str(tmp_path), "--id", pid, "--data-dir", str(data_dir))
    assert shown.returncode == 0, shown.stderr
    lines = shown.stdout.splitlines()
    steps = [lines.index(f"step {step} (prompt symbcot-folio-{step}):") for step in STEPS]
    assert steps == sorted(steps) and lines[steps[0] + 1].strip() == f"TRANSLATION of {pid}"
    assert f"PLAN for {pid}" in shown.stdout and f"VERIFIED {pid}" in shown.stdout and "right" in shown.stdout
    status = cli("status", str(tmp_path))
    assert "(chain-translate 4, chain-plan 4, chain-solve 4, chain-verify 4, interpret 4, evaluate 4)" in status.stdout
    (problem,) = [p for p in load_run(tmp_path).problems if p["id"] == pid]
    assert [r["title"] for r in problem["rounds"]] == [f"step {step}" for step in STEPS]
    assert problem["rounds"][2]["program"].startswith(f"SOLUTION for {pid}") and problem["correct"] is True


@pytest.mark.parametrize(("verify", "accuracy"), [("wrong", 0.0), ("none", 0.0)])
def test_a_wrong_or_silent_verifier_changes_the_answer(verify, accuracy, data_dir, tmp_path):
    """The verifier's answer is the chain's; where it states none, the solver's (here wrong) is taken."""
    gold = answers(data_dir, "folio", 3)
    with FakeOpenAI(scripted(gold, verify)) as fake:
        done = baseline(fake, data_dir, tmp_path, "folio", 3)
        assert done.returncode == 0, done.stderr
    folder = tmp_path / "baseline-symbcot" / "folio"
    assert json.loads((folder / "metrics.json").read_text())["accuracy"] == accuracy
    assert all(r["final"] is not None and r["error"] is None for r in records(folder / "interpret.jsonl"))


def test_a_failed_step_types_every_later_step_and_gives_no_answer(data_dir, tmp_path):
    gold = answers(data_dir, "folio", 3)
    first, second, third = gold
    with FakeOpenAI(scripted(gold, empty={("solve", third)})) as fake:
        # One request at a time, in problem order: the 4th request is the first problem's plan (a 500 twice).
        fake.inject(Fault(), Fault(), Fault(), Fault(status=500), Fault(status=500))
        done = baseline(fake, data_dir, tmp_path, "folio", 3, "--max-concurrency", "1", "--max-retries", "1",
                        "--max-errors", "3")
        assert done.returncode == 0, done.stderr
        asked = by_step(fake)
        assert [pid for pid, _ in asked["solve"]] == [second, third]  # the first problem's later steps not asked
        assert [pid for pid, _ in asked["verify"]] == [second]
        folder = tmp_path / "baseline-symbcot" / "folio"
        steps = {step: {r["id"]: r for r in records(folder / f"chain-{step}.jsonl")} for step in STEPS}
        assert all(len(found) == 3 for found in steps.values())
        plan = steps["plan"][first]["error"]
        assert plan["category"] == "llm" and plan["transient"]
        for step in ("solve", "verify"):
            later = steps[step][first]
            assert later["reply"] is None and later["error"]["category"] == "llm"
            assert "not asked: step 'plan' failed" in later["error"]["message"]
        assert steps["solve"][third]["error"]["message"] == "the model's reply to step 'solve' is empty"
        assert "not asked: step 'solve' failed" in steps["verify"][third]["error"]["message"]
        answered = {r["id"]: r for r in records(folder / "interpret.jsonl")}
        for pid in (first, third):  # no answer, never a guess
            assert answered[pid]["final"] is None and answered[pid]["executed"] is False
            assert answered[pid]["error"]["category"] == "llm"
        assert answered[second]["final"] is not None
        metrics = json.loads((folder / "metrics.json").read_text())
        assert metrics["total"] == 3 and metrics["executed"] == 1
        listed = cli("failures", str(tmp_path))
        assert listed.returncode == 0 and first in listed.stdout and third in listed.stdout
        assert second not in listed.stdout
        shown = cli("explain", str(tmp_path), "--id", first, "--data-dir", str(data_dir))
        assert "step plan (prompt symbcot-folio-plan):\n  llm: " in shown.stdout
        assert "no answer: llm: step 'plan': " in shown.stdout
        # The plan's failure was passing: a rerun asks the first problem's plan and the steps after it, and
        # nothing else (the empty reply stands).
        sent = len(fake.requests)
        again = baseline(fake, data_dir, tmp_path, "folio", 3)
        assert again.returncode == 0, again.stderr
        assert [(b["_logicpipe"]["purpose"], b["_logicpipe"]["problem"]) for b in fake.requests[sent:]] == \
            [("chain-plan", first), ("chain-solve", first), ("chain-verify", first)]
        answered = {r["id"]: r for r in records(folder / "interpret.jsonl")}
        assert answered[first]["final"] is not None and answered[first]["error"] is None
        assert answered[third]["final"] is None


def test_a_stopped_chain_resumes_at_the_step_it_stopped_in(data_dir, tmp_path):
    gold = answers(data_dir, "folio", 2)
    spec = load_method("symbcot")
    with FakeOpenAI(scripted(gold)) as fake:
        config = RunConfig(dataset="folio", data_dir=data_dir, out=tmp_path, limit=2, model="m", base_url=fake.url)
        with pytest.raises(BudgetSpent):  # two steps' requests, then the cap
            run_method(config, spec, gate=Budget(config, max_calls=4, ledger=False))
        folder = tmp_path / "baseline-symbcot" / "folio"
        assert [len(records(folder / f"chain-{step}.jsonl")) for step in ("translate", "plan")] == [2, 2]
        assert not (folder / "chain-solve.jsonl").exists() or not records(folder / "chain-solve.jsonl")
        before = [(folder / f"chain-{step}.jsonl").read_bytes() for step in ("translate", "plan")]
        report = run_method(config, spec)
        assert [b["_logicpipe"]["purpose"] for b in fake.requests[4:]] == ["chain-solve"] * 2 + ["chain-verify"] * 2
        assert [(folder / f"chain-{step}.jsonl").read_bytes() for step in ("translate", "plan")] == before
        assert report.metrics["accuracy"] == 100.0


def test_the_reply_cache_answers_a_chain_run_again(data_dir, tmp_path):
    gold = answers(data_dir, "folio", 2)
    with FakeOpenAI(scripted(gold)) as fake:
        cache = ["--llm-cache", str(tmp_path / "cache.sqlite")]
        assert baseline(fake, data_dir, tmp_path / "one", "folio", 2, *cache).returncode == 0
        done = baseline(fake, data_dir, tmp_path / "two", "folio", 2, *cache)
        assert done.returncode == 0, done.stderr
        assert len(fake.requests) == 8
    verify = records(tmp_path / "two" / "baseline-symbcot" / "folio" / "chain-verify.jsonl")
    assert all(r["usage"]["cached_calls"] == 1 for r in verify)


def test_a_changed_prompt_is_refused_and_a_misplaced_field_caught_before_anything_runs(data_dir, tmp_path):
    from logicpipe.prompts import PromptSet

    gold = answers(data_dir, "folio", 2)
    prompts = tmp_path / "prompts"
    prompts.mkdir()
    shipped = PromptSet().get("symbcot-folio-verify")
    with FakeOpenAI(scripted(gold)) as fake:
        assert baseline(fake, data_dir, tmp_path / "out", "folio", 2).returncode == 0
        (prompts / "symbcot-folio-verify.txt").write_text(
            f"{shipped.system}\n=== user ===\nCheck again: {{{{translate}}}}\n{{{{solve}}}}\n")
        changed = baseline(fake, data_dir, tmp_path / "out", "folio", 2, "--prompts", str(prompts))
        assert changed.returncode == 2 and "chain.prompts differ" in changed.stderr
        (prompts / "symbcot-folio-translate.txt").write_text("S\n=== user ===\n{{context}} {{question}} {{plan}}\n")
        sent = len(fake.requests)
        early = baseline(fake, data_dir, tmp_path / "new", "folio", 2, "--prompts", str(prompts))
        assert early.returncode == 2 and "uses {{plan}}, which is a later step's reply" in early.stderr
        assert len(fake.requests) == sent and not (tmp_path / "new" / "baseline-symbcot").exists()


def test_a_step_may_use_every_field_a_problem_fills(data_dir, tmp_path):
    # The chain's check once listed four fields by hand and refused {{premises}}, which problem_fields fills.
    from logicpipe.prompts import PROBLEM_FIELDS

    gold = answers(data_dir, "folio", 2)
    problems = {p.id: p for p in problems_for(RunConfig(dataset="folio", data_dir=data_dir, limit=2))}
    prompts = tmp_path / "prompts"
    prompts.mkdir()
    (prompts / "symbcot-folio-translate.txt").write_text(
        "S\n=== user ===\n" + "\n".join(f"{name}: {{{{{name}}}}}" for name in PROBLEM_FIELDS) + "\n")
    with FakeOpenAI(scripted(gold)) as fake:
        done = baseline(fake, data_dir, tmp_path / "out", "folio", 2, "--prompts", str(prompts))
        assert done.returncode == 0, done.stderr
        asked = by_step(fake)
    for pid, text in asked["translate"]:
        assert "{{" not in text and f"question: {problems[pid].question}" in text and "premises: " in text


@pytest.mark.parametrize("dataset", ["prontoqa", "proofwriter", "logicaldeduction", "ar-lsat"])
def test_each_datasets_prompts_are_filled(dataset, data_dir, tmp_path):
    """Every placeholder of SymbCoT's prompts is filled: the options where its code left [[CHOICES]] and
    ProntoQA's plan [[OPTIONS]] unfilled, and ProntoQA's verifier sees the original context."""
    gold = answers(data_dir, dataset, 2)
    problems = {p.id: p for p in problems_for(RunConfig(dataset=dataset, data_dir=data_dir, limit=2))}
    with FakeOpenAI(scripted(gold)) as fake:
        config = RunConfig(dataset=dataset, data_dir=data_dir, out=tmp_path, limit=2, model="m", base_url=fake.url)
        report = run_method(config, load_method("symbcot"))
        asked = by_step(fake)
    assert report.metrics["accuracy"] == 100.0
    assert all("{{" not in text and "[[" not in text for sent in asked.values() for _, text in sent)
    for pid, text in asked["translate"]:
        assert problems[pid].context in text
        if dataset in ("logicaldeduction", "ar-lsat"):
            assert problems[pid].options[-1] in text
    if dataset == "prontoqa":
        assert all(problems[pid].options[0] in text for pid, text in asked["plan"])
        assert all(problems[pid].context in text for pid, text in asked["verify"])


def test_a_step_asked_with_replies_since_redone_is_not_shown(data_dir, tmp_path):
    """The plan failed for a passing reason and was asked again, and the run stopped before the solver
    was: the solver's record of the failed plan no longer stands, for the run and its readers alike."""
    from logicpipe.stages.store import read_recorded

    gold = answers(data_dir, "folio", 1)
    spec = load_method("symbcot")
    with FakeOpenAI(scripted(gold)) as fake:
        fake.inject(Fault(), Fault(status=500))
        config = RunConfig(dataset="folio", data_dir=data_dir, out=tmp_path, limit=1, model="m", base_url=fake.url,
                           max_retries=0, max_errors="5")
        run_method(config, spec)
        folder = tmp_path / "baseline-symbcot" / "folio"
        assert "not asked" in records(folder / "chain-solve.jsonl")[0]["error"]["message"]
        with pytest.raises(BudgetSpent):
            run_method(config, spec, gate=Budget(config, max_calls=1, ledger=False))
        (trajectory,) = read_recorded(folder, []).trajectories
        assert list(trajectory.steps) == ["translate", "plan"] and trajectory.steps["plan"].error is None
        assert trajectory.interpreted is None  # the answer read from the failed chain is stale too


def test_a_users_own_chain_runs_the_same_way_with_epochs(data_dir, tmp_path):
    """A spec file with two steps of its own and prompts in a --prompts folder: nothing in the chain is
    SymbCoT's; each epoch's run lies in OUT/epoch-K/baseline-<method>/."""
    spec = {"name": "mine", "title": "Draft, then answer", "citation": "none", "solver": None, "baseline": "chain",
            "steps": [{"name": "draft", "prompt": "mine-draft"}, {"name": "final", "prompt": "mine-final",
                                                                 "answers": True}],
            "temperature": 0.5, "backup": "none"}
    (tmp_path / "mine.json").write_text(json.dumps(spec))
    prompts = tmp_path / "prompts"
    prompts.mkdir()
    (prompts / "mine-draft.txt").write_text("Draft.\n=== user ===\n{{context}}\n{{question}}\n{{options}}\n")
    (prompts / "mine-final.txt").write_text("Answer.\n=== user ===\nYour draft: {{draft}}\nEnd with Final answer: {X}\n")
    gold = answers(data_dir, "prontoqa", 2)

    def reply(body):
        meta = body["_logicpipe"]
        if meta["purpose"] == "chain-draft":
            return f"DRAFT {meta['problem']}"
        assert f"Your draft: DRAFT {meta['problem']}" in body["messages"][-1]["content"]
        return f"Final answer: {{{gold[meta['problem']][0]}}}"

    with FakeOpenAI(reply) as fake:
        done = cli("baseline", "--method", str(tmp_path / "mine.json"), "-d", "prontoqa", "--limit", "2",
                   "--data-dir", str(data_dir), "--out", str(tmp_path / "out"), "--model", "m", "--base-url", fake.url,
                   "--prompts", str(prompts), "--epochs", "2", "--temperature", "0.5")
        assert done.returncode == 0, done.stderr
        assert len(fake.requests) == 8
    summary = json.loads((tmp_path / "out" / "baseline-mine" / "epochs-prontoqa.json").read_text())
    assert summary["epochs"] == 2 and summary["folders"][1] == str(tmp_path / "out" / "epoch-2" / "baseline-mine" / "prontoqa")
    for folder in summary["folders"]:
        assert json.loads((Path(folder) / "metrics.json").read_text())["accuracy"] == 100.0
        assert [len(records(Path(folder) / f"chain-{step}.jsonl")) for step in ("draft", "final")] == [2, 2]


TFU = ["A) True", "B) False", "C) Uncertain"]
# What each of SymbCoT's steps is given, as its code fills the prompts.
USES = {"translate": {"context", "question"}, "plan": {"translate"}, "solve": {"translate", "plan"},
        "verify": {"translate", "solve"}}


@pytest.mark.parametrize(("reply", "options", "closed", "letter"), [
    ("Step 9: conclude.\n\nFinal answer: {false}", TFU, False, "B"),
    ("Final answer: {Unknown}.", TFU, False, "C"),  # a truth value matched to the option of that text
    ("   - Final Answer: {G}", [f"{x}) x" for x in "ABCDEFG"], False, "G"),  # LogicalDeduction's own case
    ("The correct answer is:\n\nFinal answer: {B}", [f"{x}) x" for x in "ABCDE"], False, "B"),
    ("so it is {true} after all; Final answer: {false}", TFU, False, "B"),  # the cue first, then braces
    ("the statement is {true}", TFU, False, "A"),  # no cue: the first braced word, as SymbCoT reads it
    ("Final answer: {unknown}", ["A) True", "B) False"], True, "B"),  # ProntoQA: closed world
    ("Final answer: {unknown}", ["A) True", "B) False"], False, None),  # no Unknown option: no answer
    ("Final answer: {true/false/unknown}", TFU, False, None),  # the instruction echoed: no default Unknown
    ("Final answer: {F}", [f"{x}) x" for x in "ABCDE"], False, None),
    ("I cannot decide.", TFU, False, None),
    ("", TFU, False, None),
])
def test_symbcots_answer_form_is_read_onto_the_options(reply, options, closed, letter):
    from logicpipe.stages.replies import read_final

    reading = read_final(reply, options, closed)
    assert reading.letter == letter
    assert (reading.reason is None) == (letter is not None)


def test_every_shipped_chain_has_a_prompt_for_each_of_its_datasets_with_the_fields_it_is_given():
    from logicpipe.data.methods import shipped
    from logicpipe.prompts import PromptSet

    prompts = PromptSet()
    chains = [spec for spec in shipped().values() if spec.steps]
    assert [spec.name for spec in chains] == ["symbcot"]
    for spec in chains:
        assert spec.datasets == ["prontoqa", "proofwriter", "folio", "logicaldeduction", "ar-lsat"]
        for dataset in spec.datasets:
            known = {"context", "question", "options"}
            for step, prompt_id in zip(spec.steps, spec.step_prompts(dataset), strict=True):
                prompt = prompts.get(prompt_id)
                assert prompt.fields <= known and prompt.system.startswith(SYSTEM), prompt_id
                known.add(step.name)
                assert USES[step.name] <= prompt.fields, prompt_id  # SymbCoT's [[CONTEXT]], [[PLAN]], [[EXECUTION]]
    refused = cli("baseline", "--method", "symbcot", "-d", "logicbench-bqa", "--model", "m", "--base-url",
                  "http://127.0.0.1:9/v1")
    assert refused.returncode == 2 and "has prompts for prontoqa, proofwriter, folio" in refused.stderr
