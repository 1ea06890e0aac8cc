"""Where to look at a run: its page on the tracking server when the tracking URI is one (``http(s)://``), else
the ``mlflow ui`` command that opens the local store, with the page's path. Credentials in the URI
(``user:key@``) never reach the console: the line goes through :func:`hublab.redact.redact`."""

from __future__ import annotations

import shlex

from hublab.redact import scrub


def run_link(tracking_uri: str, experiment_id: str | None, run_id: str) -> str:
    """One console line: ``MLflow run: <url>``, or ``open it with: mlflow ui --backend-store-uri … (then …)``."""
    page = f"#/experiments/{experiment_id}/runs/{run_id}" if experiment_id else f"#/runs/{run_id}"
    if tracking_uri.startswith(("http://", "https://")):
        return scrub(f"MLflow run: {tracking_uri.rstrip('/')}/{page}")
    return scrub(f"MLflow run {run_id}: open it with `mlflow ui --backend-store-uri {shlex.quote(tracking_uri)}` "
                  f"and http://127.0.0.1:5000/{page}")
