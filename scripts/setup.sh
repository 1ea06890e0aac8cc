#!/usr/bin/env bash
# Create .venv with every pinned dependency (idempotent). torch 2.13.0 (local CPU wheel) goes first,
# otherwise pip would pull a multi-GB CUDA build. Set HUBLAB_NO_LLAMA=1 to skip the ~8 min
# llama-cpp-python source build (the embedded-LLM mode and its tests are then skipped).
set -euo pipefail
cd "$(dirname "$0")/.."
PY="${PYTHON:-python3}"
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
VPIP=".venv/bin/python -m pip"
$VPIP install -q --upgrade pip 2>&1 | grep -v "^WARNING: Location" || true
$VPIP install -q torch==2.13.0 2>&1 | grep -v "^WARNING: Location" || true
echo "torch==2.13.0" > .venv/torch-constraint.txt
$VPIP install -q -c .venv/torch-constraint.txt -r requirements.txt 2>&1 | grep -v "^WARNING: Location" || true
$VPIP install -q -c .venv/torch-constraint.txt -e ".[dev]" 2>&1 | grep -v "^WARNING: Location" || true
if [ "${HUBLAB_NO_LLAMA:-0}" != "1" ]; then
  $VPIP install -q -c .venv/torch-constraint.txt -e ".[llama]" 2>&1 | grep -v "^WARNING: Location" || true
fi
.venv/bin/python -c "import torch, hublab; print('hublab env ready: torch', torch.__version__)"
