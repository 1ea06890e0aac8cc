"""Build an LLM from the ``llm`` section of a pipeline config (backend none | openai | llamacpp)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hublab.errors import InputError
from hublab.llm.base import LLM

_COMMON = {"backend", "model", "cache", "temperature", "max_tokens"}
_KEYS = {
    "none": _COMMON,
    "openai": _COMMON | {"base_url", "api_key_env", "timeout_s", "max_retries", "reasoning_effort"},
    "llamacpp": _COMMON | {"model_path", "n_ctx", "n_threads", "n_gpu_layers"},
}


def build_llm(cfg: dict[str, Any] | None = None, cache_dir: Path | None = None) -> LLM:
    cfg = {k: v for k, v in dict(cfg or {}).items() if v is not None}
    backend = cfg.get("backend", "none")
    if backend not in _KEYS:
        raise InputError(f"unknown llm backend {backend!r}; expected none, openai or llamacpp", field="llm.backend")
    unknown = set(cfg) - _KEYS[backend]
    if unknown:
        raise InputError(f"keys {sorted(unknown)} do not apply to llm backend {backend!r}", field="llm")
    llm: LLM
    if backend == "none":
        from hublab.llm.none import NoLLM

        return NoLLM()
    if backend == "openai":
        from hublab.llm.openai_llm import OpenAICompatibleLLM

        llm = OpenAICompatibleLLM(
            model=cfg.get("model", "gpt-4o-mini"), base_url=cfg.get("base_url"),
            api_key_env=cfg.get("api_key_env", "OPENAI_API_KEY"), temperature=cfg.get("temperature", 0.0),
            max_tokens=cfg.get("max_tokens"), timeout_s=float(cfg.get("timeout_s", 60)),
            max_retries=int(cfg.get("max_retries", 3)), reasoning_effort=cfg.get("reasoning_effort"),
        )
    else:
        from hublab.llm.llamacpp import LlamaCppLLM

        llm = LlamaCppLLM(
            model=cfg.get("model", "gemma3-270m"), model_path=cfg.get("model_path"),
            n_ctx=int(cfg.get("n_ctx", 4096)), n_threads=cfg.get("n_threads"),
            n_gpu_layers=int(cfg.get("n_gpu_layers", -1)), temperature=float(cfg.get("temperature", 0.0)),
            cache_dir=str(cache_dir) if cache_dir else None,
        )
    if cfg.get("cache", True) and cache_dir is not None:
        from hublab.llm.cache import CachedLLM

        llm = CachedLLM(model=llm.model, inner=llm, path=str(Path(cache_dir) / "llm" / "cache.sqlite"))
    return llm
