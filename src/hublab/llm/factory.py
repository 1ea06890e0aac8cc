"""Build an LLM from the ``llm`` section of a pipeline config (backend none | openai | llamacpp).

Every ``backend: openai`` section (top-level, per-pipe, judge) goes through ``build_llm``, so the endpoint override
here reaches every pipeline: ``HUBLAB_LLM_BASE_URL`` / ``HUBLAB_LLM_MODEL`` / ``HUBLAB_LLM_API_KEY_ENV`` in the
environment, or the CLI's ``--llm-base-url`` / ``--llm-model`` via ``apply_endpoint_override``.

A section whose ``base_url`` is still null after that follows the OpenAI SDK's own convention: ``OPENAI_BASE_URL``
(a proxy, a gateway, a local server) replaces the default ``https://api.openai.com/v1``, and the key the section
names (``OPENAI_API_KEY`` unless it names another) is sent there, as the SDK sends it (``openai_sdk_base_url``).
The resolved URL is written into the section, so the preflight, the estimate, the config hash and the client all
see the endpoint the requests go to. Precedence: ``--llm-base-url`` / ``HUBLAB_LLM_BASE_URL`` > the pipeline's
``base_url`` > ``OPENAI_BASE_URL`` > OpenAI's API.
"""

from __future__ import annotations

import copy
import logging
import os
from pathlib import Path
from typing import Any

from hublab.errors import InputError
from hublab.llm.base import LLM
from hublab.llm.requests import is_openai_endpoint

log = logging.getLogger(__name__)

_COMMON = {"backend", "model", "cache", "temperature", "max_tokens"}
_KEYS = {
    "none": _COMMON,
    "openai": _COMMON | {"base_url", "api_key_env", "timeout_s", "max_retries", "retry_backoff_s",
                         "reasoning_effort", "request_rules", "price_input_per_1m", "price_output_per_1m"},
    "llamacpp": _COMMON | {"model_path", "n_ctx", "n_threads", "n_gpu_layers"},
}
_PRICE_KEYS = ("price_input_per_1m", "price_output_per_1m")
ENV_BASE_URL, ENV_MODEL, ENV_API_KEY_ENV = "HUBLAB_LLM_BASE_URL", "HUBLAB_LLM_MODEL", "HUBLAB_LLM_API_KEY_ENV"
#: the OpenAI SDK's own variables (``openai.OpenAI`` reads them when it is given no value)
SDK_BASE_URL, SDK_API_KEY, SDK_ORG, SDK_PROJECT = "OPENAI_BASE_URL", "OPENAI_API_KEY", "OPENAI_ORG_ID", \
    "OPENAI_PROJECT_ID"


def apply_endpoint_override(llm_cfg: dict[str, Any] | None, base_url: str | None, model: str | None, *,
                            api_key_env: str | None = None) -> dict[str, Any]:
    """A copy of an ``llm`` section pointed at another endpoint and/or model; only ``backend: openai`` sections
    change (LLM-free and embedded pipelines stay as they are).

    A new endpoint gets no API key unless ``api_key_env`` names one (or it is OpenAI's own API), so an OpenAI key
    is never sent to a local server. Prices configured for the old endpoint/model are dropped.
    """
    out = copy.deepcopy(dict(llm_cfg or {}))
    base_url, model, api_key_env = base_url or None, model or None, api_key_env or None
    if out.get("backend") != "openai" or not (base_url or model or api_key_env):
        return out
    if base_url:
        out["base_url"] = base_url
        out["api_key_env"] = api_key_env or (out.get("api_key_env") if is_openai_endpoint(base_url) else None)
    elif api_key_env:
        out["api_key_env"] = api_key_env
    if model:
        out["model"] = model
    if base_url or model:
        for key in _PRICE_KEYS:
            out.pop(key, None)
    return out


def openai_sdk_base_url() -> str | None:
    """``$OPENAI_BASE_URL`` as the OpenAI SDK reads it (None when unset or blank); a URL carrying credentials is
    refused (it would be logged as a run parameter), without showing it."""
    value = (os.environ.get(SDK_BASE_URL) or "").strip() or None
    if value:
        from hublab.redact import secret_value_problem

        why = secret_value_problem(value)
        if why:
            raise InputError(f"{why} (value not shown)", field=f"${SDK_BASE_URL}")
    return value


def env_endpoint_override(llm_cfg: dict[str, Any] | None) -> dict[str, Any]:
    """``apply_endpoint_override`` with the ``HUBLAB_LLM_*`` environment variables; then a ``backend: openai``
    section that still has no ``base_url`` gets ``$OPENAI_BASE_URL`` (the SDK's convention) with the key variable
    it names, or ``OPENAI_API_KEY`` (the SDK's default) when it names none."""
    out = apply_endpoint_override(llm_cfg, os.environ.get(ENV_BASE_URL), os.environ.get(ENV_MODEL),
                                  api_key_env=os.environ.get(ENV_API_KEY_ENV))
    if out.get("backend") == "openai" and not out.get("base_url"):
        sdk_url = openai_sdk_base_url()
        if sdk_url:
            out["base_url"] = sdk_url
            out["api_key_env"] = out.get("api_key_env") or SDK_API_KEY
    return out


def _request_rules(cfg: dict[str, Any]) -> str:
    from hublab.llm.requests import RULES

    rules = cfg.get("request_rules", "auto")
    if rules not in RULES:
        raise InputError(f"request_rules {rules!r}: expected one of {', '.join(RULES)}", field="llm.request_rules")
    return str(rules)


def build_llm(cfg: dict[str, Any] | None = None, cache_dir: Path | None = None) -> LLM:
    overridden = env_endpoint_override(cfg)
    if overridden != dict(cfg or {}):
        log.info("LLM endpoint override from environment: model=%s base_url=%s", overridden.get("model"),
                 overridden.get("base_url"))
    cfg = {k: v for k, v in overridden.items() if v is not None}
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

        prices = {k: float(cfg[k]) for k in _PRICE_KEYS if k in cfg}
        llm = OpenAICompatibleLLM(
            model=cfg.get("model", "gpt-4o-mini"), base_url=cfg.get("base_url"), api_key_env=cfg.get("api_key_env"),
            temperature=cfg.get("temperature"), max_tokens=cfg.get("max_tokens"),
            timeout_s=float(cfg.get("timeout_s", 60)), max_retries=int(cfg.get("max_retries", 3)),
            retry_backoff_s=float(cfg.get("retry_backoff_s", 1.0)), reasoning_effort=cfg.get("reasoning_effort"),
            request_rules=_request_rules(cfg), **prices,
        )
    else:
        from hublab.llm.llamacpp import LlamaCppLLM

        llm = LlamaCppLLM(
            model=cfg.get("model", "gemma3-270m"), model_path=cfg.get("model_path"),
            n_ctx=int(cfg.get("n_ctx", 4096)), n_threads=cfg.get("n_threads"),
            n_gpu_layers=int(cfg.get("n_gpu_layers", -1)), temperature=float(cfg.get("temperature", 0.0)),
            cache_dir=str(cache_dir) if cache_dir else None, max_tokens=cfg.get("max_tokens"),
        )
    if cfg.get("cache", True) and cache_dir is not None:
        from hublab.llm.cache import CachedLLM

        llm = CachedLLM(model=llm.model, inner=llm, path=str(Path(cache_dir) / "llm" / "cache.sqlite"))
    return llm
