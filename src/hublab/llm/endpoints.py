"""The OpenAI-compatible endpoints a pipeline configuration will call. Read by the LLM estimate (this package)
and by the run's preflight check (above it), so it lives here, in the LLM layer."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from hublab.llm.requests import is_openai_endpoint


@dataclass(frozen=True)
class LLMEndpoint:
    """One ``backend: openai`` LLM a run will call: where it is configured, the endpoint, model and key variable
    (resolved as ``OpenAICompatibleLLM`` resolves it: OpenAI's own API reads ``OPENAI_API_KEY`` by default)."""

    field: str
    base_url: str | None
    model: str
    key_env: str | None


def llm_endpoints(cfg: Any) -> list[LLMEndpoint]:
    """The distinct OpenAI-compatible LLMs a run of ``cfg`` calls (after the ``--llm-base-url`` override): the
    pipeline's (when the retriever's class ``uses_llm``, ``cfg.retriever_uses_llm``, or an enabled pipe has no LLM
    of its own), an enabled pipe's own, and the judge of the generation metrics. A configured LLM nothing calls
    needs no key and costs nothing."""
    pipes = [getattr(cfg, pipe) for pipe in ("pre_retrieval", "post_retrieval", "generation")]
    top_used = getattr(cfg, "retriever_uses_llm", True) or any(p.get("enabled") and not p.get("llm") for p in pipes)
    sections = [("llm", cfg.llm)] if top_used else []
    for pipe in ("pre_retrieval", "post_retrieval", "generation"):
        section = getattr(cfg, pipe)
        if section.get("enabled") and section.get("llm"):
            sections.append((f"{pipe}.llm", section["llm"]))
    if cfg.evaluation.get("generation_metrics") and cfg.evaluation.get("judge_llm"):
        sections.append(("evaluation.judge_llm", cfg.evaluation["judge_llm"]))
    out: dict[tuple[Any, ...], LLMEndpoint] = {}
    for name, sec in sections:
        if (sec or {}).get("backend") != "openai":
            continue
        base_url = sec.get("base_url") or None
        env = sec.get("api_key_env") or ("OPENAI_API_KEY" if is_openai_endpoint(base_url) else None)
        ep = LLMEndpoint(name, base_url, str(sec.get("model") or "gpt-4o-mini"), env)
        out.setdefault((ep.base_url, ep.model, ep.key_env), ep)
    return list(out.values())
