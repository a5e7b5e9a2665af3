"""One real model for the session: SmolLM2-135M-Instruct on llama-cpp-python's server, 2 threads.

Without the `llm` extra the tests skip with the reason; under CI (CI=true) they fail instead, so a
broken install can never pass as a green run."""

import os

import pytest

from logicpipe.testing.llamacpp import N_CTX, LlamaServer, missing, smollm2_gguf


@pytest.fixture(scope="session")
def llama_server(tmp_path_factory):
    reason = missing()
    if reason is not None:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(f"CI=true and the real-model tests cannot run: {reason}", pytrace=False)
        pytest.skip(reason)
    model = smollm2_gguf()
    assert model is not None
    log = tmp_path_factory.mktemp("llama-server") / "server.log"
    with LlamaServer(model, threads=2, n_ctx=N_CTX, log=log) as server:
        yield server
