#!/usr/bin/env bash
# One command for a fresh machine: create the environment, then run the main job on the embedded defaults —
# DVC builds snapshot → graph variants → KGQA datasets → HubLink index → evaluation (LLM-free HubLink on the
# real ORKG GV3 export and on the rebuilt GV1), logs every run to MLflow, and prints the metrics.
# One progress line per phase (and per DVC stage) with its time; the full output goes to $HUBLAB_QUICKSTART_LOG
# (default .cache/quickstart.log), whose tail is printed when a phase fails.
set -euo pipefail
cd "$(dirname "$0")/.."
T0=$SECONDS
mkdir -p .cache
LOG="${HUBLAB_QUICKSTART_LOG:-.cache/quickstart.log}"
: > "$LOG"

pids=()
fail() {  # fail "<phase>" rc
  [ "${#pids[@]}" -eq 0 ] || kill "${pids[@]}" 2>/dev/null || true
  echo "--- last 40 lines of $LOG ---" >&2
  tail -n 40 "$LOG" >&2
  echo "--- quickstart failed in phase: $1 (exit $2; full output: $LOG) ---" >&2
  exit "$2"
}

dvc_progress() {  # stdin: dvc repro output. Everything to the log; one line per stage that ran, with its time.
  local name="" start=$SECONDS line skipped=0
  while IFS= read -r line; do
    printf '%s\n' "$line" >> "$LOG"
    case "$line" in
      "Running stage '"*)
        [ -n "$name" ] && printf 'quickstart:     stage %-36s %5ss\n' "$name" "$((SECONDS - start))"
        name=${line#"Running stage '"}; name=${name%%"'"*}; start=$SECONDS ;;
      "Stage '"*"didn't change, skipping"*) skipped=$((skipped + 1)) ;;
    esac
  done
  [ -n "$name" ] && printf 'quickstart:     stage %-36s %5ss\n' "$name" "$((SECONDS - start))"
  [ "$skipped" -eq 0 ] || printf 'quickstart:     %s stage(s) up to date, skipped\n' "$skipped"
}

echo "quickstart: [1/4] environment (scripts/setup.sh)" >&2
start=$SECONDS
bash scripts/setup.sh
printf 'quickstart: [1/4] environment ready %44s\n' "$((SECONDS - start))s" >&2

export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 MLFLOW_DISABLE_TELEMETRY=true RAGAS_DO_NOT_TRACK=true \
  DO_NOT_TRACK=true DVC_NO_ANALYTICS=1 TOKENIZERS_PARALLELISM=false
.venv/bin/dvc config core.analytics false
# HubLink on the GV3 export and on GV1 = evaluate.runs[0] and [1] of params.yaml. The comparison of every
# LLM-free method (`dvc repro compare`) adds much more time on a fresh machine: docs/data-pipeline.md.
echo "quickstart: [2/4] pipeline: dvc repro evaluate@0 evaluate@1 (snapshot, graphs, datasets, index, evaluate)" >&2
start=$SECONDS
rc=0
.venv/bin/dvc repro evaluate@0 evaluate@1 2>&1 | dvc_progress || rc=$?
[ "$rc" -eq 0 ] || fail "pipeline (dvc repro)" "$rc"
printf 'quickstart: [2/4] pipeline done %48s\n' "$((SECONDS - start))s" >&2

# On a fresh clone DVC skips the evaluate stages when the rebuilt index reproduces dvc.lock's hash (the committed
# reports are then the results): run both through `hublab run` anyway (resumed, so instant when the stage just ran),
# which logs them to MLflow and checks them against the committed reports. Nothing tracked by git is written.
echo "quickstart: [3/4] HubLink runs, checked against the committed reports (both at once: one core each)" >&2
start=$SECONDS
mkdir -p outputs/quickstart
for ds in gv3_orkg gv1; do
  .venv/bin/python -m hublab.cli run pipelines/hublink_local.yaml --graph "$ds" --dataset "$ds" \
    --output "outputs/quickstart/$ds.json" > "outputs/quickstart/$ds.log" 2>&1 &
  pids+=($!)
done
for i in 0 1; do
  ds=$([ "$i" = 0 ] && echo gv3_orkg || echo gv1)
  rc=0; wait "${pids[$i]}" || rc=$?
  cat "outputs/quickstart/$ds.log" >> "$LOG"
  [ "$rc" -eq 0 ] || fail "run hublink_local on $ds" "$rc"
  .venv/bin/python - "$ds" <<'PY' || fail "reproduction check on $ds" $?
import json, sys
ds = sys.argv[1]
got = json.load(open(f"outputs/quickstart/{ds}.json"))
ref = json.load(open(f"reports/eval/hublink_local-{ds}/metrics.json"))
keys = ["hit_at_10_triples", "map_at_10_triples", "recall_at_10_triples", "mrr_at_10_triples", "triples_per_question"]
off = {k: (got[k], ref[k]) for k in keys if abs(got[k] - ref[k]) > 1e-6}
line = ", ".join(f"{k} {got[k]:.4f}" for k in keys[:2])
print(f"quickstart:     {ds}: {line}: " + ("identical to the committed report" if not off
      else f"DIFFERS from the committed report: {off}"), file=sys.stderr)
sys.exit(1 if off else 0)
PY
done
printf 'quickstart: [3/4] runs done %51s\n' "$((SECONDS - start))s" >&2

echo "quickstart: [4/4] summary, and the committed comparison of every LLM-free method into MLflow" >&2
echo
.venv/bin/python -m hublab.cli report summary
echo
echo "Every LLM-free method side by side: reports/summary/methods.md (recomputed by .venv/bin/dvc repro compare)"
echo "Parameter study (thesis OFAT on reduced GV1): .venv/bin/dvc repro tune"
printf 'quickstart: done in %ss (full output: %s)\n' "$((SECONDS - T0))" "$LOG" >&2
# last: the link to the comparison's view in MLflow (what to open first)
.venv/bin/python -m hublab.cli report publish || fail "report publish" $?
