#!/usr/bin/env bash
# Everything logicpipe needs on a fresh Debian/Ubuntu machine: SWI-Prolog and bubblewrap from apt, then a virtual
# environment with the package and its test tools. Safe to run again; it skips what is already there.
set -euo pipefail
cd "$(dirname "$0")/.."

# bubblewrap is the OS jail around the KB and LP engines (docs/kb.md, the third layer); without it they
# run with the language layers alone and say so.
if ! command -v swipl >/dev/null 2>&1 || ! command -v bwrap >/dev/null 2>&1; then
  SUDO=""
  if [ "$(id -u)" != 0 ]; then SUDO="sudo"; fi
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq swi-prolog-nox bubblewrap >/dev/null
fi

PYTHON="${PYTHON:-python3}"
if [ ! -x .venv/bin/python ]; then
  "$PYTHON" -m venv .venv
fi
if [ ! -f .venv/.installed ] || [ pyproject.toml -nt .venv/.installed ]; then
  .venv/bin/python -m pip install -q --upgrade pip
  .venv/bin/python -m pip install -q -e '.[test]'
  touch .venv/.installed
fi
# An editable install leaves the package's own modules to be compiled when first imported, and never
# where PYTHONDONTWRITEBYTECODE is set: then every command would compile them again (about 0.1 s of
# each start). Compiled once here; an unchanged module is skipped.
.venv/bin/python -m compileall -q logicpipe >/dev/null
