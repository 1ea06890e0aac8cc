#!/usr/bin/env bash
# The test command (README, .ci/run): the whole suite, offline, on CPU.
#   bash scripts/test.sh           full tier: every test (what CI runs)
#   bash scripts/test.sh --fast    fast tier: deselects tests marked `slow` (servers, subprocesses, MiniLM, llama;
#                                  tests/conftest.py says how a test becomes slow); a few minutes on 2 cores
# Further arguments go to pytest (test files, -k, -x, ...).
set -euo pipefail
cd "$(dirname "$0")/.."
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 MLFLOW_DISABLE_TELEMETRY=true RAGAS_DO_NOT_TRACK=true \
  DO_NOT_TRACK=true DVC_NO_ANALYTICS=1 TOKENIZERS_PARALLELISM=false
# this checkout's code first (a worktree sharing another checkout's .venv tests its own src/)
export PYTHONPATH="$PWD/src${PYTHONPATH:+:$PYTHONPATH}"
# the slowest tests, slowest first, after every run: where the suite's time goes (#19)
args=(--durations=30 --durations-min=5)
for a in "$@"; do
  if [ "$a" = "--fast" ]; then args+=(-m "not slow"); else args+=("$a"); fi
done
exec .venv/bin/python -m pytest -q -ra "${args[@]}"
