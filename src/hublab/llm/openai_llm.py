"""Any OpenAI-compatible chat endpoint (OpenAI, Ollama, vLLM, llama.cpp server) via the ``openai`` client.

Failures (timeouts, HTTP errors, malformed JSON after one retry) come back as ``LLMResponse(error=...)``
so a run degrades to an empty-but-valid result for that question instead of crashing. The API key is
read from the environment variable named in the config and never logged or stored.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from typing import Any

from hublab.llm.base import LLM, LLMResponse
from hublab.llm.jsonutil import check_schema, extract_json


@dataclass
class OpenAICompatibleLLM(LLM):
    model: str = "gpt-4o-mini"
    base_url: str | None = None
    api_key_env: str = "OPENAI_API_KEY"
    temperature: float | None = 0.0
    max_tokens: int | None = None
    timeout_s: float = 60.0
    max_retries: int = 3
    reasoning_effort: str | None = None
    _client: Any = field(default=None, repr=False)

    def client(self):
        if self._client is None:
            from openai import OpenAI

            key = os.environ.get(self.api_key_env) or ("not-needed" if self.base_url else None)
            if key is None:
                raise RuntimeError(f"environment variable {self.api_key_env} is not set")
            self._client = OpenAI(base_url=self.base_url, api_key=key, timeout=self.timeout_s,
                                  max_retries=self.max_retries)
        return self._client

    def _request(self, messages: list[dict], max_tokens: int, response_format: dict | None):
        kwargs: dict[str, Any] = {"model": self.model, "messages": messages}
        if self.temperature is not None:
            kwargs["temperature"] = self.temperature
        limit = self.max_tokens if self.max_tokens and self.max_tokens > 0 else max_tokens
        if limit and limit > 0:
            kwargs["max_tokens"] = limit
        if self.reasoning_effort:
            kwargs["reasoning_effort"] = self.reasoning_effort
        if response_format:
            kwargs["response_format"] = response_format
        return self.client().chat.completions.create(**kwargs)

    def _complete(self, prompt, *, json_schema, max_tokens, system) -> LLMResponse:
        messages = ([{"role": "system", "content": system}] if system else []) + [{"role": "user", "content": prompt}]
        formats: list[dict | None] = [None]
        if json_schema:
            schema_hint = "\n\nReply with JSON only, matching this JSON schema:\n" + json.dumps(json_schema)
            messages[-1]["content"] = prompt + schema_hint
            formats = [
                {"type": "json_schema", "json_schema": {"name": "answer", "schema": json_schema}},
                {"type": "json_object"},
            ]
        ptoks = ctoks = 0
        last_error = "no attempt"
        for attempt, fmt in enumerate(formats * (2 if json_schema else 1)):
            try:
                resp = self._request(messages, max_tokens, fmt)
            except Exception as exc:  # openai raises many subclasses; report, don't crash the run
                last_error = f"{type(exc).__name__}: {exc}"
                if "response_format" in str(exc) or "json_schema" in str(exc):
                    continue  # endpoint does not support this format: try the next
                return LLMResponse(text="", prompt_tokens=ptoks, completion_tokens=ctoks, error=last_error)
            usage = getattr(resp, "usage", None)
            ptoks += int(getattr(usage, "prompt_tokens", 0) or 0)
            ctoks += int(getattr(usage, "completion_tokens", 0) or 0)
            text = (resp.choices[0].message.content or "") if resp.choices else ""
            if not json_schema:
                return LLMResponse(text=text, prompt_tokens=ptoks, completion_tokens=ctoks)
            try:
                data = extract_json(text)
                problem = check_schema(data, json_schema)
                if problem is None:
                    return LLMResponse(text=text, prompt_tokens=ptoks, completion_tokens=ctoks, data=data)
                last_error = f"malformed JSON: {problem}"
            except ValueError as exc:
                last_error = f"malformed JSON: {exc}"
            if attempt >= 1:
                break
        return LLMResponse(text="", prompt_tokens=ptoks, completion_tokens=ctoks, error=last_error)
