#!/usr/bin/env bash
# "The suite never flakes", measured (issue #42): N consecutive fresh-clone CI runs (scripts/ci_local.sh) with one
# core kept busy by another process beside them all (a pure-Python loop: what a second job on a CI runner does).
#   bash scripts/ci_repeat.sh [N]        default N = 5; stops at the first failure (its log: .cache/ci_local.log)
# Prints one line per run (exit code, minutes) and appends them to .cache/ci_repeat.log.
set -uo pipefail
cd "$(dirname "$0")/.."
n="${1:-5}"
python3 -c "while True: pass" &
busy=$!
trap 'kill "$busy" 2>/dev/null' EXIT
mkdir -p .cache
echo "ci_repeat: $n runs of scripts/ci_local.sh beside a busy core (pid $busy) at $(git log -1 --format=%h)" \
  | tee -a .cache/ci_repeat.log >&2
for i in $(seq 1 "$n"); do
  start=$(date +%s)
  bash scripts/ci_local.sh > ".cache/ci_repeat.$i.log" 2>&1
  rc=$?
  took=$(( $(date +%s) - start ))
  line=$(grep -E "passed|failed" ".cache/ci_repeat.$i.log" | tail -n 1)
  printf 'ci_repeat: run %d of %d: exit %d in %d min %02d s (%s)\n' "$i" "$n" "$rc" $((took / 60)) $((took % 60)) \
    "$line" | tee -a .cache/ci_repeat.log >&2
  [ "$rc" -eq 0 ] || exit "$rc"
done
