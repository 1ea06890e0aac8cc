"""USD prices per 1M tokens, so runs report what their LLM calls cost (the thesis chose models partly by cost).

Defaults are OpenAI's standard-tier list prices for the models the thesis used (checked 2025; prices change, so a
pipeline can override them with ``llm.price_input_per_1m`` / ``llm.price_output_per_1m``). Local endpoints and
unknown models cost 0 unless prices are configured. Reasoning tokens are billed as output tokens and are already
part of ``completion_tokens``.
"""

from __future__ import annotations

from hublab.llm.requests import is_openai_endpoint

# model → (input, output) USD per 1M tokens
DEFAULT_PRICES: dict[str, tuple[float, float]] = {
    "o3-mini": (1.10, 4.40),
    "gpt-4o": (2.50, 10.00),
    "gpt-4o-mini": (0.15, 0.60),
    "text-embedding-3-large": (0.13, 0.0),
}


def _listed(model: str) -> tuple[float, float] | None:
    """Exact name, else the longest listed name that the model starts with (dated snapshots such as
    ``gpt-4o-mini-2024-07-18``)."""
    name = model.rsplit("/", 1)[-1].lower()
    if name in DEFAULT_PRICES:
        return DEFAULT_PRICES[name]
    hits = [k for k in DEFAULT_PRICES if name.startswith(k + "-")]
    return DEFAULT_PRICES[max(hits, key=len)] if hits else None


def price_for(model: str, base_url: str | None = None, price_input_per_1m: float | None = None,
              price_output_per_1m: float | None = None) -> tuple[float, float]:
    """(input, output) USD per 1M tokens: configured values win, then the table (OpenAI endpoints only), else 0."""
    listed = _listed(model) if is_openai_endpoint(base_url) else None
    default_in, default_out = listed or (0.0, 0.0)
    return (default_in if price_input_per_1m is None else float(price_input_per_1m),
            default_out if price_output_per_1m is None else float(price_output_per_1m))


def cost_usd(prompt_tokens: int, completion_tokens: int, price: tuple[float, float]) -> float:
    return (prompt_tokens * price[0] + completion_tokens * price[1]) / 1_000_000
