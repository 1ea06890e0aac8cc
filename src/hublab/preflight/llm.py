"""The LLM endpoints a pipeline calls: every ``*_env`` variable set, and each endpoint's key, server and model
probed (``GET /models``, a few seconds at most) before the first question."""

from __future__ import annotations

import os
from typing import Any

from hublab.errors import InputError, raise_all
from hublab.llm.endpoints import LLMEndpoint, llm_endpoints

#: the LLM endpoint check (connect, then ``GET /models``): the whole check stays under 5 s for one endpoint
LLM_CONNECT_TIMEOUT_S = 2.0
LLM_READ_TIMEOUT_S = 2.5


# ---------------- environment ----------------
def missing_env_vars(cfg: Any) -> list[str]:
    """``*_env`` keys of the config naming a variable that is not set (the request would go out unauthenticated)."""
    from hublab.pipeline.config import flatten

    out = []
    for key, value in flatten(cfg.to_dict()).items():
        if key.endswith("_env") and isinstance(value, str) and value and not os.environ.get(value):
            out.append(f"{cfg.source}: field '{key}' names environment variable {value}, which is not set")
    return out


# ---------------- the LLM endpoint ----------------
def _get_models(ep: LLMEndpoint, key: str | None) -> Any:
    """``GET <base_url>/models`` with a short connect and read timeout and no retries (httpx, which the OpenAI
    client itself uses; the client would cost a second of imports before the check can say anything)."""
    import httpx

    from hublab.llm.factory import SDK_ORG, SDK_PROJECT

    url = (ep.base_url or "https://api.openai.com/v1").rstrip("/") + "/models"
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    # the organization and project the client sends (the OpenAI SDK reads them from the environment)
    for header, var in (("OpenAI-Organization", SDK_ORG), ("OpenAI-Project", SDK_PROJECT)):
        if os.environ.get(var):
            headers[header] = os.environ[var]
    return httpx.get(url, headers=headers, timeout=httpx.Timeout(LLM_READ_TIMEOUT_S, connect=LLM_CONNECT_TIMEOUT_S))


def llm_endpoint_problem(ep: LLMEndpoint) -> tuple[str | None, str | None]:
    """(error, warning) for one endpoint, each one line that says what is missing and how to fix it: no key where
    OpenAI's API needs one, nothing answering at the URL, a key the server refuses, a model it does not serve.
    A server without ``/models`` is let through with a warning (the first call will tell)."""
    import httpx

    from hublab.llm.requests import is_openai_endpoint, where

    at = where(ep.base_url)
    fix_url = "or point every LLM at a running OpenAI-compatible server with --llm-base-url http://HOST:PORT/v1 " \
              "($HUBLAB_LLM_BASE_URL; $OPENAI_BASE_URL where the pipeline's base_url is null)"
    key = os.environ.get(ep.key_env) if ep.key_env else None
    if not key and is_openai_endpoint(ep.base_url):
        return (f"{ep.field}: model {ep.model} at {at} needs an API key, but ${ep.key_env} is not set: export "
                f"{ep.key_env}=<your key> (the variable is {ep.field}.api_key_env), {fix_url}"), None
    try:
        resp = _get_models(ep, key)
    except httpx.HTTPError as exc:  # refused, unresolvable, timed out
        why = str(exc)[:80] or "no reply"
        return f"{ep.field}: nothing answers at {at} ({type(exc).__name__}: {why}): start the server, {fix_url}", None
    if resp.status_code in (401, 403):
        how = (f"${ep.key_env} holds a key it does not accept" if key else
               "it needs an API key: name the variable holding it with $HUBLAB_LLM_API_KEY_ENV or "
               f"{ep.field}.api_key_env")
        return f"{ep.field}: {at} refused the request (HTTP {resp.status_code}): {how}", None
    try:
        resp.raise_for_status()
        models = sorted(str(m["id"]) for m in resp.json()["data"])
    except (httpx.HTTPStatusError, ValueError, KeyError, TypeError) as exc:
        return None, f"{ep.field}: {at} did not list its models ({type(exc).__name__}); model {ep.model} unchecked"
    if ep.model in models or f"{ep.model}:latest" in models:  # Ollama lists `llama3.2:latest`, serves `llama3.2`
        return None, None
    shown = ", ".join(models[:8]) + (f" … ({len(models)} in all)" if len(models) > 8 else "")
    line = f"{ep.field}: {at} does not serve model {ep.model} (it lists: {shown or 'none'})"
    if not is_openai_endpoint(ep.base_url) and len(models) == 1:
        # a single-model server (llama.cpp) answers with what it loaded, whatever the request names
        return None, f"{line}; a single-model server answers with the model it loaded"
    return f"{line}: choose one with --llm-model ($HUBLAB_LLM_MODEL)", None


def check_llm(cfg: Any) -> list[str]:
    """Before the first question of an LLM pipeline: every endpoint's key, server and model. Raises
    ``InputErrors`` (one line per endpoint that cannot work); returns the warnings."""
    errors: list[InputError] = []
    warnings: list[str] = []
    for ep in llm_endpoints(cfg):
        error, warning = llm_endpoint_problem(ep)
        if error:
            errors.append(InputError(error))
        if warning:
            warnings.append(warning)
    raise_all(errors)
    return warnings
