# Main job: `make reproduce`. Tests: `make test`. Both set everything up first.
VENV := .venv
PY := $(VENV)/bin/python
BIN := $(VENV)/bin
RESULTS ?= results
WORKERS ?= 2
# Tests and CI read Logic-LM's files from ../shared/logic-lm unless LOGICPIPE_DATA says otherwise.
export LOGICPIPE_DATA ?= $(if $(wildcard ../shared/logic-lm/data),$(abspath ../shared/logic-lm),)
# and the datasets beyond Logic-LM's (FOLIO v0.0's gold annotations) from ../shared/datasets unless LOGICPIPE_DATASETS
# says otherwise; without either, they are downloaded at their pinned commits (sha256-checked) and cached.
export LOGICPIPE_DATASETS ?= $(if $(wildcard ../shared/datasets/folio-v0.0),$(abspath ../shared/datasets),)
# and LINC's released outputs from ../shared/linc unless LOGICPIPE_LINC says otherwise (else a pinned download).
export LOGICPIPE_LINC ?= $(if $(wildcard ../shared/linc/outputs),$(abspath ../shared/linc),)

.PHONY: setup test test-all test-ray-nodes test-llm test-llm-smoke check lint table3 table2 reproduce benchmark clean docs docs-cli

setup:
	bash scripts/setup.sh

# Four pytest workers (pytest-xdist) on two cores: most tests wait on solver subprocesses, servers, batch
# polls and the CLI, so workers beyond the cores keep them busy. On an idle 2-core machine with a fresh
# cache the suite took 292-305 s with three and 289 s with four (and 287 against 300 s a session before);
# user CPU was the same. Tests sharing the Ray cluster, the viewer's run, the one reproduce run or a
# module's own runs stay on one worker (tests/conftest.py).
TEST_WORKERS ?= 4

test: setup
	$(PY) -m pytest -q -n $(TEST_WORKERS) --dist loadgroup

test-all: setup
	$(PY) -m pytest -q -m "not llm" -n $(TEST_WORKERS) --dist loadgroup

# Ray on two real nodes (a head and a worker node in their own network namespaces): needs root, skips
# with the reason elsewhere; about 2 minutes. `make test-all` runs it too; CI runs it after `make test`.
test-ray-nodes: setup
	$(PY) -m pytest -q -rs -m slow tests/runtime/test_ray_nodes.py

# The real-model tests: SmolLM2-135M on a local llama.cpp server (scripts/llm-setup.sh installs it).
test-llm: setup
	bash scripts/llm-setup.sh
	$(PY) -m pytest -q -m "llm and not smoke"

# A few minutes of the same: one llama.cpp server, a few constrained problems per formalism (CI runs it).
test-llm-smoke: setup
	bash scripts/llm-setup.sh
	$(PY) -m pytest -q -m smoke tests/real

lint: setup
	$(BIN)/ruff check logicpipe tests scripts
	$(BIN)/mypy

check: lint test

# MODEL=gpt-4 (with OPENAI_API_KEY, or BASE_URL for a local server) adds Table 2's Standard and CoT rows.
reproduce: setup
	$(BIN)/logicpipe reproduce --out $(RESULTS) --workers $(WORKERS) $(if $(MODEL),--model $(MODEL)) $(if $(BASE_URL),--base-url $(BASE_URL))

table3 table2: reproduce

# The CLI reference page, generated from the typer app (tests/docs/test_cli_reference.py fails when stale).
docs-cli: setup
	$(PY) scripts/cli_reference.py

# The documentation site into build/site/ (make test builds it too, into a temporary folder).
docs: setup
	$(BIN)/mkdocs build --strict --site-dir build/site

benchmark: setup
	$(PY) scripts/benchmark.py
	$(PY) scripts/benchmark_llm.py

clean:
	rm -rf $(RESULTS)/replay $(RESULTS)/table* $(RESULTS)/accuracy.png
