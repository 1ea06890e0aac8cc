"""The tracking layer: everything HubLab writes to or reads from MLflow. The run recorder (``recorder.py``, one
experiment run), a study's parent run (``study_runs.py``), a trained embedder's run and registered model
(``embedder_runs.py``), comparison parents and children (``comparison_runs.py``), artifacts, traces, prompt
registry, dataset inputs, look-ups of earlier runs, and emissions tracking (``carbon.py``). Only this package,
``mlflow_eval/`` and the foundation's ``model_uri.py`` import MLflow (``tests/platform/test_layers.py``)."""
