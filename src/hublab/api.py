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
    method ranks without scores), the labels of its parts, and the RDF statement it is (``statement``: N-Triples,
    ``<s> <p> <o> .``; the parts' IRIs, or a literal's N-Triples form; "" where the graph cannot say)."""

    rank: int
    triple: str
    score: float | None
    subject: str = ""
    predicate: str = ""
    object: str = ""
    subject_iri: str = ""
    predicate_iri: str = ""
    object_iri: str = ""
    statement: str = ""


@dataclass
class RunResult:
    """What ``hublab run`` reports: the aggregate metrics, the MLflow run, and one record per question."""

    metrics: dict[str, float]
    mlflow_run_id: str | None
    n_questions: int
    per_question: list[dict[str, Any]] = field(default_factory=list)
    failed: bool = False
    failure_reason: str = ""


def _settings(root: str | Path | None, label_predicates: list[str] | None = None,
              type_predicates: list[str] | None = None):
    """The project's settings (``root``, else the rule of ``hublab.config``; a folder without a ``params.yaml``
    reads the shipped defaults), with a call's label and type predicates ahead of ``params.yaml``'s
    (``hublab.graph.source.with_label_predicates``, ``with_type_predicates``)."""
    from hublab.config import defaults_root, project_root, settings
    from hublab.errors import InputError
    from hublab.graph.source import with_label_predicates, with_type_predicates

    base = Path(root).resolve() if root is not None else project_root()
    if not (base / "params.yaml").is_file() and defaults_root() is None:
        raise InputError(f"no HubLab project at {base} (no params.yaml): give the project's folder with root=... or "
                         "the HUBLAB_ROOT environment variable")
    return with_type_predicates(with_label_predicates(settings(base), label_predicates), type_predicates)


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
    """A pipeline built on a graph, its index ready: ``retrieve`` ranks triples for a question."""

    def __init__(self, pipeline: Any, name: str, graph: str) -> None:
        self._pipeline = pipeline
        self.name = name
        self.graph = graph

    def retrieve(self, question: str, *, topic_entity: str | None = None,
                 top_k: int | None = None) -> list[RankedTriple]:
        """The pipeline's ranked triples for ``question`` (the whole pipeline: augmentation, retrieval and rerank
        where the pipeline enables them), best first.

        Args:
            question: one question (for several: ``retrieve_many``).
            topic_entity: an entity id to start from (HubLink's graph-traversal strategy).
            top_k: at most this many triples (default: all the pipeline returns, its ``max_output_triples``).

        Raises:
            InputError: a question that is not a non-empty string, or a ``top_k`` below 1.
        """
        from hublab.errors import InputError

        if not isinstance(question, str) or not question.strip():
            hint = "; for several questions use retrieve_many" if isinstance(question, list | tuple) else ""
            raise InputError(f"expected one question as a non-empty string, got {type(question).__name__}{hint}",
                             field="question")
        if top_k is not None and (not isinstance(top_k, int) or top_k < 1):
            raise InputError(f"expected a positive number of triples, got {top_k!r}", field="top_k")
        graph = self._pipeline.retriever.resources.graph
        value = graph.label(topic_entity) if topic_entity else None
        out = self._pipeline.run(question, topic_entity, value)
        return [_ranked(graph, i, c) for i, c in enumerate(out.contexts[:top_k], start=1)]

    def retrieve_many(self, questions: list[str], *, top_k: int | None = None) -> list[list[RankedTriple]]:
        """``retrieve`` for each question, in order (one list of ranked triples per question).

        Raises:
            InputError: ``questions`` not a list of strings (one string: use ``retrieve``).
        """
        from hublab.errors import InputError

        if isinstance(questions, str) or not isinstance(questions, list | tuple):
            raise InputError(f"expected a list of questions, got {type(questions).__name__} (one question: "
                             "retrieve)", field="questions")
        return [self.retrieve(q, top_k=top_k) for q in questions]

    def answer(self, question: str, *, topic_entity: str | None = None) -> str:
        """The pipeline's answer (an LLM pipeline with generation; an LLM-free one answers with its top triples)."""
        graph = self._pipeline.retriever.resources.graph
        value = graph.label(topic_entity) if topic_entity else None
        return self._pipeline.run(question, topic_entity, value).answer

    def __repr__(self) -> str:
        from hublab.redact import scrub

        return f"LoadedPipeline({self.name!r}, graph={scrub(self.graph)!r})"  # an endpoint's password never shown


def _ranked(graph: Any, rank: int, context: Any) -> RankedTriple:
    """A retrieved context as a ``RankedTriple``, with the statement the graph has for it."""
    t = context.triple
    parts = (t.subject.text, t.predicate, t.object.text) if t else ("", "", "")
    terms, statement = ("", "", ""), ""
    if t is not None and hasattr(graph, "statement"):
        statement = graph.statement(t)
        s, p, o = (x for x in statement[:-2].split(" ", 2)) if statement.endswith(" .") else ("", "", "")
        terms = tuple(x[1:-1] if x.startswith("<") and x.endswith(">") else x for x in (s, p, o))
    return RankedTriple(rank, context.text, None if context.score is None else float(context.score), *parts,
                        *terms, statement)


def _graph_arg(graph: Any, st: Any) -> str:
    """``graph=`` as the CLI takes it: a name, a path or a URL as it is; an ``rdflib.Graph`` written once to the
    project's cache as N-Triples named by its content (the same graph is the same file, index and runs: the graph
    door's in-memory backend, ``hublab.graph.backends.InMemoryGraph``)."""
    if isinstance(graph, str | Path):
        return str(graph)
    from hublab.graph.backends import InMemoryGraph

    memory = InMemoryGraph()
    if memory.guess_can_open(graph, st):
        return memory.location(graph, st)
    from hublab.errors import InputError

    raise InputError(f"expected a graph name, an RDF file path, a SPARQL endpoint URL or an rdflib.Graph, got "
                     f"{type(graph).__name__}", field="graph")


def load_pipeline(name_or_path: str | Path, graph: Any, *, root: str | Path | None = None,
                  hub_types: list[str] | None = None, label_predicates: list[str] | None = None,
                  type_predicates: list[str] | None = None, progress: bool = False) -> LoadedPipeline:
    """Build a pipeline on a graph and make its index ready (built, or checked and reused), as ``hublab ask`` does.
    Every input is checked first; a problem is a ``hublab.errors.InputError`` naming what to fix.
    ``label_predicates``: predicate IRIs whose literals label a node, ahead of ``params.yaml``'s
    (``--label-predicate``). ``type_predicates``: predicate IRIs whose objects are a node's classes (Wikidata's
    ``http://www.wikidata.org/prop/direct/P31``), ahead of ``params.yaml``'s; ``rdf:type`` stays one
    (``--type-predicate``). Either list, when not the default, is another graph model: its own index and runs.
    """
    _quiet()
    from hublab.pipeline.pipeline import build_pipeline
    from hublab.preflight import check_run

    st = _settings(root, label_predicates, type_predicates)
    graph = _graph_arg(graph, st)
    checked = check_run(Path(str(name_or_path)), graph, None, settings=st, tracking=False, hub_types=hub_types)
    pipe = build_pipeline(checked.cfg, graph, st)
    pipe.retriever.ensure_ready(progress=progress)
    return LoadedPipeline(pipe, checked.cfg.name, graph)


def run(name_or_path: str | Path, graph: Any, dataset: str, *, limit: int | None = None,
        root: str | Path | None = None, experiment: str | None = None, hub_types: list[str] | None = None,
        label_predicates: list[str] | None = None, type_predicates: list[str] | None = None, resume: bool = True,
        track_carbon: bool = False, progress: bool = False) -> RunResult:
    """Run a pipeline over a dataset, evaluate it and log one MLflow run, exactly as ``hublab run`` does (resumable).
    ``track_carbon`` is off by default here: CodeCarbon's tracker prints and starts a thread per run;
    ``label_predicates`` and ``type_predicates`` as in ``load_pipeline`` (a changed list is a run of its own, never
    the resumed run of the other setting)."""
    _quiet()
    from hublab.experiment.request import RunRequest
    from hublab.experiment.runner import run_experiment
    from hublab.preflight import check_run

    st = _settings(root, label_predicates, type_predicates)
    graph = _graph_arg(graph, st)
    checked = check_run(Path(str(name_or_path)), graph, dataset, settings=st, experiment=experiment,
                        hub_types=hub_types)
    req = RunRequest(checked.cfg, graph, dataset, st, limit=limit, experiment=experiment, resume=resume,
                     track_carbon=track_carbon, progress=progress, trace=True,
                     hub_types=tuple(hub_types or ()))
    s = run_experiment(req)
    return RunResult(dict(s.metrics), s.run_id, s.n_questions, list(s.per_question), s.failed, s.failure_reason)


def compare(graph: str, dataset: str, *, hub_types: list[str] | None = None,
            label_predicates: list[str] | None = None, type_predicates: list[str] | None = None, n_trials: int = 20,
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
        type_predicates: predicate IRIs whose objects are a node's classes, ahead of ``params.yaml``'s; ``rdf:type``
            stays one (a changed list is another graph model, as with ``label_predicates``).
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
        ``hublab.tuning.graph_comparison.CompareOutcome``: ``split``, ``rows`` (with intervals and corrected
        p-values), ``files`` written, ``experiment`` and ``mlflow_parent`` (the MLflow comparison run), ``failed``.

    Raises:
        hublab.errors.InputError: an input that cannot be used, before any work.
    """
    _quiet()
    from hublab.tuning.graph_comparison import CompareRequest, compare_graph

    st = _settings(root, label_predicates, type_predicates)
    from hublab.retrievers.registry import default_pipelines

    chosen = ([st.pipeline_file(p) for p in pipelines] if pipelines
              else default_pipelines(st.pipelines_dir().parent))
    req = CompareRequest(str(graph), str(dataset), out_dir=Path(out) if out is not None else None, pipelines=chosen,
                         hub_types=list(hub_types or []), n_trials=n_trials, seed=seed, folds=folds,
                         selection=selection, bound=max_output_triples)
    return compare_graph(req, settings=st, say=say or (lambda _line: None))


def evaluate(retrieved: list[str] | list[RankedTriple], golden: list[str], *, k: int = 10) -> dict[str, float]:
    """The thesis's retrieval metrics of one question (Hits@k, MAP@k, MRR@k, Recall@k, precision, recall, F1 over
    triples and entities).

    Args:
        retrieved: the ranked triples, best first: ``LoadedPipeline.retrieve``'s results, or thesis triple strings
            (``(id:label, predicate, id:label)``).
        golden: the golden triples, as thesis triple strings or as N-Triples statements (``<s> <p> <o> .``).
        k: the rank cut-off.

    Raises:
        InputError: N-Triples golden triples against plain strings (only ranked results carry their statements), or
            golden triples in both forms.
    """
    from hublab.datasets.model import is_statement
    from hublab.errors import InputError
    from hublab.evaluation.retrieval import retrieval_metrics

    forms = {is_statement(g) for g in golden}
    if len(forms) > 1:
        raise InputError("golden triples in both forms: give all as thesis triple strings or all as N-Triples "
                         "statements", field="golden")
    ranked = [r for r in retrieved if isinstance(r, RankedTriple)]
    if forms == {True}:
        if len(ranked) != len(retrieved):
            raise InputError("golden triples are N-Triples statements: pass the RankedTriple results of retrieve() "
                             "(they carry their statements), or thesis triple strings for both", field="retrieved")
        norm = {" ".join(g.split()).rstrip(" .") + " .": g for g in golden}
        by_statement = {r.statement: r.triple for r in ranked if r.statement}
        golden = [by_statement.get(s, g) for s, g in norm.items()]
        return retrieval_metrics([r.triple for r in ranked], golden, k=k)
    return retrieval_metrics([r.triple if isinstance(r, RankedTriple) else r for r in retrieved], list(golden), k=k)
