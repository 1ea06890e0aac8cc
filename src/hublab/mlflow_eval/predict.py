"""A HubLab pipeline as an MLflow ``predict_fn``: the same retriever ``hublab run`` runs, called the way
``mlflow.genai.evaluate`` calls a user's function, so the two paths can be compared on one dataset (and a user's
function can sit next to a HubLab method in one MLflow experiment)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path


def pipeline_predict_fn(pipeline: str | Path, graph: str) -> Callable[..., list[str]]:
    """``predict(question, topic_entity_id=None, topic_entity_value=None) -> ranked triple strings`` for a pipeline
    YAML on a graph (by name), built and made ready (index resumed or refused) as ``hublab run`` does. Use it with
    ``eval_rows(..., topic=True)`` so a method that starts from the topic entity gets it, as in ``hublab run``."""
    from hublab.pipeline.config import load_pipeline
    from hublab.pipeline.pipeline import build_pipeline

    pipe = build_pipeline(load_pipeline(pipeline), graph)
    pipe.retriever.ensure_ready()

    def predict(question: str, topic_entity_id: str | None = None,
                topic_entity_value: str | None = None) -> list[str]:
        return list(pipe.run(question, topic_entity_id, topic_entity_value).context_strings)

    return predict
