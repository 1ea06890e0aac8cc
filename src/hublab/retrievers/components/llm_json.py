"""Asking an LLM for structured output and surviving what comes back.

The thesis had to replace every baseline's output parser because real LLMs (especially small open
models) wrap JSON in prose or code fences, use single quotes, or answer with a bare list. These helpers
try the backend's parsed ``data`` first, then the text, and report *why* they gave up, so callers can
fall back to a deterministic path and record the reason in ``RetrievalResult.reason``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from difflib import get_close_matches
from typing import Any

from hublab.errors import ServiceUnavailable
from hublab.llm.base import LLM
from hublab.llm.jsonutil import extract_json


@dataclass
class JsonAnswer:
    """Parsed JSON (or None) and the reason it is None."""

    data: Any = None
    error: str | None = None
    text: str = ""

    @property
    def ok(self) -> bool:
        return self.data is not None and self.error is None


def ask_json(
    llm: LLM,
    prompt: str,
    schema: dict,
    *,
    max_tokens: int = 512,
    system: str | None = None,
    expect: type | tuple[type, ...] = dict,
) -> JsonAnswer:
    """Call ``llm.complete`` with a JSON schema and return parsed data or a reason. Raises only
    ``ServiceUnavailable`` (the endpoint is down)."""
    try:
        resp = llm.complete(prompt, json_schema=schema, max_tokens=max_tokens, system=system)
    except ServiceUnavailable:
        raise  # the endpoint is down: the run or build stops, not this step
    except Exception as exc:  # noqa: BLE001 - backends may raise anything (network, llama.cpp)
        return JsonAnswer(None, f"LLM call failed: {type(exc).__name__}: {exc}")
    text = resp.text or ""
    data = resp.data
    if data is None:
        try:
            data = extract_json(text)
        except ValueError as exc:
            return JsonAnswer(None, resp.error or str(exc), text)
    # A bare list where an object was expected: wrap it under the schema's single array property.
    if isinstance(data, list) and expect is dict:
        props = [k for k, v in (schema.get("properties") or {}).items() if v.get("type") == "array"]
        data = {props[0]: data} if props else None
    if not isinstance(data, expect):
        return JsonAnswer(None, f"LLM output has the wrong shape ({type(data).__name__})", text)
    return JsonAnswer(data, None, text)


def response_list(resp: Any, key: str) -> list | None:
    """The list an LLM answered: ``{key: [...]}`` (schema), a bare JSON list, or the first ``[...]`` in its text
    (JSON or a Python literal, as the thesis's listings ask for). None when there is no list (malformed)."""
    raw: Any = None
    if isinstance(resp.data, dict):
        raw = resp.data.get(key)
    elif isinstance(resp.data, list):
        raw = resp.data
    if raw is None and resp.text:
        m = re.search(r"\[.*\]", resp.text, re.S)
        if m:
            try:
                raw = extract_json(m.group(0))
            except ValueError:
                raw = None
    return raw if isinstance(raw, list) else None


def ask_text(llm: LLM, prompt: str, *, max_tokens: int = 512, system: str | None = None) -> tuple[str, str | None]:
    """Plain completion; returns (text, error). Raises only ``ServiceUnavailable`` (the endpoint is down)."""
    try:
        resp = llm.complete(prompt, max_tokens=max_tokens, system=system)
    except ServiceUnavailable:
        raise  # the endpoint is down: the run or build stops, not this step
    except Exception as exc:  # noqa: BLE001
        return "", f"LLM call failed: {type(exc).__name__}: {exc}"
    if resp.error:
        return resp.text or "", resp.error
    return resp.text or "", None


def as_bool(value: Any) -> bool | None:
    """LLMs answer yes/no in many ways; None when it is not a recognisable boolean."""
    if isinstance(value, bool):
        return value
    if isinstance(value, int | float):
        return bool(value)
    if isinstance(value, str):
        v = value.strip().lower()
        if v in {"yes", "true", "y", "1", "sufficient", "enough"}:
            return True
        if v in {"no", "false", "n", "0", "insufficient", "not enough"}:
            return False
    return None


def as_str_list(value: Any) -> list[str]:
    """A list of strings from a list/str/dict-ish LLM value (items stripped, empties dropped)."""
    if value is None:
        return []
    if isinstance(value, str):
        value = [p for p in re.split(r"[;\n]|,\s", value)]
    if isinstance(value, dict):
        value = list(value.values())
    out: list[str] = []
    if isinstance(value, list):
        for item in value:
            if isinstance(item, dict):
                item = next((v for v in item.values() if isinstance(v, str)), None)
            if item is None:
                continue
            s = str(item).strip()
            if s:
                out.append(s)
    return out


def as_index_list(value: Any, n: int) -> list[int]:
    """0-based indices from 1-based numbers an LLM picked (ints, numeric strings, "[3]"); in range, deduped."""
    out: list[int] = []
    items = value if isinstance(value, list) else [value]
    for item in items:
        if isinstance(item, dict):
            item = item.get("index", item.get("id", item.get("number")))
        m = re.search(r"\d+", str(item)) if item is not None and not isinstance(item, bool) else None
        if not m:
            continue
        idx = int(m.group()) - 1
        if 0 <= idx < n and idx not in out:
            out.append(idx)
    return out


def match_option(name: str, options: list[str], *, cutoff: float = 0.75) -> int | None:
    """Index of the option an LLM meant: exact, case-insensitive, 1-based number, then fuzzy."""
    if not name:
        return None
    s = name.strip().strip("\"'`").strip()
    if s in options:
        return options.index(s)
    lower = [o.lower() for o in options]
    if s.lower() in lower:
        return lower.index(s.lower())
    if s.isdigit() and 1 <= int(s) <= len(options):
        return int(s) - 1
    close = get_close_matches(s.lower(), lower, n=1, cutoff=cutoff)
    return lower.index(close[0]) if close else None


def approx_tokens(text: str) -> int:
    """Rough token count (4 characters per token) for serialisation caps, without a tokenizer."""
    return (len(text) + 3) // 4


def truncate_lines(lines: list[str], max_tokens: int) -> list[str]:
    """Leading lines whose total approximate token count fits ``max_tokens`` (at least one line)."""
    out: list[str] = []
    used = 0
    for line in lines:
        cost = approx_tokens(line) + 1
        if out and used + cost > max_tokens:
            break
        out.append(line)
        used += cost
    return out
