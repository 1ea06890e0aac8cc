"""Metric names: the one naming scheme of every metric HubLab produces.

Every producer builds its names here — the per-question records and predictions CSV, ``hublab run`` (table,
``--json``, ``--output``), the DVC files (``reports/eval/*/metrics.json``, ``all_metrics.json``, the slice
CSVs), ``hublab report summary`` / ``compare``, tuning objectives, ``hublab stark eval`` and the MLflow metric
keys. Names are valid MLflow keys as they are (ASCII letters, digits, ``_ - . /`` and space; no ``@``), so
nothing is renamed on the way to MLflow: a name means the same thing in every file, table and run.

The scheme: ``<metric>_at_<k>_<level>`` for rank-cut metrics (``hit_at_10_triples``), ``<metric>_<level>``
for full-list metrics (``recall_triples``), ``n_<metric>`` for the number of questions a partly missing
metric was averaged over, ``<metric>/by_<field>/<value>`` for a thesis slice. docs/metrics.md lists every
name with its definition and thesis section.

The thesis's own files (reference predictions CSVs, ``thesis_results/*.csv``) spell the cut-off with ``@``
(``hit@10_triples``) and RAGAS factual correctness as ``factual_correctness(mode=f1)``; :func:`from_thesis`
reads such a column name as ours, :func:`thesis_column` gives the thesis's spelling of one of ours.
"""

from __future__ import annotations

import posixpath
import re

#: The rank cut-off of the thesis (§8.4.3.1) and of every headline metric.
K = 10
LEVELS = ("triples", "entities")
RANK_METRICS = ("hit", "map", "mrr")
SET_METRICS = ("precision", "recall", "f1", "f2")


def at_k(metric: str, k: int = K, level: str | None = None) -> str:
    """``hit_at_10_triples``; without a level ``stark_hit_at_1``."""
    return f"{metric}_at_{k}" + (f"_{level}" if level else "")


def full(metric: str, level: str = "triples") -> str:
    """A metric over the full retrieved list: ``recall_triples``."""
    return f"{metric}_{level}"


def count(metric: str) -> str:
    """How many questions had a value for a metric that some questions lack: ``n_faithfulness``."""
    return f"n_{metric}"


def retrieval_names(k: int = K) -> list[str]:
    """Every per-question thesis retrieval metric, in the order ``retrieval_metrics`` returns them."""
    out: list[str] = []
    for level in LEVELS:
        out += [at_k(m, k, level) for m in RANK_METRICS]
        out += [at_k(m, k, level) for m in SET_METRICS]
        out += [full(m, level) for m in SET_METRICS]
        out += [at_k("exact_match", k, level), full("exact_match", level)]
    return out


# ----------------------------------------------------------------- the headline metrics
RECALL_AT_10 = at_k("recall", K, "triples")
HITS_AT_10 = at_k("hit", K, "triples")
MAP_AT_10 = at_k("map", K, "triples")
MRR_AT_10 = at_k("mrr", K, "triples")
RECALL = full("recall")
PRECISION = full("precision")
F1 = full("f1")
TRIPLES_PER_QUESTION = "triples_per_question"
RUNTIME = "runtime"
LLM_TOKENS = "llm_tokens"
N_QUESTIONS = "n_questions"
N_ERRORS = "n_errors"

#: Headline metrics in the order they are shown: rank metrics at k = 10 first, then the full-list metrics next
#: to the number of triples they were measured over (a recall over 300 triples is not one over 16).
KEY_METRICS = (RECALL_AT_10, HITS_AT_10, MAP_AT_10, MRR_AT_10, TRIPLES_PER_QUESTION, RECALL, PRECISION, F1)
#: What ``metrics.json`` holds.
HEADLINE = (*KEY_METRICS, RUNTIME, LLM_TOKENS, N_QUESTIONS, N_ERRORS)
#: What ``headline.json`` (``dvc metrics show``) holds, under its LABELS: the @10 figures and the output size, so
#: the table of every evaluation stays within 120 columns
DVC_HEADLINE = (HITS_AT_10, MAP_AT_10, MRR_AT_10, RECALL_AT_10, TRIPLES_PER_QUESTION)

#: Column headings of the human-readable tables (Markdown); files and JSON carry the names themselves.
LABELS = {RECALL_AT_10: "Recall@10", HITS_AT_10: "Hits@10", MAP_AT_10: "MAP@10", MRR_AT_10: "MRR@10",
          TRIPLES_PER_QUESTION: "triples/q", RECALL: "Recall", PRECISION: "Precision", F1: "F1",
          RUNTIME: "s/question", LLM_TOKENS: "LLM tokens/question", N_QUESTIONS: "questions", N_ERRORS: "errors"}


# ----------------------------------------------------------------- STaRK family
def stark(metric: str, k: int | None = None) -> str:
    """STaRK's binary metrics next to the thesis's: ``stark_hit_at_1``, ``stark_recall_at_20``, ``stark_mrr``."""
    return f"stark_{metric}" if k is None else at_k(f"stark_{metric}", k)


STARK_HIT_KS = (1, 5, 10)
STARK_RECALL_K = 20
#: ``hublab stark eval`` reports STaRK's own four metrics without the prefix (hit_at_1, hit_at_5, recall_at_20, mrr).
STARK_OWN = (at_k("hit", 1), at_k("hit", 5), at_k("recall", STARK_RECALL_K), "mrr")


# ----------------------------------------------------------------- generation
def factual_correctness(mode: str) -> str:
    """RAGAS factual correctness per mode: ``factual_correctness_mode_f1`` (thesis: ``…(mode=f1)``)."""
    return f"factual_correctness_mode_{mode}"


FACTUAL_CORRECTNESS_MODES = ("f1", "precision", "recall")


# ----------------------------------------------------------------- slices and validity
_SEGMENT_BAD = re.compile(r"[^A-Za-z0-9_.\- ]")


def slice_metric(metric: str, field: str, value: object) -> str:
    """A metric on one slice of the benchmark (thesis Tables 10.2–10.6): ``recall_triples/by_hops/2``. The
    slice value is data, so characters a name may not hold become ``_``."""
    seg = _SEGMENT_BAD.sub("_", str(value)).strip() or "_"
    if seg in (".", ".."):
        seg = "_"
    return f"{metric}/by_{field}/{seg}"


_VALID = re.compile(r"[A-Za-z0-9_.\- /]+")


def is_valid(name: str) -> bool:
    """A name MLflow stores as it is (its own rule, restricted to ASCII; no path tricks such as ``a//b``)."""
    return bool(_VALID.fullmatch(name)) and posixpath.normpath(name) == name and not name.startswith(("/", ".."))


def check(name: str) -> str:
    if not is_valid(name):
        raise ValueError(f"metric name {name!r} is not in HubLab's naming scheme (hublab.evaluation.names): use "
                         "ASCII letters, digits, '_', '-', '.', '/' and spaces")
    return name


# ----------------------------------------------------------------- the thesis's spelling
_THESIS_AT = re.compile(r"@(\d+)")
_THESIS_FC = re.compile(r"^factual_correctness\(mode=(\w+)\)$")
_OURS_AT = re.compile(r"_at_(\d+)")
_OURS_FC = re.compile(r"^factual_correctness_mode_(\w+)$")


def from_thesis(column: str) -> str:
    """A column name of the thesis's files as ours: ``hit@10_triples`` → ``hit_at_10_triples``,
    ``factual_correctness(mode=f1)`` → ``factual_correctness_mode_f1``; other names are unchanged."""
    m = _THESIS_FC.match(column)
    if m:
        return factual_correctness(m.group(1))
    return _THESIS_AT.sub(r"_at_\1", column)


def thesis_column(name: str) -> str:
    """The thesis's spelling of one of our names (the inverse of :func:`from_thesis`)."""
    m = _OURS_FC.match(name)
    if m:
        return f"factual_correctness(mode={m.group(1)})"
    return _OURS_AT.sub(r"@\1", name)
