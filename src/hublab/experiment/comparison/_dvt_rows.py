"""The default-vs-tuned comparison's vocabulary: its constants, what a planned variant (:class:`Entry`) and a
table row (:class:`Row`) hold, how one run's per-question records become rows (all questions and those outside the
tuning set), and how rows fall into tables (graph × question set) and are ranked in them. Every other part of the
comparison (statistics, tables, chart, MLflow) reads rows through these, so they agree on groups, order and titles."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from hublab.config import ORKG_GRAPH, Settings
from hublab.evaluation import names
from hublab.pipeline.config import PipelineConfig
from hublab.reports import tables

GRAPHS = (("gv1", "gv1"), (ORKG_GRAPH, ORKG_GRAPH))  # (graph, dataset)
TUNING_SET = "reduced_gv1"
TUNING_N = 44  # questions in the tuning set (GV1 also holds one of them twice; neither copy counts as held out)
BOUND = 20
CI_METRICS = (names.HITS_AT_10, names.MAP_AT_10)
TEST_METRIC = names.MAP_AT_10
METRICS = (names.HITS_AT_10, names.MAP_AT_10, names.MRR_AT_10, names.RECALL_AT_10, names.RECALL,
           names.PRECISION, names.F1, names.TRIPLES_PER_QUESTION)
EXPERIMENT = "compare-fair"
ROUND = 4  # digits of every value written (no float noise in tables or MLflow)
DIFF = "diff_from_best_map_at_10"  # a row's MAP@10 minus the best row's (its own name: told apart in MLflow's columns)
#: what the thesis column holds: the thesis's LLM systems, not LLM-free ones
THESIS_SYSTEM = ("the thesis's reported MAP@10 of the method's final configuration, an LLM system (o3-mini with "
                 "OpenAI or mxbai embeddings; graph variants of Table 10.5, HubLink on GV1 from the final "
                 "comparison): not like-for-like with the LLM-free rows")


@dataclass
class Entry:
    method: str
    config: str  # default | tuned
    pipeline: Path
    cfg: PipelineConfig
    study: str = ""
    changed: str = ""  # tuned entries: the retriever parameters that differ from the default pipeline's


@dataclass
class Row:
    method: str
    graph: str
    subset: str  # all | held_out
    config: str
    pipeline: str
    n_questions: int
    metrics: dict[str, float]
    per_question: dict[str, list[float]] = field(repr=False, default_factory=dict)
    ci: dict[str, tuple[float, float]] = field(default_factory=dict)
    p_value: float | None = None
    p_vs_default: float | None = None  # tuned rows: the same test against the method's default row
    p_holm: float | None = None  # p_value corrected across the other rows of its table (Holm)
    p_vs_default_holm: float | None = None  # p_vs_default corrected across the tuned rows of its table (Holm)
    diff: float | None = None  # MAP@10 minus the best row's (0 for the best row)
    diff_ci: tuple[float, float] | None = None  # its 95% paired bootstrap interval (None for the best row)
    best: bool = False
    thesis_map: float | None = None
    study: str = ""
    mlflow_run: str = ""
    changed: str = ""  # tuned rows: ``name=value`` of each retriever parameter tuning changed, ``; ``-separated
    status: str = ""  # a run that did not answer every question: ``tables.run_status`` (never a silent row of zeros)


def _norm(text: str) -> str:
    return re.sub(r"\s+", " ", text.strip().lower())


def tuning_questions(st: Settings) -> tuple[set[str], set[str]]:
    """uids and normalised wordings of the tuning set: a question is held out only if it matches neither (the
    dataset holds one question twice under two uids)."""
    from hublab.datasets.catalog import load_dataset

    pairs = load_dataset(st, TUNING_SET)
    return {p.uid for p in pairs}, {_norm(p.question) for p in pairs}


def rows_for(entry: Entry, graph: str, records: list[dict[str, Any]], held_out: tuple[set[str], set[str]] | None,
             run_id: str, thesis: float | None, failure: tuple[bool, str] = (False, "")) -> list[Row]:
    """One run's rows: all its questions and, where ``held_out`` is given, those outside the tuning set."""
    subsets = [("all", records)]
    if held_out is not None:
        uids, texts = held_out
        subsets.append(("held_out", [r for r in records if r["uid"] not in uids
                                     and _norm(str(r.get("question", ""))) not in texts]))
    rows = []
    for subset, recs in subsets:
        per_q = {m: [float(r["metrics"].get(m) or 0.0) for r in recs] for m in METRICS if m !=
                 names.TRIPLES_PER_QUESTION}
        means = {m: float(np.mean(v)) if v else float("nan") for m, v in per_q.items()}
        means[names.TRIPLES_PER_QUESTION] = float(np.mean([len(r.get("retrieved_context") or []) for r in recs])) \
            if recs else float("nan")
        status = tables.run_status(len(recs), sum(bool(r.get("error")) for r in recs), failed=failure[0],
                                   reason=failure[1])
        rows.append(Row(entry.method, graph, subset, entry.config, entry.pipeline.as_posix(), len(recs), means,
                        {m: per_q[m] for m in CI_METRICS}, thesis_map=thesis, study=entry.study, mlflow_run=run_id,
                        changed=entry.changed, status=status))
    return rows


def groups(rows: list[Row]) -> dict[tuple[str, str], list[Row]]:
    """(graph, question set) → its rows, in the order the groups first appear."""
    out: dict[tuple[str, str], list[Row]] = {}
    for r in rows:
        out.setdefault((r.graph, r.subset), []).append(r)
    return out


def order(rows: list[Row]) -> list[Row]:
    """Best MAP@10 first, then by method and config name."""
    return sorted(rows, key=lambda r: (-round(r.metrics[TEST_METRIC], 12), r.method, r.config))


GROUP_TITLE = {("gv1", "all"): "GV1 (rebuilt), all questions",
               ("gv1", "held_out"): "GV1 (rebuilt), questions outside the tuning set",
               (ORKG_GRAPH, "all"): "GV3 (ORKG export), all questions"}


def title(graph: str, subset: str, n: int, titles: dict[tuple[str, str], str] | None = None) -> str:
    """A table's heading: ``titles`` (a comparison on another graph names its own groups), else the thesis's."""
    return {**GROUP_TITLE, **(titles or {})}.get((graph, subset), f"{graph}, {subset}") + f" ({n})"
