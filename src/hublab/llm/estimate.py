"""What an LLM run will use before it starts: tokens and USD for its questions, from the method's measured
tokens per question — this configuration's own earlier run where MLflow has one (same config hash), else the
thesis's figure for the method (final comparison on GV1, Table 10.8: HubLink (T) 82,434 tokens per question).

The thesis reports tokens, not calls or the prompt/completion split; its ``llm_cost`` is within 1 % of all tokens
at the input price (prompts dominate), so the cost is estimated the same way, with the all-output price as the
upper bound. Prices come from :mod:`hublab.llm.pricing` (0 for local endpoints unless configured).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from hublab.llm.pricing import price_for


@dataclass(frozen=True)
class Estimate:
    n_questions: int
    tokens_per_question: float | None
    source: str  # where the per-question figure comes from
    model: str | None
    price: tuple[float, float] | None  # USD per 1M (input, output); None: an in-process model (no bill)

    @property
    def tokens(self) -> float | None:
        return None if self.tokens_per_question is None else self.tokens_per_question * self.n_questions

    def line(self) -> str:
        """One line for the console."""
        if self.model is None:
            return f"estimate: {self.n_questions} questions, LLM-free pipeline: no LLM calls, no tokens, no cost"
        if self.tokens is None:
            return (f"estimate: {self.n_questions} questions on {self.model}: no measured tokens per question for "
                    f"this method yet ({self.source}); the first run measures them")
        if self.price is None:
            cost = "$0 (an in-process model)"
        else:
            low, high = (self.tokens * p / 1e6 for p in self.price)
            high = max(low, high)  # an input price alone still bounds the cost
            cost = (f"≈ ${low:,.2f} (all tokens at the input price, as the thesis's llm_cost; at most ${high:,.2f})"
                    if high else "$0 (no price for this endpoint; set llm.price_input_per_1m to estimate)")
        return (f"estimate: {self.n_questions} questions × {self.tokens_per_question:,.0f} tokens/question "
                f"({self.source}) = {self.tokens:,.0f} tokens on {self.model}, cost {cost}; LLM calls are not "
                "counted in advance (the thesis reports tokens only)")


def estimate(cfg: Any, n_questions: int, *, thesis: tuple[str | None, float | None] = (None, None),
             measured: float | None = None) -> Estimate:
    """The run's estimate: its own measurement, else the thesis's.

    Args:
        cfg: the run's pipeline configuration.
        n_questions: how many questions the run will answer.
        thesis: the thesis's configuration this pipeline corresponds to and its tokens per question on GV1
            (:func:`hublab.reports.thesis.tokens_for`), either None where the thesis has none.
        measured: tokens per question of this configuration's last run, looked up by the caller in the tracking
            store (:func:`hublab.tracking.run_lookup.measured_tokens`).

    Returns:
        The estimate, whose :meth:`Estimate.line` the run prints.
    """
    from hublab.llm.endpoints import llm_endpoints

    eps = llm_endpoints(cfg)
    if eps:
        model = eps[0].model
        llm = cfg.llm if cfg.llm.get("backend") == "openai" else {}
        price = price_for(model, eps[0].base_url, llm.get("price_input_per_1m"), llm.get("price_output_per_1m"))
    elif cfg.llm.get("backend") == "llamacpp":  # in-process model: tokens, no price
        model, price = f"{cfg.llm.get('model', 'gemma3-270m')} (embedded llama.cpp)", None
    else:
        return Estimate(n_questions, None, "", None, (0.0, 0.0))
    if measured is not None:
        return Estimate(n_questions, measured, "this configuration's last run", model, price)
    row, per_q = thesis
    source = f"thesis, {row} on GV1" if per_q is not None else f"the thesis has no figure for {cfg.retriever_type}"
    return Estimate(n_questions, per_q, source, model, price)
