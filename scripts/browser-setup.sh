#!/usr/bin/env bash
# What the browser tests (pytest -m browser) need: Debian's chromium and its driver from apt, and the
# package's `browser` extra (selenium) in .venv. Safe to run again; it skips what is already there.
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v chromium >/dev/null 2>&1 || ! command -v chromedriver >/dev/null 2>&1; then
  SUDO=""
  if [ "$(id -u)" != 0 ]; then SUDO="sudo"; fi
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq chromium chromium-driver >/dev/null
fi

if [ ! -x .venv/bin/python ]; then
  bash scripts/setup.sh
fi
if ! .venv/bin/python -c "import selenium" >/dev/null 2>&1; then
  .venv/bin/python -m pip install -q -e '.[test,browser]'
fi
