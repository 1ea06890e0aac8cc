"""HubLab's Python API for notebooks and scripts: load a pipeline and ask it questions, run and evaluate a pipeline
on a dataset as ``hublab run`` does, and score a ranked list with the thesis's metrics.

    >>> import hublab
    >>> p = hublab.load_pipeline("hublink_local", graph="gv3_orkg")
    >>> p.retrieve("Which papers use DVC?")[:3]
    [RankedTriple(rank=1, triple='(R…)', score=0.71, …), …]

Names work as in the CLI (``hublink_local`` is ``pipelines/hublink_local.yaml``; ``gv3_orkg``, an RDF file or a
SPARQL endpoint URL for the graph). The project is the one ``HUBLAB_ROOT`` names, else the nearest parent of the
working folder holding ``params.yaml``, else the checkout HubLab is installed from; ``root=`` chooses another. No
progress bar is drawn unless ``progress=True``.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["LoadedPipeline", "RankedTriple", "RunResult", "compare", "evaluate", "load_pipeline", "run"]


@dataclass(frozen=True)
class RankedTriple:
    """One retrieved triple: its rank (1 = best), the thesis's triple string, the retriever's score (None when the
    method ranks without scores) and the labels of its parts."""

    rank: int
    triple: str
    score: float | None
    subject: str = ""
    predicate: str = ""
    object: str = ""


@dataclass
class RunResult:
    """What ``hublab run`` reports: the aggregate metrics, the MLflow run, and one record per question."""

    metrics: dict[str, float]
    mlflow_run_id: str | None
    n_questions: int
    per_question: list[dict[str, Any]] = field(default_factory=list)
    failed: bool = False
    failure_reason: str = ""


def _settings(root: str | Path | None, label_predicates: list[str] | None = None):
    """The project's settings (``root``, else the rule of :mod:`hublab.config`; a folder without a ``params.yaml``
    reads the shipped defaults), with a call's label predicates ahead of ``params.yaml``'s
    (:func:`hublab.graph.source.with_label_predicates`)."""
    from hublab.config import defaults_root, project_root, settings
    from hublab.errors import InputError
    from hublab.graph.source import with_label_predicates

    base = Path(root).resolve() if root is not None else project_root()
    if not (base / "params.yaml").is_file() and defaults_root() is None:
        raise InputError(f"no HubLab project at {base} (no params.yaml): give the project's folder with root=... or "
                         "the HUBLAB_ROOT environment variable")
    return with_label_predicates(settings(base), label_predicates)


def _quiet() -> None:
    """The CLI's defaults for a library call: offline, no library INFO lines, no model-loading progress bars."""
    from hublab.env import apply_offline_defaults, quiet_cli

    apply_offline_defaults()
    quiet_cli()
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    os.environ.setdefault("TRANSFORMERS_NO_ADVISORY_WARNINGS", "1")
    try:
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()
    except ImportError:  # pragma: no cover - transformers comes with sentence-transformers
        pass


class LoadedPipeline:
    """A pipeline built on a graph, its index ready: :meth:`retrieve` ranks triples for a question."""

    def __init__(self, pipeline: Any, name: str, graph: str) -> None:
        self._pipeline = pipeline
        self.name = name
        self.graph = graph

    def retrieve(self, question: str, *, topic_entity: str | None = None) -> list[RankedTriple]:
        """The pipeline's ranked triples for ``question`` (the whole pipeline: augmentation, retrieval and rerank
        where the pipeline enables them), best first. ``topic_entity``: an entity id to start from (HubLink's
        graph-traversal strategy)."""
        graph = self._pipeline.retriever.resources.graph
        value = graph.label(topic_entity) if topic_entity else None
        out = self._pipeline.run(question, topic_entity, value)
        ranked = []
        for i, c in enumerate(out.contexts, start=1):
            t = c.triple
            parts = (t.subject.text, t.predicate, t.object.text) if t else ("", "", "")
            ranked.append(RankedTriple(i, c.text, None if c.score is None else float(c.score), *parts))
        return ranked

    def answer(self, question: str, *, topic_entity: str | None = None) -> str:
        """The pipeline's answer (an LLM pipeline with generation; an LLM-free one answers with its top triples)."""
        graph = self._pipeline.retriever.resources.graph
        value = graph.label(topic_entity) if topic_entity else None
        return self._pipeline.run(question, topic_entity, value).answer

    def __repr__(self) -> str:
        from hublab.redact import scrub

        return f"LoadedPipeline({self.name!r}, graph={scrub(self.graph)!r})"  # an endpoint's password never shown


def load_pipeline(name_or_path: str | Path, graph: str, *, root: str | Path | None = None,
                  hub_types: list[str] | None = None, label_predicates: list[str] | None = None,
                  progress: bool = False) -> LoadedPipeline:
    """Build a pipeline on a graph and make its index ready (built, or checked and reused), as ``hublab ask`` does.
    Every input is checked first; a problem is a :class:`hublab.errors.InputError` naming what to fix.
    ``label_predicates``: predicate IRIs whose literals label a node, ahead of ``params.yaml``'s
    (``--label-predicate``).
    """
    _quiet()
    from hublab.pipeline.pipeline import build_pipeline
    from hublab.preflight import check_run

    st = _settings(root, label_predicates)
    checked = check_run(Path(str(name_or_path)), graph, None, settings=st, tracking=False, hub_types=hub_types)
    pipe = build_pipeline(checked.cfg, graph, st)
    pipe.retriever.ensure_ready(progress=progress)
    return LoadedPipeline(pipe, checked.cfg.name, graph)


def run(name_or_path: str | Path, graph: str, dataset: str, *, limit: int | None = None,
        root: str | Path | None = None, experiment: str | None = None, hub_types: list[str] | None = None,
        label_predicates: list[str] | None = None, resume: bool = True, track_carbon: bool = False,
        progress: bool = False) -> RunResult:
    """Run a pipeline over a dataset, evaluate it and log one MLflow run, exactly as ``hublab run`` does (resumable).
    ``track_carbon`` is off by default here: CodeCarbon's tracker prints and starts a thread per run;
    ``label_predicates`` as in :func:`load_pipeline`."""
    _quiet()
    from hublab.experiment.request import RunRequest
    from hublab.experiment.runner import run_experiment
    from hublab.preflight import check_run

    st = _settings(root, label_predicates)
    checked = check_run(Path(str(name_or_path)), graph, dataset, settings=st, experiment=experiment,
                        hub_types=hub_types)
    req = RunRequest(checked.cfg, graph, dataset, st, limit=limit, experiment=experiment, resume=resume,
                     track_carbon=track_carbon, progress=progress, trace=True,
                     hub_types=tuple(hub_types or ()))
    s = run_experiment(req)
    return RunResult(dict(s.metrics), s.run_id, s.n_questions, list(s.per_question), s.failed, s.failure_reason)


def compare(graph: str, dataset: str, *, hub_types: list[str] | None = None,
            label_predicates: list[str] | None = None, n_trials: int = 20,
            folds: int | None = None, selection: str | None = None, out: str | Path | None = None,
            pipelines: list[str] | None = None, seed: int = 0, max_output_triples: int = 20,
            root: str | Path | None = None, say: Any = None) -> Any:
    """The fair comparison of every LLM-free method on a graph, as ``hublab compare`` runs it.

    Args:
        graph: a built-in graph, an RDF file or a SPARQL endpoint URL.
        dataset: a built-in dataset or a .csv/.jsonl file of questions with golden triples.
        hub_types: HubLink's hub type IRIs on this graph.
        label_predicates: predicate IRIs whose literals label a node, ahead of ``params.yaml``'s (a changed list is
            another graph model: its own indices and runs).
        n_trials: TPE trials per method and fold (the same budget for every method).
        folds: k of the cross-validation (None: 5 below 100 questions, else one seeded split; 1: one split).
        selection: a dataset whose questions are the fixed selection set (every other one is reported).
        out: the output folder (default ``reports/compare/<graph>``).
        pipelines: LLM-free pipelines (names or paths; default every method).
        seed: the split's and the studies' seed.
        max_output_triples: the output bound every method is scored at.
        root: the project folder (see the module's docstring).
        say: a callable receiving one progress line per step (default: silent).

    Returns:
        :class:`hublab.tuning.graph_comparison.CompareOutcome`: ``split``, ``rows`` (with intervals and corrected
        p-values), ``files`` written, ``experiment`` and ``mlflow_parent`` (the MLflow comparison run), ``failed``.

    Raises:
        hublab.errors.InputError: an input that cannot be used, before any work.
    """
    _quiet()
    from hublab.tuning.graph_comparison import CompareRequest, compare_graph

    st = _settings(root, label_predicates)
    from hublab.retrievers.registry import default_pipelines

    chosen = ([st.pipeline_file(p) for p in pipelines] if pipelines
              else default_pipelines(st.pipelines_dir().parent))
    req = CompareRequest(str(graph), str(dataset), out_dir=Path(out) if out is not None else None, pipelines=chosen,
                         hub_types=list(hub_types or []), n_trials=n_trials, seed=seed, folds=folds,
                         selection=selection, bound=max_output_triples)
    return compare_graph(req, settings=st, say=say or (lambda _line: None))


def evaluate(retrieved: list[str], golden: list[str], *, k: int = 10) -> dict[str, float]:
    """The thesis's retrieval metrics of one question: ``retrieved`` triple strings in rank order against the
    ``golden`` ones (Hits@k, MAP@k, MRR@k, Recall@k, precision, recall, F1 over triples and entities)."""
    from hublab.evaluation.retrieval import retrieval_metrics

    return retrieval_metrics(list(retrieved), list(golden), k=k)
