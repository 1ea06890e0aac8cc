"""The thesis's retrieval metrics as MLflow scorers, for ``mlflow.genai.evaluate`` on any retrieval function.

Each scorer renders the ``predict_fn``'s output and the row's golden triples as triple strings
(:mod:`hublab.mlflow_eval.triples`) and calls HubLab's own metric code (``hublab.evaluation.retrieval``), so a
value is the one ``hublab eval-file`` and ``hublab run`` give for the same triples, under the same name
(``hit_at_10_triples``; MLflow reports the mean as ``hit_at_10_triples/mean``).

Bad rows stay per-row results, never a failed evaluation: a malformed output or a row without golden triples
is an assessment with an error naming the row (its ``uid`` where the row carries one, else the question); an
empty output gets the metric's thesis value for an empty output (0 where there are golden triples).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mlflow.entities import AssessmentError, Feedback
from mlflow.genai.scorers import Scorer

from hublab.errors import InputError
from hublab.evaluation import names
from hublab.evaluation.retrieval import retrieval_metrics
from hublab.mlflow_eval.triples import golden_strings, triple_strings

#: The expectations key holding a row's golden triples (HubLab's field name, as in the KGQA files).
GOLDEN_KEY = "golden_triples"
#: The headline metrics the thesis reports (Tables 8.x): rank metrics at 10, full-list recall/precision, size.
HEADLINE = (names.HITS_AT_10, names.MAP_AT_10, names.MRR_AT_10, names.RECALL_AT_10, names.RECALL,
            names.PRECISION, names.TRIPLES_PER_QUESTION)


def row_label(inputs: Any, expectations: Any) -> str:
    """How an error names its row: the ``uid`` if the row carries one, else the start of the question."""
    for src in (expectations, inputs):
        if isinstance(src, Mapping) and src.get("uid"):
            return f"row uid {src['uid']}"
    if isinstance(inputs, Mapping) and isinstance(inputs.get("question"), str):
        q = inputs["question"]
        return f"row question {q[:60] + ('…' if len(q) > 60 else '')!r}"
    return "row (no uid or question in its inputs)"


class ThesisRetrievalScorer(Scorer):
    """One thesis retrieval metric (a name from ``hublab.evaluation.names``) as a deterministic code scorer.

    ``metric="triples_per_question"`` is the output size (number of triples returned), reported next to the
    full-list metrics because a recall over 300 triples is not one over 16."""

    metric: str
    k: int = names.K
    golden_key: str = GOLDEN_KEY

    def __init__(self, metric: str, *, k: int = names.K, golden_key: str = GOLDEN_KEY, **kw: Any) -> None:
        known = set(names.retrieval_names(k)) | {names.TRIPLES_PER_QUESTION}
        if metric not in known:
            raise ValueError(f"unknown retrieval metric {metric!r}; one of {sorted(known)}")
        super().__init__(name=kw.pop("name", metric), metric=metric, k=k, golden_key=golden_key, **kw)

    def __call__(self, *, inputs: Any = None, outputs: Any = None, expectations: Any = None) -> Feedback:
        try:
            retrieved = triple_strings(outputs)
            if self.metric == names.TRIPLES_PER_QUESTION:
                return Feedback(name=self.name, value=float(len(retrieved)))
            golden = golden_strings(expectations, self.golden_key)
        except InputError as exc:
            return Feedback(name=self.name, error=AssessmentError(
                error_code="HUBLAB_INVALID_ROW", error_message=f"{row_label(inputs, expectations)}: {exc}"))
        value = retrieval_metrics(retrieved, golden, self.k)[self.metric]
        note = None
        if not golden:
            note = "no golden triples (empty list): thesis convention, 1 for an empty output, else 0"
        elif not retrieved:
            note = "empty output: the thesis's value for no retrieved triples"
        return Feedback(name=self.name, value=float(value), rationale=note)


def retrieval_scorers(metrics: tuple[str, ...] = HEADLINE, *, k: int = names.K,
                      golden_key: str = GOLDEN_KEY) -> list[ThesisRetrievalScorer]:
    """The scorers for ``mlflow.genai.evaluate(..., scorers=retrieval_scorers())``: by default Hits@10, MAP@10,
    MRR@10, Recall@10, full-list recall and precision, and the output size."""
    if k != names.K:
        metrics = tuple(m.replace(f"_at_{names.K}_", f"_at_{k}_") for m in metrics)
    return [ThesisRetrievalScorer(m, k=k, golden_key=golden_key) for m in metrics]
