"""Process-wide offline/telemetry settings. Called by the CLI and tests before heavy imports."""

from __future__ import annotations

import os

OFFLINE_DEFAULTS = {
    "HF_HUB_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
    "MLFLOW_DISABLE_TELEMETRY": "true",
    "RAGAS_DO_NOT_TRACK": "true",
    "DO_NOT_TRACK": "true",
    "DVC_NO_ANALYTICS": "1",
    "TOKENIZERS_PARALLELISM": "false",
    "MLFLOW_SERVER_ENABLE_JOB_EXECUTION": "false",
}


def apply_offline_defaults() -> None:
    """Set offline/no-telemetry env vars unless the user already chose otherwise."""
    for key, value in OFFLINE_DEFAULTS.items():
        os.environ.setdefault(key, value)
