"""The optimisation loop through its Python API, against FakeOpenAI with a scripted model whose programs
are right when the prompt carries a principle (conftest.py): candidates are accepted, rolled back or
rejected as the design says, and the validation problems never reach the optimiser's requests."""

from __future__ import annotations

import json
import re

import pytest

from logicpipe.core.errors import DataError
from logicpipe.optimize.config import OptimizeConfig
from logicpipe.optimize.loop import optimize
from logicpipe.optimize.loss import parse_loss
from logicpipe.optimize.splits import make_splits, minibatch
from logicpipe.optimize.state import OptimizeState
from logicpipe.stages import RunConfig, problems_for
from logicpipe.testing import FakeOpenAI
from tests.optimize.conftest import GOOD, POISON

OPTIMISER = ("loss", "gradient", "optimize", "structure")


def config(fake, out, data_dir, **extra) -> OptimizeConfig:
    options = {"dataset": "prontoqa", "model": "fake", "base_url": fake.url, "data_dir": data_dir, "steps": 2,
               "batch_size": 3, "limit_val": 8, "limit_test": 4, "out": out, "llm_timeout": 5, "max_retries": 1,
               "candidates": 1, **extra}
    return OptimizeConfig(**options)


def purposes(fake, *wanted: str) -> list[dict]:
    return [r for r in fake.requests if r["_logicpipe"]["purpose"] in wanted]


def test_improving_candidate_is_accepted_and_an_unchanged_rewrite_rejected(scripted, data_dir, tmp_path):
    with FakeOpenAI(lambda body: "") as fake:
        splits = make_splits(config(fake, tmp_path, data_dir))
    batches = [minibatch(splits, step, 3, 0) for step in (1, 2)]
    broken = batches[0][0]  # its programs never parse: it goes through three rounds of refinement
    model = scripted(rewrites={"principles": [f"- {GOOD}"]}, broken={broken})
    with FakeOpenAI(model) as fake:
        settings = config(fake, tmp_path, data_dir)
        result = optimize(settings)
    first, second = result.candidates
    assert first.kind == "prompt" and (first.prompt_id, first.component) == ("prontoqa", "principles")
    assert first.status == "accepted" and first.paired is not None and first.paired.mean > 0
    assert first.paired.losses == 0 and first.val_score == 1.0 and first.base_score is not None
    assert first.base_score < 1.0
    # Step 2's gradients blame the principles again (they say "check"); the rewriter gave back the text
    # it has now, three times: nothing to validate.
    assert second.component == "principles" and second.status == "rejected" and second.attempts == 3
    assert second.reason == "the rewrite changed nothing"
    assert len([r for r in purposes(fake, "optimize") if "Component to rewrite: principles" in
                r["messages"][-1]["content"]]) == 4
    assert [s.step for s in result.steps] == [0, 1, 2]
    assert [s.val_score for s in result.steps] == [first.base_score, 1.0, 1.0]
    assert result.steps[1].accepted == first.params_hash and result.steps[2].accepted is None
    assert result.best_hash == result.current_hash == first.params_hash != result.start_hash
    assert GOOD in (result.best_dir / "prontoqa.txt").read_text()
    saved = OptimizeState(tmp_path).current()
    assert saved is not None and saved.step == 2 and saved.splits["carved"] is True
    # The judge saw the gold answers (supervised), one loss and four gradients per training problem per step.
    losses = purposes(fake, "loss")
    assert len(losses) == 6 and all("Gold answer" in r["messages"][-1]["content"] for r in losses)
    # Backward, node by node, each conditioned on the one downstream of it; refine only where it repaired.
    assert len(purposes(fake, "gradient")) == 3 * 3 * 2 + sum(broken in batch for batch in batches)
    gradients = [g for g in OptimizeState(tmp_path).read_gradients() if g.step == 1]
    chain = [(g.node, g.downstream) for g in gradients if g.id == broken]
    assert chain == [("interpret", None), ("solve", "interpret"), ("refine", "solve"), ("formulate", "refine")]
    other = batches[0][1]
    chain = [(g.node, g.downstream) for g in gradients if g.id == other]
    assert chain == [("interpret", None), ("solve", "interpret"), ("formulate", "solve")]
    formulate = next(r for r in purposes(fake, "gradient")
                     if r["_logicpipe"]["problem"] == broken and "Step: formulate" in r["messages"][-1]["content"])
    assert "Feedback given to the next step (refine)" in formulate["messages"][-1]["content"]
    # Held-out problems never reach the judge, the gradients or the optimiser: not by id, not by text.
    contexts = {pid: model.problems[pid].context for pid in splits.val}
    for request in purposes(fake, *OPTIMISER):
        assert request["_logicpipe"]["problem"] not in contexts
        text = json.dumps(request["messages"])
        assert not any(json.dumps(context)[1:-1] in text for context in contexts.values())
    assert {r["_logicpipe"]["problem"] for r in losses} <= set(splits.train)


def test_worse_candidate_is_rolled_back_and_a_dropped_variable_rejected(scripted, data_dir, tmp_path):
    # A user's own template that fits no component layout: it is trained as one piece.
    start = tmp_path / "start"
    start.mkdir()
    template = ("Write a logic program for the problem.\n\n\n=== user ===\nContext: {{context}}\n"
                "Question: {{question}}\nProgram:\n")
    (start / "prontoqa.txt").write_text(template)
    poisoned = template.replace("for the problem.", f"for the problem. {POISON}")
    dropped = template.replace("Question: {{question}}\n", "")
    model = scripted(rewrites={"description": [poisoned, dropped]})
    with FakeOpenAI(model) as fake:
        result = optimize(config(fake, tmp_path / "out", data_dir, prompts=start))
    worse, broken = result.candidates
    assert worse.status == "rolled_back" and worse.paired is not None and worse.paired.mean < 0
    assert worse.val_score is not None and worse.base_score is not None and worse.val_score < worse.base_score
    assert worse.params_hash != result.start_hash
    assert broken.status == "rejected" and broken.attempts == 3
    assert broken.reason == "variables dropped: {{question}}"
    assert result.current_hash == result.best_hash == result.start_hash
    assert [s.accepted for s in result.steps] == [None, None, None]
    assert result.steps[1].val_score == result.steps[0].val_score
    # The rolled-back candidate was stored all the same, and runs never used it after its validation.
    assert POISON in (tmp_path / "out" / "prompts" / worse.params_hash / "prontoqa.txt").read_text()
    later = [r for r in purposes(fake, "formulate") if POISON in json.dumps(r["messages"])]
    assert len(later) == 8  # the validation problems, once
    # Step 2's optimiser was told which rewrite validation had rolled back.
    step2 = [r for r in purposes(fake, "optimize") if "training batch of step 2" in r["messages"][-1]["content"]]
    assert step2 and "did not do better on held-out problems" in step2[0]["messages"][-1]["content"]
    # ... with its validation score and the one it had to beat (OPRO-style), beside its text.
    shown = f'<tried score="{worse.val_score:.3f}" against="{worse.base_score:.3f}">\n{poisoned}'
    assert shown in step2[0]["messages"][-1]["content"]


def test_structure_optimiser_only_takes_changes_from_the_menu(scripted, data_dir, tmp_path):
    proposals = ["more samples, please", json.dumps({"field": "num_samples", "value": 4}),
                 json.dumps({"field": "max_rounds", "value": 1})]
    model = scripted(rewrites={"principles": [f"- {GOOD}"]}, structure=proposals)
    with FakeOpenAI(model) as fake:
        result = optimize(config(fake, tmp_path, data_dir, structure=True, steps=3))
    prompt, rewrite, structure = result.candidates  # every third step proposes a structure change
    assert prompt.status == "accepted" and rewrite.kind == "prompt" and rewrite.status == "rejected"
    assert structure.kind == "structure" and structure.attempts == 3 and structure.change == {"max_rounds": 1}
    # One refinement round instead of three changes nothing here (every program executes): not kept.
    assert structure.status == "rolled_back" and structure.structure is not None
    assert structure.structure["max_rounds"] == 1
    assert len(purposes(fake, "structure")) == 3
    assert "is not on the menu" in purposes(fake, "structure")[2]["messages"][-1]["content"]


def test_unsupervised_judge_sees_no_gold_answer_and_a_bad_loss_reply_is_a_record(scripted, data_dir, tmp_path):
    with FakeOpenAI(lambda body: "") as fake:
        unjudged = minibatch(make_splits(config(fake, tmp_path, data_dir)), 1, 3, 0)[0]
    model = scripted(rewrites={"principles": [f"- {GOOD}"]}, unjudged={unjudged})
    with FakeOpenAI(model) as fake:
        result = optimize(config(fake, tmp_path, data_dir, steps=1, supervised=False))
    losses = purposes(fake, "loss")
    assert losses and not any("Gold answer" in json.dumps(r["messages"]) for r in losses)
    # Without gold answers validation counts executed programs: every program runs, so no gain shows.
    assert result.steps[0].val_score == 1.0
    assert result.candidates[0].status == "rolled_back"
    recorded = OptimizeState(tmp_path).read_losses()
    assert len(recorded) == 3 and all(not loss.supervised for loss in recorded)
    # A judge's reply without the JSON asked for is a record with no score and the reason, not a crash;
    # that problem gets no gradients.
    bad = next(loss for loss in recorded if loss.id == unjudged)
    assert bad.score is None and bad.error == "the judge's reply holds no JSON object"
    assert bad.critique == "It looks fine to me." and bad.outcome.id == unjudged
    assert unjudged not in {r["_logicpipe"]["problem"] for r in purposes(fake, "gradient")}
    assert len(purposes(fake, "gradient")) == 2 * 3


@pytest.mark.parametrize(("reply", "why"), [
    ('{"score": 7, "critique": "fine"}', None),
    ('Here it is: {"score": 7.5, "critique": "fine"} done', None),
    ('{"score": 11, "critique": "x"}', "score 11 is not a number from 0 to 10"),
    ('{"score": true, "critique": "x"}', "score True is not a number from 0 to 10"),
    ('{"score": 5, "critique": ', "holds no JSON object"),
    ("[1, 2]", "holds no JSON object"),
    ('{"score": "7"}', "score '7' is not a number from 0 to 10"),
])
def test_judge_replies_parse_or_say_why(reply, why):
    if why is None:
        score, critique = parse_loss(reply)
        assert 7 <= score <= 7.5 and critique == "fine"
    else:
        with pytest.raises(ValueError, match=re.escape(why)):
            parse_loss(reply)


def test_a_run_covers_only_the_ids_it_is_given(data_dir):
    chosen = RunConfig(dataset="prontoqa", data_dir=data_dir, ids=["ProntoQA_9", "ProntoQA_2"])
    assert [p.id for p in problems_for(chosen)] == ["ProntoQA_2", "ProntoQA_9"]  # in the split's order
    with pytest.raises(DataError, match="no problem 'nosuch' in prontoqa/dev"):
        problems_for(RunConfig(dataset="prontoqa", data_dir=data_dir, ids=["ProntoQA_2", "nosuch"]))
