"""The tracking layer: everything HubLab writes to or reads from MLflow. The run recorder (``recorder.py``, one
experiment run), a study's parent run (``study_runs.py``), a trained embedder's run and registered model
(``embedder_runs.py``), comparison parents and children (``comparison_runs.py``), artifacts, traces, prompt
registry, dataset inputs, look-ups of earlier runs, and emissions tracking (``carbon.py``). Only this package,
``mlflow_eval/`` and the foundation's ``model_uri.py`` import MLflow (``tests/platform/test_layers.py``)."""

#: the submodules, one per thing HubLab records in MLflow; importing the package loads none of them
__all__ = ["artifacts", "carbon", "comparison_runs", "embedder_runs", "mlflow_log", "prompt_registry", "recorder",
           "run_inputs", "run_link", "run_lookup", "run_page", "study_runs", "traces"]
