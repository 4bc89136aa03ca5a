#!/usr/bin/env bash
# One-time set-up on a fresh machine: a virtual environment in .venv with seqbench, its extras
# and the dev tools, plus Debian's Fashion-MNIST package. Safe to re-run.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
[ -x .venv/bin/python ] || "$PY" -m venv .venv
PIP=(.venv/bin/python -m pip install -q --disable-pip-version-check)
# The CPU build of torch first: a bare "torch" requirement would pull a multi-GB CUDA build.
.venv/bin/python -c "import torch" 2>/dev/null || "${PIP[@]}" torch==2.13.0
"${PIP[@]}" -e '.[all,ray,dev]'
# The example plugin (a model and a task from another package, docs/plugins.md), installed as a
# user installs one: the test-suite trains, stresses and sweeps it.
"${PIP[@]}" ./examples/seqbench-example-plugin
# Debian's packages: Fashion-MNIST (the fashion tasks) and Chromium (the dashboard's browser
# tests, driven by Playwright from the dev extra; nothing is downloaded by Playwright itself)
missing=()
[ -d /usr/share/datasets/fashion-mnist ] || missing+=(dataset-fashion-mnist)
command -v chromium >/dev/null || missing+=(chromium)
if [ ${#missing[@]} -gt 0 ] && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}") \
    >/dev/null 2>&1 || echo "note: could not install ${missing[*]} (the fashion tasks and the ui tests say so)" >&2
fi
echo "seqbench is set up in .venv: run .venv/bin/seqbench --help" >&2
