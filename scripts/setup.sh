#!/usr/bin/env bash
# Creates .venv and installs factsite with its test tools. Safe to run again: it only installs what changed.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PYTHON" -m venv .venv
fi
stamp=.venv/.factsite-installed
if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ]; then
  .venv/bin/pip install -q -U pip
  # torch first and pinned: with it in place, sentence-transformers does not pull a CUDA build.
  .venv/bin/pip install -q "torch==2.13.0"
  .venv/bin/pip install -q -e ".[test]"
  touch "$stamp"
fi
# The embedding model's ONNX export (var/models, or EMBEDDING_CACHE_DIR), built once here rather than
# by the first worker; a failure only means the first dense run builds it (or falls back to torch).
.venv/bin/python -m verification.clients.embeddings || echo "warning: the embedding model's ONNX export was not built"
