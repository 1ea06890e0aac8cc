#!/usr/bin/env bash
# "Passes from a fresh clone", measured: clone this checkout's committed `main` into a temp folder, put the
# reference data beside it as ../shared (a symlink to this checkout's ../shared, read in place), and run
# `bash .ci/run` there (set-up from nothing: its own .venv, pip's download cache as the machine has it), timed.
#   bash scripts/ci_local.sh            clone main, run CI, print its wall time, remove the clone
#   bash scripts/ci_local.sh --keep     keep the clone (its path is printed) to look at what CI left
#   HUBLAB_CI_BRANCH=<branch>           another branch than main
# Exit code: .ci/run's. The full output is kept in .cache/ci_local.log (its tail is printed on failure).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
keep=0
for a in "$@"; do
  case "$a" in
    --keep) keep=1 ;;
    *) echo "ci_local: unknown option $a (use --keep)" >&2; exit 2 ;;
  esac
done
SHARED=$(cd "${HUBLAB_SHARED:-$ROOT/../shared}" && pwd)
branch="${HUBLAB_CI_BRANCH:-main}"
base=$(mktemp -d "${TMPDIR:-/tmp}/hublab-ci-XXXXXX")
cleanup() {
  mkdir -p "$ROOT/.cache" && cp "$base/ci.log" "$ROOT/.cache/ci_local.log" 2>/dev/null || true
  if [ "$keep" = 1 ]; then echo "ci_local: clone kept at $base/hublab" >&2; else rm -rf "$base"; fi
}
trap cleanup EXIT
git clone -q --branch "$branch" "$ROOT" "$base/hublab"
ln -s "$SHARED" "$base/shared"
echo "ci_local: $(git -C "$base/hublab" log -1 --format='%h %s' | cut -c1-100)" >&2
echo "ci_local: running bash .ci/run in $base/hublab (log: $base/ci.log)" >&2
start=$(date +%s)
rc=0
(cd "$base/hublab" && env CI=true bash .ci/run) > "$base/ci.log" 2>&1 || rc=$?
took=$(( $(date +%s) - start ))
grep -E "^setup:|passed|failed|test.sh:" "$base/ci.log" | tail -n 25 >&2 || true
[ "$rc" -eq 0 ] || { echo "--- last 60 lines of the CI log ---" >&2; tail -n 60 "$base/ci.log" >&2; }
printf 'ci_local: bash .ci/run from a fresh clone of %s: exit %s in %d min %02d s\n' "$branch" "$rc" \
  $((took / 60)) $((took % 60)) >&2
exit "$rc"
