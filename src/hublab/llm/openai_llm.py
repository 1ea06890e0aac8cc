"""Any OpenAI-compatible chat endpoint (OpenAI, Ollama, vLLM, llama.cpp server) via the ``openai`` client.

The request body comes from the capability table in ``llm/requests.py``. The retry loop is ours (the client's own
retries are off) so that every attempt is counted and the whole call is bounded:

- HTTP 408/409/429/5xx, timeouts, refused connections and malformed JSON replies are retried up to ``max_retries``
  times with exponential backoff; the call never runs longer than ``timeout_s * (max_retries + 1)``.
- HTTP 400/422 naming an unsupported parameter drops it (or renames it when the server says what to use instead),
  logs that once and retries; a rejected ``response_format`` (400/422, or 500 from llama-cpp-python's validator)
  falls back to the next format. Both are remembered per (endpoint, model) for the rest of the process.
- A reply that does not hold JSON of the schema's shape is a fault too (``malformed JSON``): retried, then an error.
- Prompts are sent as given. An object schema is also spelled out after the prompt (the project's own JSON prompts);
  a bare-array schema (the thesis's Listings A.3, A.4, A.6, which print their own format) adds nothing, and goes as
  a ``response_format`` only to servers that constrain any root type (``requests.schema_formats``).
- Any other failure ends the call. Failures come back as ``LLMResponse(error=...)`` so a run degrades for that
  question instead of crashing, with two bounds above the call's own: a question's time budget
  (``LLM.set_deadline``: every later call of the question fails at once), and an endpoint that failed
  ``STOP_AFTER_FAILED_CALLS`` calls in a row (each after its retries: down, overloaded, answering HTTP 5xx) raises
  ``ServiceUnavailable``, which stops a run (checkpoint kept) or an index build with one line, instead of
  hundreds more failing requests with nothing printed.

The API key is read from the environment variable named in the config; it is never logged, stored or put in a
cache key, and local endpoints get no key unless ``api_key_env`` names one.
"""

from __future__ import annotations

import json
import logging
import os
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from hublab.errors import ServiceUnavailable
from hublab.llm.base import LLM, LLMResponse
from hublab.llm.jsonutil import extract_for_schema
from hublab.llm.pricing import cost_usd, price_for
from hublab.llm.requests import (
    CAPABILITIES,
    build_request,
    family_for,
    is_openai_endpoint,
    schema_formats,
    unsupported_param,
    where,
)
from hublab.llm.waiting import waiting_notice
from hublab.redact import register_secret

log = logging.getLogger(__name__)

_RETRY_STATUS = {408, 409, 429}
_MAX_BACKOFF_S = 8.0


@dataclass
class _Learned:
    """What an endpoint turned out not to accept (per process, shared by every instance for that endpoint)."""

    dropped: set[str] = field(default_factory=set)
    renamed: dict[str, str] = field(default_factory=dict)
    format_index: int = 0


_LEARNED: dict[tuple[str | None, str], _Learned] = {}
_LEARNED_LOCK = threading.Lock()


def _learned(base_url: str | None, model: str) -> _Learned:
    with _LEARNED_LOCK:
        return _LEARNED.setdefault((base_url, model), _Learned())


#: calls in a row (each after its own retries) that found the endpoint down or failing before a run or build stops
STOP_AFTER_FAILED_CALLS = 8
_FAILED_IN_A_ROW: dict[tuple[str | None, str], int] = {}
_BUDGET_SPENT = "the question's time budget (evaluation.question_timeout_s) is spent: call not made"


def _endpoint_health(base_url: str | None, model: str, failed: bool, error: str) -> None:
    """Count calls that ended on an endpoint fault (connection, timeout, HTTP 408/409/429/5xx) in a row per
    (endpoint, model); a success resets it. At ``STOP_AFTER_FAILED_CALLS`` the endpoint is taken as down."""
    key = (base_url, model)
    with _LEARNED_LOCK:
        n = _FAILED_IN_A_ROW[key] = _FAILED_IN_A_ROW.get(key, 0) + 1 if failed else 0
        if n >= STOP_AFTER_FAILED_CALLS:
            _FAILED_IN_A_ROW[key] = 0  # a rerun in this process (a notebook) starts counting again
    if n >= STOP_AFTER_FAILED_CALLS:
        raise ServiceUnavailable(f"the LLM endpoint {model} at {where(base_url)} failed {n} calls in a row, each after "
                                 f"its retries (last: {error[:200]}); stopped: fix or restart the endpoint, then "
                                 "rerun the same command (a run resumes from its checkpoint)")


class _Fault(Exception):
    """A failed attempt that may be retried."""


@dataclass
class OpenAICompatibleLLM(LLM):
    model: str = "gpt-4o-mini"
    base_url: str | None = None
    api_key_env: str | None = None  # None: OPENAI_API_KEY for OpenAI endpoints, no key for others
    temperature: float | None = None  # None: the family's default (0.0 where temperature is accepted)
    max_tokens: int | None = None  # reasoning models: every call's budget; others: a cap on each step's limit
    timeout_s: float = 60.0
    max_retries: int = 3
    reasoning_effort: str | None = None
    request_rules: str = "auto"  # requests.family_for: auto (by model name, then endpoint) | reasoning | chat | local
    retry_backoff_s: float = 1.0
    price_input_per_1m: float | None = None
    price_output_per_1m: float | None = None
    _client: Any = field(default=None, repr=False)

    span_kind = "CHAT_MODEL"  # a chat-completions endpoint (observability.CHAT_MODEL)

    # settings that change neither the request nor the answer: not part of the cache key
    _cache_exclude = frozenset({"api_key_env", "timeout_s", "max_retries", "retry_backoff_s", "request_rules",
                                "price_input_per_1m", "price_output_per_1m"})

    @property
    def family(self) -> str:
        return family_for(self.model, self.base_url, self.request_rules)

    def secret_values(self) -> list[str]:
        env = self.api_key_env or ("OPENAI_API_KEY" if is_openai_endpoint(self.base_url) else None)
        key = os.environ.get(env) if env else None
        return [key] if key and len(key) >= 6 else []

    def client(self):
        if self._client is None:
            from openai import OpenAI

            env = self.api_key_env or ("OPENAI_API_KEY" if is_openai_endpoint(self.base_url) else None)
            key = os.environ.get(env) if env else None
            if key is None and is_openai_endpoint(self.base_url):
                raise RuntimeError(f"environment variable {env} is not set")
            register_secret(key)  # whatever its variable is called: masked wherever it turns up
            self._client = OpenAI(base_url=self.base_url, api_key=key or "not-needed", timeout=self.timeout_s,
                                  max_retries=0)
        return self._client

    def _messages(self, prompt: str, json_schema: dict | None, system: str | None) -> list[dict]:
        # An object schema (the project's own JSON prompts) is also spelled out in the prompt: OpenAI's json_object
        # fallback cannot express keys, and not every server enforces response_format. Any other schema is the
        # bare list a thesis listing prints itself (A.3, A.4, A.6): that prompt is sent exactly as printed.
        if json_schema and json_schema.get("type") == "object":
            prompt = prompt + "\n\nReply with JSON only, matching this JSON schema:\n" + json.dumps(json_schema)
        return ([{"role": "system", "content": system}] if system else []) + [{"role": "user", "content": prompt}]

    def request_body(self, prompt: str, *, json_schema: dict | None = None, max_tokens: int = 512,
                     system: str | None = None) -> dict[str, Any]:
        """The body this configuration sends first (before anything the endpoint rejected is dropped)."""
        # Reasoning models spend hidden tokens first: the configured max_tokens is their per-call budget as is (a
        # 50-token step limit would return nothing), else the family floor. Other models get the step's own limit,
        # capped by the configured max_tokens: a base model without a stop token must not generate 4,096 tokens
        # for a one-line step.
        floor = CAPABILITIES[self.family].min_call_tokens
        configured = self.max_tokens if self.max_tokens and self.max_tokens > 0 else None
        if floor:
            limit = configured or max(max_tokens, floor)
        else:
            limit = min(max_tokens, configured) if configured else max_tokens
        formats = schema_formats(self.family, json_schema) if json_schema else []
        fmt = formats[0] if formats else None
        return build_request(self.model, self._messages(prompt, json_schema, system), base_url=self.base_url,
                             temperature=self.temperature, max_tokens=limit,
                             reasoning_effort=self.reasoning_effort, response_format=fmt,
                             rules=self.family)

    def cache_identity(self, prompt, *, json_schema, max_tokens, system) -> dict[str, Any]:
        return {**super().cache_identity(prompt, json_schema=json_schema, max_tokens=max_tokens, system=system),
                "base_url": self.base_url or "https://api.openai.com/v1",
                "request": self.request_body(prompt, json_schema=json_schema, max_tokens=max_tokens, system=system)}

    def _adapt(self, body: dict[str, Any], learned: _Learned, formats: list[dict]) -> dict[str, Any]:
        with _LEARNED_LOCK:  # another thread may be learning about the same endpoint
            dropped, renamed, index = set(learned.dropped), dict(learned.renamed), learned.format_index
        out = dict(body)
        for old, new in renamed.items():
            if old in out:
                value = out.pop(old)
                if new not in dropped:
                    out.setdefault(new, value)
        for name in dropped:
            out.pop(name, None)
        if formats and "response_format" in out:
            out["response_format"] = formats[min(index, len(formats) - 1)]
        return out

    def _learn(self, exc: Any, body: dict, learned: _Learned, formats: list[dict]) -> bool:
        """Adapt to a 400/422 if it names something we can leave out; False when there is nothing to adapt."""
        message = str(getattr(exc, "message", "") or exc)
        param = getattr(exc, "param", None)
        with _LEARNED_LOCK:
            if "response_format" in body and ("response_format" in message or "json_schema" in message
                                              or param == "response_format"):
                sent = body["response_format"]
                if sent in formats and formats.index(sent) < learned.format_index:
                    return True  # another call already moved on
                if learned.format_index + 1 >= len(formats):
                    return False
                learned.format_index += 1
                log.warning("%s at %s rejects response_format %s; using %s from now on", self.model,
                            where(self.base_url), body["response_format"]["type"],
                            formats[learned.format_index]["type"])
                return True
            if getattr(exc, "status_code", 400) >= 500:
                return False
            hit = unsupported_param(message, param)
            if hit is None or hit[0] not in body:
                return False
            name, instead = hit
            if name in learned.dropped or name in learned.renamed:
                return True  # another call already learned it
            if instead and instead not in body and instead not in learned.dropped:
                learned.renamed[name] = instead
            else:
                learned.dropped.add(name)
            log.warning("%s at %s does not support parameter %r; %s it from now on", self.model,
                        where(self.base_url), name, f"sending {instead!r} instead of" if
                        name in learned.renamed else "dropping")
            return True

    def _attempt(self, body: dict, timeout: float, json_schema: dict | None) -> tuple[str, Any, int, int]:
        """One HTTP call: (text, parsed data, prompt tokens, completion tokens); raises ``_Fault`` (retryable,
        carrying tokens already spent) or the client's exception."""
        resp = self.client().chat.completions.create(**body, timeout=timeout)
        usage = getattr(resp, "usage", None)
        pt = int(getattr(usage, "prompt_tokens", 0) or 0)
        ct = int(getattr(usage, "completion_tokens", 0) or 0)
        text = (resp.choices[0].message.content or "") if resp.choices else ""
        if not json_schema:
            return text, None, pt, ct
        try:  # lenient: the reply may wrap the JSON in prose or fences; a reply without it is a failed call
            data = extract_for_schema(text, json_schema)
        except ValueError as exc:
            raise _Fault(f"malformed JSON: {exc}", pt, ct) from None
        return text, data, pt, ct

    def _complete(self, prompt, *, json_schema, max_tokens, system) -> LLMResponse:
        try:
            return self._call(prompt, json_schema, max_tokens, system)
        except ServiceUnavailable:
            raise  # the endpoint is down: every later call would fail alike
        except Exception as exc:  # noqa: BLE001 - a bug in request building must not end a run either
            return LLMResponse(text="", error=f"{type(exc).__name__}: {exc}")

    def _call(self, prompt: str, json_schema: dict | None, max_tokens: int, system: str | None) -> LLMResponse:
        import openai

        # The client (and its lazily imported resources) is built before the clock starts: the bound is on waiting
        # for the endpoint, and building it under load took long enough to eat a whole call's retry budget.
        self.client().chat.completions  # noqa: B018 - touch the lazy resource so its import is off the clock
        start = time.monotonic()
        deadline = start + self.timeout_s * (self.max_retries + 1)
        if self._deadline is not None:
            if self._deadline - start <= 0.01:
                return LLMResponse(text="", error=_BUDGET_SPENT)
            deadline = min(deadline, self._deadline)
        learned = _learned(self.base_url, self.model)
        formats = schema_formats(self.family, json_schema) if json_schema else []
        body0 = self.request_body(prompt, json_schema=json_schema, max_tokens=max_tokens, system=system)
        price = price_for(self.model, self.base_url, self.price_input_per_1m, self.price_output_per_1m)
        ptoks = ctoks = faults = attempts = 0
        error = "no attempt"
        endpoint_fault = False  # the last failure was the endpoint's (down, timing out, HTTP 5xx), not the reply's
        # on the clock: a call still waiting after waiting.NOTICE_S says so on stderr, with its bound
        with waiting_notice(f"{self.model} at {where(self.base_url)}", deadline - start):
            while attempts < self.max_retries + 1 + len(body0) + len(formats):  # drops/fallbacks are finite too
                remaining = deadline - time.monotonic()
                if remaining <= 0.01:
                    break
                attempts += 1
                body = self._adapt(body0, learned, formats)
                retryable = True
                try:
                    text, data, pt, ct = self._attempt(body, min(self.timeout_s, remaining), json_schema)
                    ptoks, ctoks = ptoks + pt, ctoks + ct
                    _endpoint_health(self.base_url, self.model, False, "")
                    return LLMResponse(text=text, data=data, prompt_tokens=ptoks, completion_tokens=ctoks,
                                       retries=attempts - 1, cost=cost_usd(ptoks, ctoks, price))
                except _Fault as exc:
                    error, pt, ct = exc.args
                    ptoks, ctoks = ptoks + pt, ctoks + ct
                    endpoint_fault = False
                except openai.APIStatusError as exc:
                    error = f"{type(exc).__name__}: {exc}"
                    endpoint_fault = exc.status_code in _RETRY_STATUS or exc.status_code >= 500
                    # llama-cpp-python reports its request validation errors as HTTP 500
                    if exc.status_code in (400, 422, 500) and self._learn(exc, body, learned, formats):
                        continue  # adapted request: not a fault, no backoff
                    retryable = exc.status_code in _RETRY_STATUS or exc.status_code >= 500
                except openai.APIConnectionError as exc:  # includes APITimeoutError
                    error, endpoint_fault = f"{type(exc).__name__}: {exc}", True
                except Exception as exc:  # noqa: BLE001 - missing key, bad response shape ...: report, don't crash
                    error, retryable, endpoint_fault = f"{type(exc).__name__}: {exc}", False, False
                faults += 1
                if not retryable or faults > self.max_retries:
                    break
                log.info("%s at %s: attempt %d failed (%s); retrying", self.model, where(self.base_url), attempts,
                         error[:200])
                time.sleep(max(0.0, min(self.retry_backoff_s * 2 ** (faults - 1), _MAX_BACKOFF_S,
                                        deadline - time.monotonic())))
            _endpoint_health(self.base_url, self.model, endpoint_fault, error)
            return LLMResponse(text="", prompt_tokens=ptoks, completion_tokens=ctoks, error=error,
                               retries=max(0, attempts - 1), cost=cost_usd(ptoks, ctoks, price))
