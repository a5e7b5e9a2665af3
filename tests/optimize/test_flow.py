"""The information flow of a step, checked on the requests the scripted server recorded: each link
carries text that only the link before it could have written (a critique or a gradient naming its
problem and node), so cutting any one link makes its test fail (each was cut once and seen to fail).

- the judge's critique of a trajectory reaches every gradient request of that trajectory, and no other;
- each node's gradient reaches the gradient request of the node upstream of it (backward);
- the gradients of the rewritten prompt's node reach the rewrite request."""

from __future__ import annotations

import json
import re

import pytest

from logicpipe.optimize.loop import optimize
from logicpipe.optimize.splits import make_splits, minibatch
from logicpipe.testing import FakeOpenAI
from tests.optimize.conftest import GOOD, ScriptedOptimizer
from tests.optimize.test_loop import config

_NODE = re.compile(r"\n\nStep: (\w+)\.")
# Backward order: the node whose gradient each node's request must carry.
DOWNSTREAM = {"solve": "interpret", "refine": "solve"}


class Tagged:
    """The scripted model, with a critique and gradients that say which problem and node they are for."""

    def __init__(self, model):
        self.model = model

    def __call__(self, body: dict) -> str:
        meta = body["_logicpipe"]
        text = body["messages"][-1]["content"]
        if meta["purpose"] == "loss":
            return json.dumps({"score": 3, "critique": f"CRITIQUE-{meta['problem']}"})
        if meta["purpose"] == "gradient":
            return f"GRADIENT-{meta['problem']}-{node_of(text)}"
        return self.model(body)


def node_of(text: str) -> str:
    found = _NODE.search(text)
    assert found is not None, text
    return found.group(1)


@pytest.fixture(scope="module")
def step(data_dir, tmp_path_factory):
    """One optimisation step, run once for the three tests: the batch and the requests it made."""
    tmp_path = tmp_path_factory.mktemp("flow")
    with FakeOpenAI(lambda body: "") as fake:
        batch = minibatch(make_splits(config(fake, tmp_path, data_dir)), 1, 3, 0)
    # The first problem's programs never parse, so its trajectory goes through refine as well.
    model = Tagged(ScriptedOptimizer(data_dir, rewrites={"principles": [f"- {GOOD}"]}, broken={batch[0]}))
    with FakeOpenAI(model) as fake:
        optimize(config(fake, tmp_path, data_dir, steps=1))
    gradients = [r for r in fake.requests if r["_logicpipe"]["purpose"] == "gradient"]
    rewrites = [r for r in fake.requests if r["_logicpipe"]["purpose"] == "optimize"]
    return batch, gradients, rewrites


def test_the_critique_reaches_the_gradients_of_its_trajectory(step):
    batch, gradients, _ = step
    assert {r["_logicpipe"]["problem"] for r in gradients} == set(batch)
    for request in gradients:
        text = request["messages"][-1]["content"]
        mine = request["_logicpipe"]["problem"]
        assert f"CRITIQUE-{mine}" in text
        assert not [pid for pid in batch if pid != mine and f"CRITIQUE-{pid}" in text]


def test_each_gradient_reaches_the_node_upstream(step):
    batch, gradients, _ = step
    seen = set()
    for request in gradients:
        text = request["messages"][-1]["content"]
        pid, node = request["_logicpipe"]["problem"], node_of(text)
        seen.add((pid, node))
        refined = pid == batch[0]
        after = DOWNSTREAM.get(node) if node != "formulate" else ("refine" if refined else "solve")
        carried = re.findall(r"GRADIENT-\S+", text)
        assert carried == ([f"GRADIENT-{pid}-{after}"] if after else []), (pid, node, carried)
    assert (batch[0], "refine") in seen and len(seen) == 3 * 3 + 1


def test_the_gradients_reach_the_rewrite(step):
    batch, _, rewrites = step
    assert rewrites
    text = rewrites[0]["messages"][-1]["content"]
    assert "Component to rewrite: principles" in text
    # The formulate prompt is rewritten: every formulate gradient of the batch is in the request.
    assert all(f"GRADIENT-{pid}-formulate" in text for pid in batch)
    assert not re.findall(r"GRADIENT-\S+-(?:interpret|solve)", text)
