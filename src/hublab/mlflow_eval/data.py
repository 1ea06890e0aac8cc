"""KGQA questions as rows for ``mlflow.genai.evaluate``, and a graph's triple texts for a user's own search.

A row is MLflow's evaluation-data shape: ``inputs`` are what the user's ``predict_fn`` is called with (only
``question``, so any ``def retrieve(question: str)`` fits), ``expectations`` hold what the scorers compare
against (``golden_triples``), the golden answer, and the question's ``uid`` so each per-question assessment can
be joined with ``hublab run``'s per-question records. Datasets and graphs are named as ``hublab run`` names them
(``reduced_gv1``, ``gv1``) or given by path (a thesis-format CSV or JSONL; a ``.ttl`` or ORKG export ``.json``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hublab.datasets.model import QAPair
from hublab.mlflow_eval.scorers import GOLDEN_KEY, GRAPH_KEY


def load_questions(dataset: str, root: Path | None = None) -> list[QAPair]:
    """A built-in dataset by name (``reduced_gv1``) or a KGQA file by path, as ``hublab run --dataset`` reads it."""
    from hublab.config import settings
    from hublab.datasets.catalog import load_dataset

    return load_dataset(settings(root), dataset)


def eval_rows(pairs: list[QAPair], limit: int | None = None, *, topic: bool = False,
              graph: str | None = None) -> list[dict[str, Any]]:
    """MLflow evaluation rows (``inputs`` / ``expectations``), in the dataset's order. ``topic=True`` adds the
    question's ``topic_entity_id`` / ``topic_entity_value`` to the inputs, for a ``predict_fn`` that takes them
    (``hublab.mlflow_eval.predict.pipeline_predict_fn``). ``graph``: the graph the golden triples refer to, kept
    in the expectations, so a scorer given predictions on another graph says so for each row."""
    rows = []
    for p in pairs[:limit]:
        inputs: dict[str, Any] = {"question": p.question}
        if topic:
            inputs.update(topic_entity_id=p.topic_entity_id, topic_entity_value=p.topic_entity_value)
        expectations: dict[str, Any] = {GOLDEN_KEY: list(p.golden_triples), "golden_answer": p.golden_answer,
                                        "uid": p.uid}
        if graph is not None:
            expectations[GRAPH_KEY] = graph
        rows.append({"inputs": inputs, "expectations": expectations})
    return rows


def graph_for(dataset: str, root: Path | None = None) -> str:
    """The graph a built-in dataset's golden triples refer to (``reduced_gv1`` → ``gv1``)."""
    from hublab.config import settings

    return settings(root).graph_for_dataset(dataset)


def triple_texts(graph: str, root: Path | None = None) -> list[str]:
    """Every distinct triple of a graph as the thesis's string ``(R1:label, predicate, L2:label)``, graph order:
    the documents a retrieval function searches and the strings the metrics match. ``graph`` is a name
    (``gv1``, ``gv3_orkg``), a path to an RDF file or ORKG export ``.json``, or a SPARQL endpoint URL: whatever
    ``--graph`` takes, opened as ``hublab run`` opens it."""
    from hublab.config import settings
    from hublab.pipeline.resources import load_graph

    kg = load_graph(graph, settings(root))
    return list(dict.fromkeys(t.render() for t in kg.triples()))
