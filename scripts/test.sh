#!/usr/bin/env bash
# The test command (README, .ci/run): the whole suite, offline, on CPU, in parallel (pytest-xdist).
#   bash scripts/test.sh           full tier: every test (what CI runs)
#   bash scripts/test.sh --fast    fast tier: deselects tests marked `slow` (servers, subprocesses, MiniLM, llama;
#                                  tests/conftest.py says how a test becomes slow); a few minutes on 2 cores
# Further arguments go to pytest (test files, -k, -x, ...; `-n 0` runs in one process, e.g. for --pdb).
# Workers: HUBLAB_TEST_WORKERS (default 3: most slow tests wait on servers, subprocesses and model loads, so one
# worker more than the 2 cores of CI keeps both busy). --dist loadgroup keeps the tests of one session server
# (llama.cpp, Milvus standalone, MLflow, PostgreSQL: tests/conftest.py SERVER_GROUPS) on one worker, so each
# server starts once a run. Each test process runs one torch/OpenMP thread and the test llama.cpp models one
# (tests/conftest.py, tests/support/llm_servers.py): with more, the libraries' workers spin for cores the other workers hold,
# which doubled the full tier. Every run ends with its 15 slowest tests and its wall time; every test's time (set-up,
# call, tear-down) and CPU seconds (cpu_s) is kept in .cache/junit.xml (pytest's JUnit XML) for a closer look at where a run's time went.
set -euo pipefail
cd "$(dirname "$0")/.."
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 MLFLOW_DISABLE_TELEMETRY=true RAGAS_DO_NOT_TRACK=true \
  DO_NOT_TRACK=true DVC_NO_ANALYTICS=1 TOKENIZERS_PARALLELISM=false
# this checkout's code first (a worktree sharing another checkout's .venv tests its own src/)
export PYTHONPATH="$PWD/src${PYTHONPATH:+:$PYTHONPATH}"
mkdir -p .cache
args=(-n "${HUBLAB_TEST_WORKERS:-3}" --dist loadgroup --durations=15 --durations-min=1 --junitxml=.cache/junit.xml
      -o junit_logging=no)
for a in "$@"; do
  if [ "$a" = "--fast" ]; then args+=(-m "not slow"); else args+=("$a"); fi
done
start=$(date +%s)
rc=0
.venv/bin/python -m pytest -q -ra "${args[@]}" || rc=$?
echo "test.sh: suite wall time $(( $(date +%s) - start )) s (exit $rc)"
exit "$rc"
