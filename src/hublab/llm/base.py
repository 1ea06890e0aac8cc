"""The LLM interface. Retrievers call ``complete``/``complete_json``; token usage is accumulated so
the runner can report prompt/completion tokens per question."""

from __future__ import annotations

import threading
import time
from abc import ABC, abstractmethod
from dataclasses import dataclass, field, fields
from typing import Any, ClassVar

from hublab import observability


@dataclass
class TokenUsage:
    prompt_tokens: int = 0
    completion_tokens: int = 0
    calls: int = 0
    cached_calls: int = 0
    errors: int = 0  # calls that ended in an error after retries (LLMResponse.error set)
    retries: int = 0  # extra attempts made by the backend (timeouts, HTTP 5xx, dropped parameters)
    cost: float = 0.0  # price of the calls (llm/pricing), 0 when unknown

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    def add(self, other: TokenUsage) -> None:
        self.prompt_tokens += other.prompt_tokens
        self.completion_tokens += other.completion_tokens
        self.calls += other.calls
        self.cached_calls += other.cached_calls
        self.errors += other.errors
        self.retries += other.retries
        self.cost += other.cost


@dataclass
class LLMResponse:
    text: str
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached: bool = False
    data: Any = None  # parsed JSON when a schema was requested
    error: str | None = None  # set when the call failed (timeout, malformed JSON): caller degrades gracefully
    retries: int = 0  # extra attempts the backend made for this call
    cost: float = 0.0


@dataclass
class LLM(ABC):
    """Base class. ``is_llm_free`` tells retrievers to use their deterministic non-LLM path."""

    model: str = "none"
    usage: TokenUsage = field(default_factory=TokenUsage)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    #: ``time.monotonic()`` after which calls give up at once (the question's budget; None: each call's own bound)
    _deadline: float | None = field(default=None, repr=False)

    is_llm_free: bool = False

    # settings that change neither the request nor the answer (timeouts, key names, prices): not in cache keys
    _cache_exclude: ClassVar[frozenset[str]] = frozenset()
    #: span type of a traced call (``observability``): LLM for completion backends, CHAT_MODEL for chat endpoints
    span_kind: ClassVar[str] = observability.LLM

    @abstractmethod
    def _complete(self, prompt: str, *, json_schema: dict | None, max_tokens: int, system: str | None) -> LLMResponse:
        """Backend call (no caching, no accounting)."""

    def complete(
        self,
        prompt: str,
        *,
        json_schema: dict | None = None,
        max_tokens: int = 512,
        system: str | None = None,
    ) -> LLMResponse:
        with observability.span("llm.complete", self.trace_kind(), inputs=_span_inputs(prompt, system, json_schema,
                                                                                    max_tokens)) as sp:
            t0 = time.perf_counter()
            resp = _scrubbed(self._complete(prompt, json_schema=json_schema, max_tokens=max_tokens, system=system),
                             self.secret_values())
            latency = time.perf_counter() - t0
            with self._lock:
                self.usage.add(
                    TokenUsage(resp.prompt_tokens, resp.completion_tokens, 1, 1 if resp.cached else 0,
                               1 if resp.error else 0, resp.retries, resp.cost)
                )
            if sp.recording:
                sp.set_outputs({"text": resp.text, "data": resp.data} if resp.data is not None else resp.text)
                sp.set_token_usage(resp.prompt_tokens, resp.completion_tokens)
                sp.set_attributes({"model": self.model, "backend": type(self).__name__, "latency_s": latency,
                                   "prompt_tokens": resp.prompt_tokens, "completion_tokens": resp.completion_tokens,
                                   "cached": resp.cached, "retries": resp.retries, "cost_usd": resp.cost,
                                   "error": resp.error or ""})
        return resp

    def trace_kind(self) -> str:
        return self.span_kind

    def set_deadline(self, deadline: float | None) -> None:
        """Bound every call until ``deadline`` (``time.monotonic()``; None lifts it): a question's time budget
        (``evaluation.question_timeout_s``) over all the calls it makes, not only each call's own bound."""
        self._deadline = deadline

    def secret_values(self) -> list[str]:
        """The credentials this backend sends (API keys read from the environment), so that whatever is stored of
        its answers can be scrubbed of them even where an endpoint echoes them back. None by default."""
        return []

    def cache_identity(self, prompt: str, *, json_schema: dict | None, max_tokens: int,
                       system: str | None) -> dict[str, Any]:
        """Everything that determines the answer to this call: the cache keys on it (``llm/cache.py``). Default:
        the backend class, every public setting and the call's arguments; backends that talk HTTP add the body
        they would send. Never includes secrets (settings hold env-var *names*, not keys)."""
        settings = {f.name: getattr(self, f.name, None) for f in fields(self)
                    if not f.name.startswith("_") and f.name not in {"usage", "is_llm_free"}
                    and f.name not in self._cache_exclude}
        return {"backend": type(self).__name__, "settings": settings, "system": system, "prompt": prompt,
                "schema": json_schema, "max_tokens": max_tokens}

    def reset_usage(self) -> TokenUsage:
        """Return the usage so far and start counting from zero (called per question by the runner)."""
        with self._lock:
            u, self.usage = self.usage, TokenUsage()
        return u


def _scrubbed(resp: LLMResponse, secrets: list[str]) -> LLMResponse:
    """The answer with every key masked as it arrives (``hublab.redact.scrub``), so nothing built from it holds
    one: an endpoint that echoes the request's ``Authorization`` header put ``Bearer sk-…`` into its answers, and
    from there into caches, path texts, index rows and predictions. Only strings change; keys of ``data`` stay."""
    from hublab.redact import register_secret, scrub

    for value in secrets:
        register_secret(value)

    def clean(obj: Any) -> Any:
        if isinstance(obj, str):
            return scrub(obj)
        if isinstance(obj, dict):
            return {k: clean(v) for k, v in obj.items()}
        if isinstance(obj, list):
            return [clean(v) for v in obj]
        return obj

    resp.text = scrub(resp.text or "") if resp.text else resp.text
    resp.data = clean(resp.data)
    resp.error = scrub(resp.error) if resp.error else resp.error
    return resp


def _span_inputs(prompt: str, system: str | None, json_schema: dict | None, max_tokens: int) -> dict[str, Any]:
    messages = ([{"role": "system", "content": system}] if system else []) + [{"role": "user", "content": prompt}]
    return {"messages": messages, "json_schema": json_schema, "max_tokens": max_tokens}


def llm_free(llm: LLM | None) -> bool:
    """No LLM configured, or the configured one is the deterministic ``none`` backend: use the LLM-free path."""
    return llm is None or llm.is_llm_free
