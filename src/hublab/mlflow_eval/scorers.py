"""The thesis's retrieval metrics as MLflow scorers, for ``mlflow.genai.evaluate`` on any retrieval function.

Each scorer renders the ``predict_fn``'s output and the row's golden triples as triple strings
(:mod:`hublab.mlflow_eval.triples`) and calls HubLab's own metric code (``hublab.evaluation.retrieval``), so a
value is the one ``hublab eval-file`` and ``hublab run`` give for the same triples, under the same name
(``hit_at_10_triples``; MLflow reports the mean as ``hit_at_10_triples/mean``).

Bad rows stay per-row results, never a failed evaluation: a malformed output or a row without golden triples
is an assessment with an error naming the row (its ``uid`` where the row carries one, else the question); an
empty output gets the metric's thesis value for an empty output (0 where there are golden triples).

Golden triples are ids of one graph (``R659055`` is a GV1 node, not a GV3 one): a row's expectations name it
(``graph``, written by :func:`hublab.mlflow_eval.data.eval_rows` and the registered KGQA datasets), and the
predictions name theirs (the scorer's ``graph``, or a ``graph`` key of a dict output). When both are named and
differ, the row's assessment is an error naming the row and both graphs, not a silent 0.
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
#: The expectations key (and dict-output key) naming the graph the golden (or predicted) triples belong to.
GRAPH_KEY = "graph"
#: The expectations key holding a row's golden answer, and the output keys an answer is read from.
ANSWER_KEY = "golden_answer"
ANSWER_OUTPUT_KEYS = ("answer", "generated_answer")
#: The thesis's LLM-free generation metrics (BLEU, ROUGE-1/2/L), per family of ``GenerationEvaluator``.
GENERATION = {"bleu_score": "bleu", **{f"rouge_{n}_{m}": "rouge" for n in ("1", "2", "L")
                                      for m in ("f1", "precision", "recall")}}
GENERATION_HEADLINE = ("bleu_score", "rouge_1_f1", "rouge_2_f1", "rouge_L_f1")
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


def graph_mismatch(outputs: Any, expectations: Any, predicted_on: str | None) -> str | None:
    """Why the row cannot be scored against these predictions (None if it can): the graph its golden triples
    refer to differs from the one the predictions were made on (a ``graph`` key of a dict output, else the
    scorer's ``predicted_on``). Unnamed on either side: nothing to check."""
    pred = outputs.get(GRAPH_KEY) if isinstance(outputs, Mapping) and outputs.get(GRAPH_KEY) else predicted_on
    gold = expectations.get(GRAPH_KEY) if isinstance(expectations, Mapping) else None
    if not pred or not gold or str(pred) == str(gold):
        return None
    return (f"the row's golden triples refer to graph {str(gold)!r} but the predictions were made on graph "
            f"{str(pred)!r}: score predictions on {str(gold)!r} (or a dataset of {str(pred)!r})")


class ThesisRetrievalScorer(Scorer):
    """One thesis retrieval metric (a name from ``hublab.evaluation.names``) as a deterministic code scorer.

    ``metric="triples_per_question"`` is the output size (number of triples returned), reported next to the
    full-list metrics because a recall over 300 triples is not one over 16."""

    metric: str
    k: int = names.K
    golden_key: str = GOLDEN_KEY
    #: the graph the predictions are made on (``gv1``, ``gv3_orkg``); None: not checked unless the output names it
    graph: str | None = None

    def __init__(self, metric: str, *, k: int = names.K, golden_key: str = GOLDEN_KEY, graph: str | None = None,
                 **kw: Any) -> None:
        known = set(names.retrieval_names(k)) | {names.TRIPLES_PER_QUESTION}
        if metric not in known:
            raise ValueError(f"unknown retrieval metric {metric!r}; one of {sorted(known)}")
        super().__init__(name=kw.pop("name", metric), metric=metric, k=k, golden_key=golden_key, graph=graph, **kw)

    def __call__(self, *, inputs: Any = None, outputs: Any = None, expectations: Any = None) -> Feedback:
        other_graph = graph_mismatch(outputs, expectations, self.graph)
        if other_graph:
            return Feedback(name=self.name, error=AssessmentError(
                error_code="HUBLAB_GRAPH_MISMATCH", error_message=f"{row_label(inputs, expectations)}: {other_graph}"))
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


def retrieval_scorers(metrics: tuple[str, ...] = HEADLINE, *, k: int = names.K, golden_key: str = GOLDEN_KEY,
                      graph: str | None = None) -> list[ThesisRetrievalScorer]:
    """The scorers for ``mlflow.genai.evaluate(..., scorers=retrieval_scorers())``: by default Hits@10, MAP@10,
    MRR@10, Recall@10, full-list recall and precision, and the output size. ``graph``: the graph the predictions
    are made on; a row whose expectations name another is an error for that row."""
    if k != names.K:
        metrics = tuple(m.replace(f"_at_{names.K}_", f"_at_{k}_") for m in metrics)
    return [ThesisRetrievalScorer(m, k=k, golden_key=golden_key, graph=graph) for m in metrics]


class ThesisGenerationScorer(Scorer):
    """BLEU or a ROUGE value of the generated answer against the golden one, by HubLab's own code
    (``hublab.evaluation.generation``: the thesis's answer cleaning and rounding), as ``hublab eval-file`` gives it.
    The answer is the output itself (a string) or its ``answer`` / ``generated_answer`` key."""

    metric: str
    answer_key: str = ANSWER_KEY

    def __init__(self, metric: str, *, answer_key: str = ANSWER_KEY, **kw: Any) -> None:
        if metric not in GENERATION:
            raise ValueError(f"unknown generation metric {metric!r}; one of {sorted(GENERATION)}")
        super().__init__(name=kw.pop("name", metric), metric=metric, answer_key=answer_key, **kw)

    def __call__(self, *, inputs: Any = None, outputs: Any = None, expectations: Any = None) -> Feedback:
        from hublab.evaluation.generation import GenerationEvaluator

        answer = outputs if isinstance(outputs, str) else None
        if isinstance(outputs, Mapping):
            answer = next((outputs[k] for k in ANSWER_OUTPUT_KEYS if isinstance(outputs.get(k), str)), None)
        golden = expectations.get(self.answer_key) if isinstance(expectations, Mapping) else None
        why = None
        if answer is None:
            why = f"the output has no answer (a string, or a dict with one of {list(ANSWER_OUTPUT_KEYS)})"
        elif not isinstance(golden, str) or not golden.strip():
            why = f"no golden answer: the row's expectations have no '{self.answer_key}'"
        if why:
            return Feedback(name=self.name, error=AssessmentError(
                error_code="HUBLAB_INVALID_ROW", error_message=f"{row_label(inputs, expectations)}: {why}"))
        row = GenerationEvaluator([GENERATION[self.metric]]).evaluate(
            [{"generated_answer": answer, "golden_answer": golden}])[0]
        return Feedback(name=self.name, value=float(row[self.metric]))


def generation_scorers(metrics: tuple[str, ...] = GENERATION_HEADLINE) -> list[ThesisGenerationScorer]:
    """BLEU and ROUGE-1/2/L F1 by default (every ROUGE precision/recall is available by name)."""
    return [ThesisGenerationScorer(m) for m in metrics]
