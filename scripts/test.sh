#!/usr/bin/env bash
# The test command (README, .ci/run): the whole suite, offline, on CPU.
set -euo pipefail
cd "$(dirname "$0")/.."
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 MLFLOW_DISABLE_TELEMETRY=true RAGAS_DO_NOT_TRACK=true \
  DO_NOT_TRACK=true DVC_NO_ANALYTICS=1 TOKENIZERS_PARALLELISM=false
# this checkout's code first (a worktree sharing another checkout's .venv tests its own src/)
export PYTHONPATH="$PWD/src${PYTHONPATH:+:$PYTHONPATH}"
exec .venv/bin/python -m pytest -q -ra "$@"
