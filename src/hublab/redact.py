"""Credentials written as *values*: ``user:pass@`` in a URL, API keys (``sk-…``, bearer tokens, cloud and hub
tokens). Config loading refuses them (:func:`secret_value_problem`); everything HubLab writes or prints goes
through :func:`redact` as a second line of defence, so a key pasted into the wrong field never reaches MLflow,
an artifact, a trace or the console."""

from __future__ import annotations

import re

MASK = "***"
_URL_USERINFO = re.compile(r"(?P<scheme>\b[a-zA-Z][a-zA-Z0-9+.-]*://)(?P<userinfo>[^/\s@:?#]*(?::[^/\s@?#]*)?)@")
_KEY_PATTERNS = (
    re.compile(r"\bsk-[A-Za-z0-9_\-]{6,}"),  # OpenAI-style (sk-, sk-proj-, sk-ant-)
    re.compile(r"\bBearer\s+[A-Za-z0-9._~+/=\-]{6,}", re.IGNORECASE),
    re.compile(r"\b(?:ghp|gho|ghs|ghu|github_pat)_[A-Za-z0-9_]{10,}"),
    re.compile(r"\bhf_[A-Za-z0-9]{10,}"),
    re.compile(r"\bxox[abposr]-[A-Za-z0-9\-]{10,}"),
    re.compile(r"\bAKIA[0-9A-Z]{16}\b"),
    re.compile(r"\beyJ[A-Za-z0-9_\-]{10,}\.[A-Za-z0-9_\-]{10,}\.[A-Za-z0-9_\-]{6,}"),  # JWT
)


def secret_value_problem(value: str) -> str | None:
    """Why a config or CLI value must not be stored (None if it may): never echoes the value."""
    m = _URL_USERINFO.search(value)
    if m and m.group("userinfo"):
        return "a URL with credentials (user:password@): put the key in an environment variable and name it in " \
               "api_key_env"
    for pat in _KEY_PATTERNS:
        if pat.search(value):
            return "a value that looks like an API key or token: put it in an environment variable and name it " \
                   "in an *_env key"
    return None


def redact(text: str) -> str:
    """``text`` with URL credentials and key-looking substrings masked."""
    if not text:
        return text
    text = _URL_USERINFO.sub(lambda m: f"{m.group('scheme')}{MASK}@" if m.group("userinfo") else m.group(0), text)
    for pat in _KEY_PATTERNS:
        text = pat.sub(MASK, text)
    return text
