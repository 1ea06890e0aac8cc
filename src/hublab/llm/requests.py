"""Chat-completion request bodies per model family, from one capability table.

OpenAI's reasoning models (o1, o3, o3-mini, o4-mini, gpt-5*) reject ``temperature`` and ``max_tokens``: they take
``max_completion_tokens`` and ``reasoning_effort``. Chat models (gpt-4o, ...) take the classic parameters and not
``reasoning_effort``. Local servers (Ollama, vLLM, llama.cpp) take the classic parameters and ignore or reject the
rest. Sending the wrong set is an HTTP 400, so the body is built here, in one place, and the same body is what
the cache keys on. What a server still rejects is dropped at run time (``unsupported_param``).

An OpenAI model keeps OpenAI's rules wherever it is served: a gateway, a proxy or Azure in front of ``o3-mini``
forwards to a model that rejects ``temperature``, so the family comes from the model's name first and the endpoint
only decides for names OpenAI does not use. ``llm.request_rules`` (``auto`` | ``reasoning`` | ``chat`` | ``local``)
overrides it for an alias the name does not reveal (a gateway's ``my-reasoner``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlparse


@dataclass(frozen=True)
class Capabilities:
    token_param: str | None  # name of the output-token limit, None = send none
    min_call_tokens: int  # floor for per-call limits (reasoning tokens count against the limit)
    temperature: bool  # sends ``temperature`` (default 0.0 when not configured)
    reasoning_effort: bool  # sends ``reasoning_effort`` when configured
    schema_formats: tuple[str, ...]  # response_format kinds to try for a JSON schema, in order
    any_root: bool  # constrains schemas of any root type (a bare array), not only objects


CAPABILITIES: dict[str, Capabilities] = {
    # OpenAI o-series and gpt-5: no sampling parameters; limit includes the hidden reasoning tokens
    "reasoning": Capabilities("max_completion_tokens", 2048, False, True, ("json_schema", "json_object"), False),
    # OpenAI chat models (gpt-4o, gpt-4o-mini, gpt-4.1, gpt-3.5 ...)
    "chat": Capabilities("max_tokens", 0, True, False, ("json_schema", "json_object"), False),
    # any other endpoint (Ollama, vLLM, llama.cpp server, proxies): classic parameters, effort passed through;
    # llama-cpp-python accepts only json_object (+ "schema", which it enforces by grammar), vLLM/Ollama json_schema;
    # both turn any schema into a grammar, a bare array included
    "local": Capabilities("max_tokens", 0, True, True, ("json_schema", "json_object+schema"), True),
}

_REASONING_RE = re.compile(r"^(o\d+(-mini|-pro|-preview)?|gpt-5)([-.:_].*)?$")
_OPENAI_CHAT_RE = re.compile(r"^(gpt-4|gpt-3\.5|chatgpt-4o)([-.:_o].*)?$")  # not gpt-oss: an open model, served locally
RULES = ("auto", "reasoning", "chat", "local")
_OPENAI_HOSTS = ("api.openai.com", ".openai.azure.com")


def is_openai_endpoint(base_url: str | None) -> bool:
    """``None`` means the OpenAI API itself (the client's default)."""
    if not base_url:
        return True
    host = (urlparse(base_url).hostname or "").lower()
    return host == "api.openai.com" or host.endswith(_OPENAI_HOSTS[1])


def where(base_url: str | None) -> str:
    """Host and port of an endpoint for log lines (no path, no credentials)."""
    if not base_url:
        return "api.openai.com"
    parsed = urlparse(base_url)
    return f"{parsed.hostname}:{parsed.port}" if parsed.port else str(parsed.hostname)


def family_for(model: str, base_url: str | None = None, rules: str | None = None) -> str:
    """``reasoning`` | ``chat`` | ``local``: ``rules`` when it names one; else an OpenAI model name keeps OpenAI's
    rules at any endpoint (reasoning models reject ``temperature`` behind a proxy too); else OpenAI's own API is
    ``chat`` and every other endpoint ``local`` (a local server runs whatever it loaded)."""
    if rules and rules != "auto":
        if rules not in CAPABILITIES:
            raise ValueError(f"request_rules {rules!r}: expected one of {', '.join(RULES)}")
        return rules
    name = model.rsplit("/", 1)[-1].lower()
    if _REASONING_RE.match(name):
        return "reasoning"
    if _OPENAI_CHAT_RE.match(name) or is_openai_endpoint(base_url):
        return "chat"
    return "local"


def schema_formats(family: str, schema: dict) -> list[dict]:
    """The ``response_format`` values to try, in order, for a JSON schema. A schema whose root is not an object
    (the bare lists the thesis's Listings A.3, A.4 and A.6 ask for) goes only to servers that constrain any root:
    OpenAI's structured output and its ``json_object`` mode both force an object, which would contradict the
    listing, so there it gets no format at all (the prompt states the format; the reply is parsed leniently)."""
    caps = CAPABILITIES[family]
    if schema.get("type") != "object" and not caps.any_root:
        return []
    out: list[dict] = []
    for kind in caps.schema_formats:
        if kind == "json_schema":
            out.append({"type": "json_schema", "json_schema": {"name": "answer", "schema": schema}})
        elif kind == "json_object+schema":
            out.append({"type": "json_object", "schema": schema})
        else:
            out.append({"type": "json_object"})
    return out


def build_request(model: str, messages: list[dict], *, base_url: str | None = None,
                  temperature: float | None = None, max_tokens: int | None = None,
                  reasoning_effort: str | None = None, response_format: dict | None = None,
                  rules: str | None = None) -> dict[str, Any]:
    """The JSON body of ``POST /chat/completions`` for this model's family (parameters it cannot take are left
    out, not sent as null)."""
    caps = CAPABILITIES[family_for(model, base_url, rules)]
    body: dict[str, Any] = {"model": model, "messages": messages}
    if caps.temperature:
        body["temperature"] = 0.0 if temperature is None else temperature
    if caps.token_param and max_tokens and max_tokens > 0:
        body[caps.token_param] = max_tokens
    if caps.reasoning_effort and reasoning_effort:
        body["reasoning_effort"] = reasoning_effort
    if response_format:
        body["response_format"] = response_format
    return body


_NEVER_DROP = {"model", "messages"}
_PATTERNS = [
    re.compile(r"Unsupported (?:parameter|value): '([\w.]+)'"),
    re.compile(r"Unrecognized request arguments? supplied: ([\w.]+)"),
    re.compile(r"'?([\w.]+)'? is not supported (?:with|by|for) this model"),
]
_INSTEAD = re.compile(r"Use '([\w.]+)' instead")


def unsupported_param(message: str, param: str | None = None) -> tuple[str, str | None] | None:
    """(parameter to drop, parameter to move its value to or None) when a 400 says a parameter is not supported;
    None when the error is about something else. ``param`` is the error body's ``param`` field, if any."""
    name = None
    for pat in _PATTERNS:
        m = pat.search(message or "")
        if m:
            name = m.group(1)
            break
    if name is None and param and re.search(r"support|unrecognized|not allowed", message or "", re.I):
        name = param
    if not name or name.split(".")[0] in _NEVER_DROP:
        return None
    instead = _INSTEAD.search(message or "")
    return name.split(".")[0], instead.group(1) if instead else None
