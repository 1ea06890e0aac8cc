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

# ``HUBLAB_TEST_TRIAL_DELAY=<s>``: every tuning trial waits that long before it runs (while holding its trial), so
# two `hublab tune` workers started together both take trials of the shared study, however fast a trial is.
_delay = os.environ.get("HUBLAB_TEST_TRIAL_DELAY")
if _delay:
    import time as _time

    import hublab.tuning.runner_eval as _runner_eval

    _orig_evaluator = _runner_eval.runner_evaluator

    def _slow_evaluator(*args, **kwargs):
        evaluate = _orig_evaluator(*args, **kwargs)

        def run(req):
            _time.sleep(float(_delay))
            return evaluate(req)
        return run

    _runner_eval.runner_evaluator = _slow_evaluator

# ``HUBLAB_TEST_QUESTION_LOG=<file>``: every question the runner starts appends its key to that file (a rerun that
# resumes starts only the unfinished ones); ``HUBLAB_TEST_QUESTION_DELAY=<s>``: each question waits that long
# first, so a test can act (stop a server) between questions however fast they are.
_qlog = os.environ.get("HUBLAB_TEST_QUESTION_LOG")
if _qlog:
    import time as _time

    import hublab.experiment.question as _question

    _orig_question = _question.run_question
    _qdelay = float(os.environ.get("HUBLAB_TEST_QUESTION_DELAY", "0"))

    def _logged_question(pipeline, carbon, i, p, *args, **kwargs):
        with open(_qlog, "a") as fh:
            fh.write(f"{_question.record_key(i, p)}\n")
        _time.sleep(_qdelay)
        return _orig_question(pipeline, carbon, i, p, *args, **kwargs)

    _question.run_question = _logged_question  # the runner calls it through the module
