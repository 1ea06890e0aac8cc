"""Completion cache: reruns of the same pipeline cost no LLM calls.

The key is sha256 of the inner backend's ``cache_identity``: for HTTP backends the complete request body it would
send (model, every parameter incl. ``reasoning_effort``, response format with the schema, messages) plus the
endpoint and all settings, so changing any setting can never return a stale answer. API keys are never part of it.
Cached responses keep their original token counts and say ``cached=True`` with ``cost=0`` (nothing was paid)."""

from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hublab.llm.base import LLM, LLMResponse
from hublab.redact import scrub


@dataclass
class CachedLLM(LLM):
    inner: LLM | None = None
    path: str = ".cache/llm/cache.sqlite"
    _db: Any = field(default=None, repr=False)
    _dblock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def __post_init__(self) -> None:
        assert self.inner is not None
        self.model = self.inner.model
        self.is_llm_free = self.inner.is_llm_free
        Path(self.path).parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(self.path, check_same_thread=False, timeout=60)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("CREATE TABLE IF NOT EXISTS llm (key TEXT PRIMARY KEY, resp TEXT)")

    def trace_kind(self) -> str:
        return self.inner.trace_kind()

    def set_deadline(self, deadline: float | None) -> None:
        super().set_deadline(deadline)
        self.inner.set_deadline(deadline)

    def secret_values(self) -> list[str]:
        return self.inner.secret_values()

    def _key(self, prompt, json_schema, max_tokens, system) -> str:
        ident = self.inner.cache_identity(prompt, json_schema=json_schema, max_tokens=max_tokens, system=system)
        return hashlib.sha256(json.dumps(ident, sort_keys=True, default=str).encode()).hexdigest()

    def _scrub(self, blob: str) -> str:
        """No stored byte holds a key: an endpoint that echoes the request's ``Authorization`` header
        put ``Bearer sk-…`` into its answer, and the cache stored it in clear. Masked here: every credential
        :func:`hublab.redact.redact` knows by its shape, and the backend's own keys by their value."""
        return scrub(blob, self.inner.secret_values())

    def _complete(self, prompt, *, json_schema, max_tokens, system) -> LLMResponse:
        key = self._key(prompt, json_schema, max_tokens, system)
        with self._dblock:
            row = self._db.execute("SELECT resp FROM llm WHERE key = ?", (key,)).fetchone()
        if row:
            d = json.loads(row[0])
            return LLMResponse(text=d["text"], prompt_tokens=d["pt"], completion_tokens=d["ct"], cached=True,
                               data=d.get("data"))
        resp = self.inner._complete(prompt, json_schema=json_schema, max_tokens=max_tokens, system=system)
        if resp.error is None:  # never cache failures: a retry later may succeed
            blob = self._scrub(json.dumps({"text": resp.text, "pt": resp.prompt_tokens, "ct": resp.completion_tokens,
                                           "data": resp.data}))
            with self._dblock:
                self._db.execute("INSERT OR REPLACE INTO llm (key, resp) VALUES (?, ?)", (key, blob))
                self._db.commit()
        return resp
