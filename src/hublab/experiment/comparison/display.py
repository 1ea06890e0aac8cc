"""How the comparison reports name methods and write p-values: display names as the papers spell them (HubLink,
DiFaR, 4StepFocus, …) instead of code names, and p-values as a paper prints them (``< 0.001`` below the resampling
test's resolution instead of its floor, 0.0002)."""

from __future__ import annotations

from hublab.retrievers.registry import thesis_names

#: the baselines the thesis does not name in its tables, as their papers (or our docs) spell them
OWN_NAMES = {"bm25": "BM25", "vss": "VSS", "hybrid": "Hybrid (BM25 + VSS)", "four_step_focus": "4StepFocus",
             "structgpt": "StructGPT", "tog": "ToG", "mindmap": "MindMap"}
#: below this a p-value is written ``< 0.001`` (10,000 resamples resolve p to about 1e-4; the exact floor is noise)
P_FLOOR = 0.001


def display_name(method: str) -> str:
    """``hublink`` → ``HubLink``; a plugin's method keeps its own name."""
    return OWN_NAMES.get(method) or thesis_names().get(method) or method


def p_text(p: float | None) -> str:
    """``< 0.001``, else three decimals (``0.070``); ``–`` for no test."""
    if p is None:
        return "–"
    return f"< {P_FLOOR:g}" if p < P_FLOOR else f"{p:.3f}"
