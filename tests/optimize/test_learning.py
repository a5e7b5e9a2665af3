"""More learning per call, checked on the requests and files of real runs against the scripted server:
demonstrations harvested from correct runs (never from wrong ones, never written by the model), several
candidates raced by successive halving, the component chosen from what the gradients blame, and the
cost-aware acceptance of --objective."""

from __future__ import annotations

import json
import math

import pytest

from logicpipe.optimize.loop import optimize
from logicpipe.optimize.race import slices
from logicpipe.optimize.splits import make_splits, minibatch
from logicpipe.testing import FakeOpenAI
from tests.optimize.conftest import GOOD, POISON, ScriptedOptimizer
from tests.optimize.test_cli import in_process, optimize_args
from tests.optimize.test_flow import node_of
from tests.optimize.test_loop import config

SHORT = "Translate the problem into a logic program."
# The shipped description with the fix that makes every program right: more tokens, better answers.
LONG = f"You translate logic problems into a logic program. Write only the program, no explanation. {GOOD}"


class Steered:
    """The scripted model, with the judge's score and the gradients chosen per test."""

    def __init__(self, model: ScriptedOptimizer, score=None, gradient=None):
        self.model, self.score, self.gradient = model, score, gradient

    def __call__(self, body: dict) -> str:
        meta = body["_logicpipe"]
        if meta["purpose"] == "loss" and self.score is not None:
            return json.dumps({"score": self.score(meta["problem"]), "critique": "see the program"})
        if meta["purpose"] == "gradient" and self.gradient is not None:
            return self.gradient(meta["problem"], node_of(body["messages"][-1]["content"]))
        return self.model(body)


def first_batch(data_dir, tmp_path) -> list[str]:
    with FakeOpenAI(lambda body: "") as fake:  # the same splits and seed as optimize_args and config()
        return minibatch(make_splits(config(fake, tmp_path / "cut", data_dir)), 1, 3, 0)


def candidates(out) -> list[dict]:
    return [json.loads(line) for line in (out / "candidates.jsonl").read_text().splitlines()]


@pytest.mark.parametrize("unsupervised", [False, True])
def test_the_demonstration_is_the_program_of_a_correct_run(unsupervised, scripted, data_dir, tmp_path, capsys):
    batch = first_batch(data_dir, tmp_path)
    model = scripted()
    right = [pid for pid in batch if model.lucky(pid)]
    wrong = [pid for pid in batch if not model.lucky(pid)]
    assert right and wrong  # the batch has both: the test below means something
    # The judge scores the wrong runs best, so a harvest that ignored the gold answer would take one of them;
    # the gradients ask for an example, so the demonstrations are the most blamed component.
    steered = Steered(model, score=lambda pid: 9 if pid in wrong else 1,
                      gradient=lambda pid, node: "Add a worked example like this problem." if node == "formulate"
                      else "No change needed.")
    out = tmp_path / "out"
    with FakeOpenAI(steered) as fake:
        extra = ["--candidates", "1", *(["--unsupervised"] if unsupervised else [])]
        done = in_process(capsys, *optimize_args(fake, data_dir, out, *extra))
    assert done.returncode == 0, done.stderr
    demo, = [c for c in candidates(out) if c["component"] == "demonstrations"]
    assert demo["attempts"] == 0 and demo["status"] in ("accepted", "rolled_back")
    # The model never wrote a demonstration.
    assert not [r for r in fake.requests if r["_logicpipe"]["purpose"] == "optimize"]
    text = (out / "prompts" / demo["params_hash"] / "prontoqa.txt").read_text()
    start = (out / "prompts" / json.loads((out / "state.json").read_text())["start_hash"] / "prontoqa.txt").read_text()
    added = text.replace(start.split("\n\nNow the problem.")[0], "")
    source = demo["source"]
    right_program, wrong_program = model.pair(source)
    # Supervised: the program of a run that gave the gold answer (the best-judged such run), never a wrong
    # one. Unsupervised (no gold answers): the best-judged run whose program executed, here a wrong one.
    assert source == (wrong[0] if unsupervised else right[0])
    shown = wrong_program if unsupervised else right_program
    assert f"Example.\nContext: {model.problems[source].context}" in added
    assert f"Program:\n{shown.strip()}\n\nNow the problem." in text
    if not unsupervised:
        assert not [pid for pid in batch if model.pair(pid)[1].strip() in text]


def test_candidates_are_raced_by_successive_halving(scripted, data_dir, tmp_path):
    # The gradients say "check" (principles, blamed most), then demonstrations and description tie.
    model = scripted(rewrites={"principles": [f"- {POISON}"],
                               "description": [f"You translate logic problems into a logic program. {GOOD}"]})
    with FakeOpenAI(model) as fake:
        result = optimize(config(fake, tmp_path, data_dir, steps=1, candidates=3))
    by_component = {c.component: c for c in result.candidates}
    assert set(by_component) == {"principles", "demonstrations", "description"}
    step = result.steps[1]
    # 3 candidates on 8 problems: rungs of 2 and 4 problems, then the survivor on all 8.
    assert slices(3, 8) == [2, 4] and [r.problems for r in step.race] == [2, 4]
    assert list(step.race[0].scores) == ["prontoqa/principles", "prontoqa/demonstrations", "prontoqa/description"]
    assert len(step.race[0].kept) == 2 and len(step.race[1].kept) == 1
    assert step.race[1].kept == ["prontoqa/description"]
    poisoned = by_component["principles"]
    assert poisoned.status == "dropped" and poisoned.problems is not None and poisoned.problems < 8
    assert poisoned.val_score == 0.0 and "raced out" in (poisoned.reason or "")
    # A raced-out candidate ran only on its slice of validation.
    sent = [r for r in fake.requests if r["_logicpipe"]["purpose"] == "formulate" and POISON in json.dumps(r)]
    assert len(sent) == poisoned.problems
    survivor = by_component["description"]
    assert survivor.status == "accepted" and survivor.problems == 8 and survivor.rung == 2
    assert survivor.val_score == 1.0 and step.accepted == survivor.params_hash == result.best_hash
    # Each dropped candidate lost to the survivor on the rung it left.
    for dropped in (c for c in result.candidates if c.status == "dropped"):
        rung = step.race[dropped.rung or 0]
        label = f"prontoqa/{dropped.component}"
        assert label not in rung.kept and rung.scores[label] <= min(rung.scores[k] for k in rung.kept)
    assert math.isclose(slices(2, 30)[0], 15) and slices(1, 30) == []


def test_the_component_is_the_one_the_gradients_blame(scripted, data_dir, tmp_path):
    batch = first_batch(data_dir, tmp_path)
    # Formulate did its part; the repair of the first problem's broken program is blamed, by its grammar.
    steered = Steered(scripted(rewrites={"format": ["Keep the grammar of the language."]}, broken={batch[0]}),
                      gradient=lambda pid, node: ("The grammar of the repaired program is wrong."
                                                  if node == "refine" else "No change needed."))
    with FakeOpenAI(steered) as fake:
        result = optimize(config(fake, tmp_path / "out", data_dir, steps=1))
    candidate, = result.candidates
    assert (candidate.prompt_id, candidate.component) == ("refine", "format")
    step = result.steps[1]
    assert step.choice is not None and step.choice.startswith("refine/format is blamed most")
    assert "formulate 0, refine 0.7" in step.choice
    assert not [key for key in step.blame if key.startswith("prontoqa/")]
    assert step.blame["refine/format"] > step.blame["refine/description"] > 0
    rewrite, = [r for r in fake.requests if r["_logicpipe"]["purpose"] == "optimize"]
    assert "Component to rewrite: format" in rewrite["messages"][-1]["content"]
    assert "The whole prompt (refine)" in rewrite["messages"][-1]["content"]


@pytest.mark.parametrize(("objective", "description", "status", "reason"), [
    ("accuracy", SHORT, "accepted", "as accurate on validation at measurably fewer tokens"),
    ("cost", SHORT, "accepted", "measurably fewer tokens and not worse on validation"),
    ("accuracy", LONG, "accepted", "better on validation"),
    ("cost", LONG, "rolled_back",
     "not measurably fewer tokens on validation"),
])
def test_objective_weighs_tokens(objective, description, status, reason, scripted, data_dir, tmp_path, capsys):
    steered = Steered(scripted(rewrites={"description": [description]}),
                      gradient=lambda pid, node: "The task description should be shorter.")
    out = tmp_path / "out"
    with FakeOpenAI(steered) as fake:
        done = in_process(capsys, *optimize_args(fake, data_dir, out, "--candidates", "1", "--objective", objective))
    assert done.returncode == 0, done.stderr
    candidate, = candidates(out)
    assert candidate["component"] == "description"
    assert (candidate["status"], candidate["reason"]) == (status, reason)
    saved = candidate["tokens_saved"]
    assert (saved["mean"] > 0) == (description == SHORT)
    assert math.isclose(saved["mean"], candidate["base_tokens"] - candidate["tokens"])
    if description == SHORT:
        assert candidate["paired"]["mean"] == 0  # equal accuracy: kept for its cost alone
    report = json.loads((out / "report.json").read_text())
    assert report["objective"] == objective and report["candidates"] == 1
    assert f"Objective: {objective}" in (out / "report.md").read_text()


def test_the_optimiser_prompts_are_templates_a_folder_overrides(scripted, data_dir, tmp_path, capsys):
    from logicpipe.prompts import PromptSet

    folder = tmp_path / "prompts"
    folder.mkdir()
    shipped = PromptSet().get("opt-judge")
    (folder / "opt-judge.txt").write_text(f"JUDGE-OVERRIDE {shipped.system}\n=== user ===\n{{{{trajectory}}}}\n")
    out = tmp_path / "out"
    with FakeOpenAI(scripted(rewrites={"principles": [f"- {GOOD}"]})) as fake:
        done = in_process(capsys, *optimize_args(fake, data_dir, out, "--candidates", "1", "--prompts", str(folder)))
    assert done.returncode == 0, done.stderr
    by_purpose = {p: [r for r in fake.requests if r["_logicpipe"]["purpose"] == p] for p in ("loss", "gradient",
                                                                                             "optimize")}
    assert all(r["messages"][0]["content"].startswith("JUDGE-OVERRIDE") for r in by_purpose["loss"])
    # The others are the shipped templates, each as its file says.
    for purpose, prompt_id in (("gradient", "opt-gradient"), ("optimize", "opt-rewrite")):
        assert by_purpose[purpose]
        assert all(r["messages"][0]["content"] == PromptSet().get(prompt_id).system for r in by_purpose[purpose])
    hashes = json.loads((out / "report.json").read_text())["optimizer_prompts"]
    assert hashes["opt-judge"] == PromptSet(folder).get("opt-judge").hash != shipped.hash
    assert hashes["opt-rewrite"] == PromptSet().get("opt-rewrite").hash
    # A template that lost a field the optimiser fills in is one line of bad input, before anything is written.
    (folder / "opt-judge.txt").write_text("Judge.\n=== user ===\nno trajectory here\n")
    with FakeOpenAI(scripted()) as fake:
        bad = in_process(capsys, *optimize_args(fake, data_dir, tmp_path / "bad", "--prompts", str(folder)))
    assert bad.returncode == 2 and bad.stderr.strip().startswith("error:") and "{{trajectory}}" in bad.stderr
    assert len(bad.stderr.strip().splitlines()) == 1 and not (tmp_path / "bad").exists()


def test_a_structure_as_accurate_for_fewer_tokens_is_kept(scripted, data_dir, tmp_path):
    with FakeOpenAI(lambda body: "") as fake:
        val = make_splits(config(fake, tmp_path / "cut", data_dir)).val
    # Programs of half the validation problems never parse, and no repair helps: the refinement rounds
    # only cost tokens. Dropping them (max_rounds 0) leaves every answer as it was.
    model = scripted(rewrites={"principles": [f"- {GOOD}"]}, structure=[json.dumps({"field": "max_rounds", "value": 0})],
                     broken=set(val[:4]))
    with FakeOpenAI(model) as fake:
        result = optimize(config(fake, tmp_path / "out", data_dir, structure=True, steps=3))
    structure = result.candidates[-1]
    assert structure.kind == "structure" and structure.change == {"max_rounds": 0}
    assert structure.paired is not None and structure.paired.mean == 0
    assert structure.tokens_saved is not None and structure.tokens_saved.mean > 0
    assert (structure.status, structure.reason) == ("accepted", "as accurate on validation at measurably fewer tokens")
    assert result.steps[3].accepted == structure.params_hash


def test_structure_menu_adds_the_semantic_check_and_the_solver_time_limit(data_dir, tmp_path):
    import hashlib

    from logicpipe.optimize.params import Structure
    from logicpipe.stages import RunConfig

    # A structure at the old fields' values keeps its old hash, so a resumed folder finds its run folders.
    old = json.dumps({"backup": "random", "max_rounds": 3, "num_samples": 1, "temperature": 0.0}, sort_keys=True,
                     separators=(",", ":"))
    assert Structure().hash == hashlib.sha256(old.encode()).hexdigest()[:12]
    changed = Structure().with_change("refine", "semantic").with_change("timeout", 15)
    assert changed.hash != Structure().hash
    assert changed.flags() == ("--num-samples 1 --temperature 0 --max-rounds 3 --backup random --refine semantic "
                               "--timeout 15")
    run = changed.apply(RunConfig(dataset="prontoqa", data_dir=data_dir, model="m", out=tmp_path))
    assert (run.refine, run.timeout) == ("semantic", 15)
    assert Structure.off_menu("timeout", 7) == "timeout=7 is not on the menu [None, 5, 15, 60]"
    assert Structure(max_rounds=0).conflict("refine", "semantic") == \
        "refine='semantic' needs max_rounds of at least 1"
    assert changed.conflict("max_rounds", 0) is not None and changed.conflict("max_rounds", 1) is None


def test_the_structure_optimiser_adds_the_semantic_check_node(scripted, data_dir, tmp_path):
    proposals = [json.dumps({"field": "timeout", "value": 7}), json.dumps({"field": "refine", "value": "semantic"})]
    model = scripted(rewrites={"principles": [f"- {GOOD}"]}, structure=proposals)
    with FakeOpenAI(model) as fake:
        result = optimize(config(fake, tmp_path / "out", data_dir, structure=True, steps=3))
    structure = result.candidates[-1]
    assert structure.kind == "structure" and structure.change == {"refine": "semantic"} and structure.attempts == 2
    assert structure.structure is not None and structure.structure["refine"] == "semantic"
    asked = [r["messages"][-1]["content"] for r in fake.requests if r["_logicpipe"]["purpose"] == "structure"]
    assert '"refine": ["error", "semantic"]' in asked[0] and "timeout=7 is not on the menu" in asked[1]
    # Validating it ran the new node: every validation program that executed was sent for revision.
    revised = {r["_logicpipe"]["problem"] for r in fake.requests if r["_logicpipe"]["purpose"] == "revise"}
    assert revised & set(make_splits(config(fake, tmp_path / "cut", data_dir)).val)
    assert structure.status in ("accepted", "rolled_back") and structure.problems == 8
