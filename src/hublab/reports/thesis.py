"""The thesis's number for one of our methods on one of our graphs: the one thesis lookup (the comparison reports,
a run's ``thesis_reference.json``, the LLM cost estimate's tokens per question).

Built on :mod:`hublab.evaluation.thesis_tables` (the parsed result tables) and the names the retrievers declare
(``Retriever.thesis_name``, via :func:`hublab.retrievers.registry.thesis_names`). Our graph names map to the
thesis's variants (``gv3_orkg`` → ``GV3``). Two readings of the tables exist, because the reports quote different
ones: the graph-variant table alone (Table 10.5: Recall, Precision, F1, MAP@10 of each method on each variant; the
one-graph report, whose rows say "Table 10.5"), and that table with HubLink on GV1 taken from the final comparison
(every metric of its Traverse / o3-mini configuration; the evaluations table and the default-vs-tuned comparison).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from hublab.config import Settings
from hublab.evaluation import thesis_tables
from hublab.retrievers.registry import thesis_names

#: what the thesis's numbers were produced with (graph_variants.csv)
SETTING = "OpenAI LLM + embeddings (Table 10.5)"
VARIANT_TABLE = "graph_variants.csv (Table 10.5)"


@dataclass(frozen=True)
class Thesis:
    """The thesis's reported numbers, asked for by our method and graph names."""

    results: dict[str, dict[str, dict[str, float]]]  # {thesis method: {variant: {metric name: value}}}
    names: dict[str, str]  # {our method: its name in the thesis's tables}

    @classmethod
    def load(cls, st: Settings, *, variant_table_only: bool = False) -> Thesis:
        """The tables under ``params.yaml: paths.thesis_results``; ``variant_table_only``: Table 10.5 alone (HubLink
        on GV1 as that table reports it, not from the final comparison)."""
        base = st.path("thesis_results")
        results = thesis_tables.graph_variants(base) if variant_table_only else thesis_tables.by_method(base)
        return cls(results, thesis_names())

    def name(self, method: str) -> str:
        """The thesis's name for our method (``hublink`` → ``HubLink``); ``""`` for a method it does not report."""
        return self.names.get(method, "")

    def number(self, method: str, graph: str) -> dict[str, float]:
        """``{metric name: value}`` the thesis reports for our method on our graph's variant; ``{}`` where none."""
        return dict(self.results.get(self.name(method), {}).get(thesis_tables.variant(graph) or "", {}))

    def on_graph(self, graph: str) -> dict[str, dict[str, float]]:
        """``{thesis method: metrics}`` of every method the thesis reports on our graph's variant."""
        var = thesis_tables.variant(graph)
        return {} if var is None else {m: dict(by[var]) for m, by in self.results.items() if var in by}

    def method(self, thesis_name: str) -> str:
        """Our method name for a thesis method (its lower-cased name where no retriever declares it)."""
        ours = {v: k for k, v in self.names.items()}
        return ours.get(thesis_name, thesis_name.lower())


def label(thesis_name: str, graph: str) -> str:
    """``HubLink (GV1)``: a thesis method on our graph's variant (the graph's own name where it has none)."""
    return f"{thesis_name} ({thesis_tables.variant(graph) or graph})"


def run_reference(st: Settings, method: str, graph: str) -> dict[str, float]:
    """What a run's artifacts quote beside its metrics: Table 10.5's numbers for ``method`` on ``graph``'s variant;
    a dataset name stands for its graph (``reduced_gv1`` → GV1); ``{}`` where the thesis has none."""
    return Thesis.load(st, variant_table_only=True).number(method, st.graph_for_dataset(graph))


#: the final comparison's configuration (final_comparison_gv1.csv ``Config``) of the other methods it reports
FINAL_CONFIG = {"difar": "DiFaR", "fidelis": "FiDeLiS", "mindmap": "Mindmap"}


def final_config(cfg: Any) -> str | None:
    """The thesis's final-comparison configuration a pipeline corresponds to (HubLink by its strategy and hub
    budget, unset parameters taking HubLink's defaults); None for a method the comparison does not report."""
    if cfg.retriever_type == "hublink":
        from hublab.retrievers.methods.hublink.params import HubLinkParams

        default, p = HubLinkParams(), cfg.retriever_params
        if p.get("use_topic_if_given", default.use_topic_if_given):
            return "HubLink (Traverse)"
        return "HubLink (Fast)" if int(p.get("number_of_hubs", default.number_of_hubs)) <= 10 else "HubLink (Direct)"
    return FINAL_CONFIG.get(cfg.retriever_type)


def tokens_for(st: Settings, cfg: Any) -> tuple[str | None, float | None]:
    """``(final-comparison configuration, its LLM tokens per question on GV1)`` for the pipeline ``cfg``: what the
    LLM estimate quotes before a configuration has a measurement of its own; either None where the thesis has none."""
    row = final_config(cfg)
    return row, (tokens_per_question(st).get(row) if row else None)


def tokens_per_question(st: Settings) -> dict[str, float]:
    """LLM tokens per question of each configuration of the thesis's final comparison on GV1 (Table 10.8)."""
    from hublab.evaluation import names

    final = thesis_tables.final_comparison(st.path("thesis_results"))
    return {config: m[names.LLM_TOKENS] for config, m in final.items() if names.LLM_TOKENS in m}
