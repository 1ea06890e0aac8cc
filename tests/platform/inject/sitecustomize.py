"""A start barrier for the concurrent-runs test: with ``HUBLAB_TEST_BARRIER=<dir>:<n>`` on a hublab subprocess
(this folder first on PYTHONPATH), ``mlflow.start_run`` returns only once ``n`` processes have started their
MLflow run, so the runs are RUNNING on the server at the same time and log their metrics and artifacts
concurrently, whatever each process's start-up time."""

import os

_spec = os.environ.get("HUBLAB_TEST_BARRIER")
if _spec:
    import time
    from pathlib import Path

    import mlflow

    _dir, _n = _spec.rsplit(":", 1)
    _orig = mlflow.start_run

    def _start_run(*args, **kwargs):
        run = _orig(*args, **kwargs)
        Path(_dir, f"{os.getpid()}.started").write_text(run.info.run_id)
        deadline = time.monotonic() + 180
        while len(list(Path(_dir).glob("*.started"))) < int(_n) and time.monotonic() < deadline:
            time.sleep(0.05)
        return run

    mlflow.start_run = _start_run
