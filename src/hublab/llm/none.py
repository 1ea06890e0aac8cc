"""LLM-free mode: no model at all. Retrievers check ``is_llm_free`` and run their deterministic
implementations of each LLM step (template verbalisation, rules, extractive answers)."""

from __future__ import annotations

from dataclasses import dataclass

from hublab.llm.base import LLM, LLMResponse


@dataclass
class NoLLM(LLM):
    model: str = "none"
    is_llm_free: bool = True

    def _complete(self, prompt, *, json_schema, max_tokens, system) -> LLMResponse:
        return LLMResponse(text="", error="llm-free mode: no LLM configured")
