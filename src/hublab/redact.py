"""Credentials written as *values*: ``user:pass@`` in a URL, a key in a URL's query string or fragment
(``?api_key=…``, ``#access_token=…``: :func:`secret_param_name`), API keys (``sk-…``, bearer tokens, cloud and hub
tokens). Config loading refuses them (:func:`secret_value_problem`); everything HubLab writes or prints goes
through :func:`redact` as a second line of defence, so a key pasted into the wrong field never reaches MLflow,
an artifact, a trace or the console.

The one scrubber of everything persisted is :func:`scrub`: the *values* of the keys HubLab
knows (each one a backend sends is registered with :func:`register_secret` when it is read; every environment
variable whose name looks secret), then every credential by its shape. Where it runs: every LLM answer as it
arrives (so whatever is built from one — caches, path texts, index rows, predictions, traces — holds no key an
endpoint echoed back), every log record, MLflow's params, tags and artifacts. Every file written atomically
(``atomic.write_text_atomic``) passes :func:`mask_known` (the values only: shapes are matched where text comes from
outside, and cost 0.3 s per MB).

:func:`scrub` is also the one door for anything shown or stored that may hold a URL: an endpoint's URL in a run
name, a param, a tag, a ``--json`` document, a ``repr`` or an error line (``user:password@`` and secret query keys
masked; an HTTP ``Basic`` token an error page echoes masked). A URL HubLab connects to registers its credentials
(:func:`register_url`: the password, ``user:password`` and its Basic token), so they are masked by value wherever
they turn up. What identifies a resource never holds a credential: :func:`without_credentials`."""

from __future__ import annotations

import base64
import binascii
import os
import re
import threading
from urllib.parse import unquote, urlsplit, urlunsplit

MASK = "***"
MIN_SECRET_LEN = 6  # shorter values ("1", "true") are not masked: they would mangle ordinary text
#: key names that hold secrets (only environment variable *names* are ever stored: ``*_env``)
SECRET_HINTS = ("api_key", "apikey", "token", "password", "secret")
_NOT_SECRET = ("_env", "_tokens")  # env var names and token *counts* (max_tokens) are fine
_REGISTERED: set[str] = set()
_REGISTERED_LOCK = threading.Lock()
#: (the environment, the number of registered keys, the secrets they give): :func:`known_secrets`' last answer
_KNOWN: tuple[dict, int, list[str]] | None = None
#: ``scheme://userinfo@``: up to the authority's *last* ``@`` (a password may hold an unencoded ``@``), never across a
#: path, query, blank or quote
_URL_USERINFO = re.compile(r"(?P<scheme>\b[a-zA-Z][a-zA-Z0-9+.-]*://)(?P<userinfo>[^/\s?#\"'<>`]*)@")
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


#: ``Basic <base64>``: an HTTP Basic credential (an endpoint's error page may echo the request's header); masked when
#: the token decodes to ``user:password``, so "Basic statistics" stays as it is
_BASIC = re.compile(r"\b(?P<scheme>Basic)(?P<gap>\s+)(?P<token>[A-Za-z0-9+/]{4,}={0,2})", re.IGNORECASE)


def _mask_basic(m: re.Match[str]) -> str:
    try:
        decoded = base64.b64decode(m.group("token"), validate=True)
    except (binascii.Error, ValueError):
        return m.group(0)
    return f"{m.group('scheme')}{m.group('gap')}{MASK}" if b":" in decoded else m.group(0)


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
    return _BASIC.sub(_mask_basic, text)


def url_secrets(url: str) -> list[str]:
    """The credentials a URL carries, as they may turn up in any text: its user info's password (as written and
    percent-decoded), ``user:password``, the ``Basic`` token an HTTP client builds from them, and the values of its
    secret-named query and fragment parameters."""
    try:
        parts = urlsplit(url)
        user, password = parts.username, parts.password
    except ValueError:  # a malformed authority (a bad port): the shape patterns of redact() still apply
        return []
    out: list[str] = []
    if password:
        plain_user, plain = unquote(user or ""), unquote(password)
        pair = f"{plain_user}:{plain}"
        out += [password, plain, f"{user}:{password}", pair,
                base64.b64encode(pair.encode("latin-1", "replace")).decode("ascii"),
                base64.b64encode(pair.encode("utf-8")).decode("ascii")]
    for m in _secret_params(url):
        out += [m.group("value"), unquote(m.group("value"))]
    return list(dict.fromkeys(v for v in out if v and v != MASK))


def register_url(url: str) -> None:
    """Remember the credentials of a URL this process connects to (:func:`url_secrets`): every text HubLab
    writes or prints masks them by value, wherever they turn up (an error page echoing the password)."""
    for value in url_secrets(url):
        register_secret(value)


def without_credentials(url: str) -> str:
    """``url`` without its user info and its secret-named query and fragment parameters: what identifies the
    resource (the same endpoint reached with other credentials is the same endpoint). Text that is not a URL
    with an authority is returned as it is."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return redact(url)
    if not parts.scheme or "@" not in parts.netloc and not any(True for _ in _secret_params(url)):
        return url

    def kept(text: str) -> str:
        return "&".join(p for p in text.split("&") if not secret_param_name(p.split("=", 1)[0]))

    return urlunsplit((parts.scheme, parts.netloc.rpartition("@")[2], parts.path, kept(parts.query),
                       kept(parts.fragment)))


def looks_secret(key: str) -> bool:
    """Whether a config key or environment variable name holds a secret (``OPENAI_API_KEY``, ``token``)."""
    low = key.lower()
    return any(h in low for h in SECRET_HINTS) and not low.endswith(_NOT_SECRET)


def register_secret(value: str | None) -> None:
    """Remember a credential this process sends (an API key read from the variable a config names), so that
    :func:`scrub` and :func:`mask_known` mask it wherever it turns up, whatever its variable is called."""
    if value and len(value) >= MIN_SECRET_LEN:
        with _REGISTERED_LOCK:
            _REGISTERED.add(value)


def known_secrets(extra: list[str] | tuple[str, ...] = ()) -> list[str]:
    """The registered keys, the values of secret-looking environment variables and ``extra``, longest first (a key
    that contains another is masked whole). Recomputed only when the environment or the registered keys changed:
    a HubLink run scrubs ~100,000 trace fields, and reading every variable name each time was a fifth of its time."""
    global _KNOWN
    # the environment's raw bytes mapping when the platform has one (CPython's ``os.environ._data``): comparing it
    # decodes nothing, where ``dict(os.environ)`` decoded every variable on every call
    raw = getattr(os.environ, "_data", None)
    env = raw if isinstance(raw, dict) else dict(os.environ)
    with _REGISTERED_LOCK:
        registered = len(_REGISTERED)
        cached = _KNOWN
        if cached is None or cached[0] != env or cached[1] != registered:
            vals = set(_REGISTERED) | {v for k, v in os.environ.items() if looks_secret(k)}
            cached = _KNOWN = (dict(env), registered, sorted((v for v in vals if v and len(v) >= MIN_SECRET_LEN),
                                                             key=len, reverse=True))
    if not extra:
        return cached[2]
    vals = set(cached[2]) | {v for v in extra if v and len(v) >= MIN_SECRET_LEN}
    return sorted(vals, key=len, reverse=True)


def mask_known(text: str, extra: list[str] | tuple[str, ...] = ()) -> str:
    """``text`` with every known key value masked (fast: substring search, no patterns)."""
    for value in known_secrets(extra):
        if value in text:
            text = text.replace(value, MASK)
    return text


#: the shortest credential of a message's own URL that is masked by value (``own`` of :func:`scrub`)
MIN_OWN_LEN = 3


def scrub(text: str, extra: list[str] | tuple[str, ...] = (), *, own: list[str] | tuple[str, ...] = ()) -> str:
    """The one scrubber: known key values (:func:`mask_known`), then credentials by their shape (:func:`redact`).
    ``own``: the credentials of the URL the text is about (:func:`url_secrets`), masked even when shorter than a
    registered key may be (an endpoint's error page quoting a 4-letter password)."""
    if not text:
        return text
    text = mask_known(text, extra)
    for value in sorted((v for v in own if len(v) >= MIN_OWN_LEN), key=len, reverse=True):
        text = text.replace(value, MASK)
    return redact(text)


def scrub_log_records() -> None:
    """Every log record of this process, HubLab's and its libraries' (pymilvus, openai, httpx print URLs and
    request errors), leaves with its message scrubbed: installed once as the record factory, so it runs only for
    records that pass their logger's level."""
    import logging

    base = logging.getLogRecordFactory()
    if getattr(base, "_hublab_scrub", False):
        return

    def factory(*args, **kwargs):
        record = base(*args, **kwargs)
        try:
            message = record.getMessage()
        except Exception:  # noqa: BLE001 - a malformed record is logging's to report, not ours
            return record
        record.msg, record.args = scrub(message), None
        return record

    factory._hublab_scrub = True  # type: ignore[attr-defined]
    logging.setLogRecordFactory(factory)
