"""Credentials written as *values*: ``user:pass@`` in a URL, a key in a URL's query string or fragment
(``?api_key=…``, ``#access_token=…``: :func:`secret_param_name`), API keys (``sk-…``, bearer tokens, cloud and hub
tokens). Config loading refuses them (:func:`secret_value_problem`); everything HubLab writes or prints goes
through :func:`redact` as a second line of defence, so a key pasted into the wrong field never reaches MLflow,
an artifact, a trace or the console."""

from __future__ import annotations

import re

MASK = "***"
_URL_USERINFO = re.compile(r"(?P<scheme>\b[a-zA-Z][a-zA-Z0-9+.-]*://)(?P<userinfo>[^/\s@:?#]*(?::[^/\s@?#]*)?)@")
#: ``name=value`` after ``?``, ``&``, ``;`` or ``#`` in a URL (or a bare query string): the value up to the next
#: separator, blank or quote; whether the name is a credential's: :func:`secret_param_name`
_URL_PARAM = re.compile(r"(?P<lead>[?&;#])(?P<name>[A-Za-z0-9_.\-\[\]]+)=(?P<value>[^&;#\s\"'<>]+)")
#: a URL parameter carries a credential when one part of its name (split at ``_ - . [ ]`` and camelCase) is one of
#: these words or ends in one of the suffixes: ``api_key``, ``apiKey``, ``access_token``, ``X-Amz-Signature``,
#: ``client_secret``, ``sig``; not ``monkey``, ``author``, ``design`` or ``max_tokens``
_SECRET_PARTS = frozenset({"key", "token", "secret", "secrets", "password", "passwd", "pwd", "pass",
                           "sig", "signature", "auth", "credential", "credentials", "apikey", "accesskey", "secretkey",
                           "privatekey", "sessionkey", "subscriptionkey"})
_SECRET_SUFFIXES = ("apikey", "token", "secret", "password", "passwd", "signature", "accesskey", "secretkey")


def secret_param_name(name: str) -> bool:
    """Whether a URL query or fragment parameter of this name carries a credential (``api_key``, ``token``…)."""
    spaced = re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", name)
    parts = [p for p in re.split(r"[_.\-\[\]]+", spaced.lower()) if p]
    joined = "".join(parts)
    return any(p in _SECRET_PARTS for p in parts) or joined.endswith(_SECRET_SUFFIXES)


def _secret_params(text: str):
    return (m for m in _URL_PARAM.finditer(text) if secret_param_name(m.group("name")))


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
    m = next((m for m in _secret_params(value) if m.group("value") != MASK), None)
    if m:
        return f"a URL with a credential in its query string or fragment (parameter {m.group('name')!r}): put " \
               "the key in an environment variable and name it in api_key_env"
    for pat in _KEY_PATTERNS:
        if pat.search(value):
            return "a value that looks like an API key or token: put it in an environment variable and name it " \
                   "in an *_env key"
    return None


def redact(text: str) -> str:
    """``text`` with URL credentials (user info, secret-named query and fragment parameters) and key-looking
    substrings masked."""
    if not text:
        return text
    text = _URL_USERINFO.sub(lambda m: f"{m.group('scheme')}{MASK}@" if m.group("userinfo") else m.group(0), text)
    text = _URL_PARAM.sub(lambda m: f"{m.group('lead')}{m.group('name')}={MASK}"
                          if secret_param_name(m.group("name")) else m.group(0), text)
    for pat in _KEY_PATTERNS:
        text = pat.sub(MASK, text)
    return text
