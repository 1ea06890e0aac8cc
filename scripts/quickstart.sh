#!/usr/bin/env bash
# One command for a fresh machine: create the environment, then run the main job on the embedded defaults —
# DVC builds snapshot → graph variants → KGQA datasets → HubLink index → evaluation (LLM-free HubLink on the
# real ORKG GV3 export and on the rebuilt GV1), logs every run to MLflow, and prints the metrics.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 MLFLOW_DISABLE_TELEMETRY=true RAGAS_DO_NOT_TRACK=true \
  DO_NOT_TRACK=true DVC_NO_ANALYTICS=1 TOKENIZERS_PARALLELISM=false
.venv/bin/dvc config core.analytics false
# HubLink on the GV3 export and on GV1 = evaluate.runs[0] and [1] of params.yaml. The comparison of every
# LLM-free method (`dvc repro compare`) adds much more time on a fresh machine: docs/data-pipeline.md.
.venv/bin/dvc repro evaluate@0 evaluate@1
echo
.venv/bin/python -m hublab.cli report summary
echo
echo "MLflow UI: .venv/bin/mlflow ui --backend-store-uri sqlite:///mlruns/mlflow.db   (then open http://127.0.0.1:5000)"
echo "Every LLM-free method side by side (reports/summary/methods.md): .venv/bin/dvc repro compare"
echo "Parameter study (thesis OFAT on reduced GV1): .venv/bin/dvc repro tune"
