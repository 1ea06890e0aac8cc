#!/usr/bin/env bash
# Create .venv with the pinned dependencies (idempotent). torch 2.13.0 (local CPU wheel) goes first, otherwise pip
# would pull a multi-GB CUDA build.
#   bash scripts/setup.sh          what every LLM-free `hublab` command needs (the quick start's job): torch, the
#                                  pinned stack, hublab (editable)
#   bash scripts/setup.sh --llm    + the embedded llama.cpp (llama-cpp-python, a ~8 min compile on 2 cores) and the
#                                  bundled gemma GGUF: the `llamacpp` LLM backend and `python -m llama_cpp.server`
#   bash scripts/setup.sh --test   everything the test suite needs (.ci/run): the above with --llm, the dev tools
#                                  (pytest, pytest-xdist, ruff, psycopg2) and the Milvus 2.3.5 standalone server
#                                  (the `milvus` extra: `milvus-server`, which the server-store tests start)
# With --llm/--test the llama.cpp wheel compiles in the background while the rest installs (pip wheel into
# .venv/wheels, no venv writes), then installs from there. If it fails to build, set-up fails. HUBLAB_NO_LLAMA=1 is
# the explicit opt-out (the embedded-LLM tests then skip; under CI=true they fail instead, tests/conftest.py).
#
# One line per step; each step's full pip output goes to a log ($HUBLAB_SETUP_LOG, default .venv/setup.log),
# whose tail is printed, with the step that failed, when an install fails.
set -euo pipefail
cd "$(dirname "$0")/.."
llm=0 test=0
for a in "$@"; do
  case "$a" in
    --llm) llm=1 ;;
    --test) llm=1 test=1 ;;
    *) echo "setup: unknown option $a (use --llm or --test)" >&2; exit 2 ;;
  esac
done
[ "${HUBLAB_NO_LLAMA:-0}" = "1" ] && llm=0
PY="${PYTHON:-python3}"
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
LOG="${HUBLAB_SETUP_LOG:-.venv/setup.log}"
: > "$LOG"
VPIP=(.venv/bin/python -m pip)
LLAMA_PIN=$(sed -n 's/.*"llama-cpp-python\[server\]==\([^"]*\)".*/\1/p' pyproject.toml)

fail() {  # fail "<what>" rc log
  echo "--- last 40 lines of $3 ---" >&2
  tail -n 40 "$3" >&2
  echo "--- setup failed at: $1 (full output: $3) ---" >&2
  exit "$2"
}

step() {  # step "<what>" cmd args...: run cmd with its output in $LOG; on failure print the log's tail and stop
  local what=$1 start=$SECONDS rc=0
  shift
  printf 'setup: %-48s' "$what" >&2
  echo "=== $what: $*" >> "$LOG"
  "$@" >> "$LOG" 2>&1 || rc=$?
  if [ "$rc" -ne 0 ]; then
    printf 'FAILED (exit %s after %ss)\n' "$rc" "$((SECONDS - start))" >&2
    fail "$what" "$rc" "$LOG"
  fi
  printf 'ok (%ss)\n' "$((SECONDS - start))" >&2
}

step "pip" "${VPIP[@]}" install --upgrade pip
llama_pid=""
if [ "$llm" = 1 ] && ! .venv/bin/python -c "import llama_cpp" 2>/dev/null; then
  # the compile needs no venv writes: it runs beside the installs below (they mostly wait on downloads)
  echo "setup: llama-cpp-python $LLAMA_PIN compiling in the background (.venv/llama-build.log)" >&2
  mkdir -p .venv/wheels
  # x86-64: a portable build (AVX2, no AVX-512 or AMX), compiled here (--no-cache-dir: pip's wheel cache is keyed by
  # the source, not by these flags or the CPU it was built on). A machine may advertise instructions its hypervisor
  # traps: a native build on a VM advertising AMX died with SIGILL in libggml-cpu on the first longer prompt.
  # Without the multimodal library (LLAVA_BUILD=OFF: libmtmd, loaded only by llama-cpp-python's vision chat
  # handlers, which HubLab does not use): less to compile on CI's critical path.
  portable=""
  [ "$(uname -m)" = x86_64 ] && portable="-DLLAVA_BUILD=OFF -DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON"
  CMAKE_ARGS="${CMAKE_ARGS:-$portable}" CMAKE_BUILD_PARALLEL_LEVEL="${CMAKE_BUILD_PARALLEL_LEVEL:-$(nproc)}" \
    "${VPIP[@]}" wheel --no-cache-dir --no-deps -w .venv/wheels "llama-cpp-python==$LLAMA_PIN" \
    > .venv/llama-build.log 2>&1 &
  llama_pid=$!
fi
step "torch 2.13.0 (CPU)" "${VPIP[@]}" install torch==2.13.0
echo "torch==2.13.0" > .venv/torch-constraint.txt
step "pinned requirements" "${VPIP[@]}" install -c .venv/torch-constraint.txt -r requirements.txt
extras=""
[ "$test" = 1 ] && extras="dev,milvus"
step "hublab (editable)${extras:+ + $extras}" "${VPIP[@]}" install -c .venv/torch-constraint.txt -e ".${extras:+[$extras]}"
[ "$test" = 1 ] && step "milvus-server CLI" test -x .venv/bin/milvus-server
if [ "$llm" = 1 ]; then
  if [ -n "$llama_pid" ]; then
    start=$SECONDS
    printf 'setup: %-48s' "llama-cpp-python compile (background)" >&2
    rc=0; wait "$llama_pid" || rc=$?
    [ "$rc" -eq 0 ] || { printf 'FAILED (exit %s)\n' "$rc" >&2; fail "llama-cpp-python compile" "$rc" .venv/llama-build.log; }
    printf 'ok (+%ss after the installs)\n' "$((SECONDS - start))" >&2
  fi
  step "llama-cpp-python + bundled GGUF (llm extra)" \
    "${VPIP[@]}" install -c .venv/torch-constraint.txt --find-links .venv/wheels -e ".[llama${extras:+,$extras}]"
  step "llama.cpp import + bundled GGUF" .venv/bin/python -c \
    "import llama_cpp, llama_cpp.server; from hublab.llm.llamacpp import bundled_gguf; print(bundled_gguf())"
elif [ "${HUBLAB_NO_LLAMA:-0}" = "1" ]; then
  echo "setup: llama.cpp skipped (HUBLAB_NO_LLAMA=1): embedded-LLM tests will skip (and fail under CI=true)" >&2
fi
step "DVC remote (per-user, absolute)" bash scripts/dvc_remote.sh
step "dvc plots offline (Vega from npm)" bash scripts/dvc_plots_offline.sh
.venv/bin/python -c "import torch, hublab; print('hublab env ready: torch', torch.__version__)"
