"""LLM layer: one interface for OpenAI-compatible endpoints, embedded llama.cpp and the LLM-free mode."""

from hublab.llm.base import LLM, LLMResponse, TokenUsage

__all__ = ["LLM", "LLMResponse", "TokenUsage"]
