"""Lenient JSON extraction from model output — the one parser every LLM backend and retriever uses.

The thesis had to replace every baseline's output parser because real LLMs (especially small open models)
wrap JSON in prose or code fences, use single quotes or trailing commas, answer with a bare list, or stop
mid-object at ``max_tokens``. Candidates are tried in order: the whole text, fenced blocks, balanced
top-level spans, then the truncated text with its brackets closed.
"""

from __future__ import annotations

import ast
import json
import re
from typing import Any

_FENCE_RE = re.compile(r"```(?:json|JSON)?\s*(.*?)```", re.DOTALL)


def _balanced_spans(text: str) -> list[str]:
    """Every top-level ``{...}`` / ``[...]`` span, in order (string-aware bracket matching)."""
    spans: list[str] = []
    i, n = 0, len(text)
    while i < n:
        if text[i] not in "{[":
            i += 1
            continue
        stack: list[str] = []
        in_str: str | None = None
        esc = False
        for j in range(i, n):
            ch = text[j]
            if in_str:
                if esc:
                    esc = False
                elif ch == "\\":
                    esc = True
                elif ch == in_str:
                    in_str = None
                continue
            if ch == '"':
                in_str = ch
                continue
            if ch in "{[":
                stack.append("}" if ch == "{" else "]")
            elif ch in "}]":
                if not stack or stack[-1] != ch:
                    break
                stack.pop()
                if not stack:
                    spans.append(text[i : j + 1])
                    i = j
                    break
        i += 1
    return spans


def _loads(candidate: str) -> Any:
    try:
        return json.loads(candidate)
    except (json.JSONDecodeError, ValueError):
        pass
    # Trailing commas, then Python-literal style (single quotes, True/False/None).
    cleaned = re.sub(r",\s*([}\]])", r"\1", candidate)
    try:
        return json.loads(cleaned)
    except (json.JSONDecodeError, ValueError):
        pass
    try:
        value = ast.literal_eval(cleaned)
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        raise ValueError("not JSON") from None
    if isinstance(value, dict | list):
        return value
    raise ValueError("not a JSON object or list")


def _close_truncated(text: str) -> str | None:
    """Close the brackets of JSON cut off by ``max_tokens`` (small models love to enumerate to the limit)."""
    starts = [i for i in (text.find("{"), text.find("[")) if i >= 0]
    if not starts:
        return None
    s = text[min(starts) :].rstrip()
    stack: list[str] = []
    in_str = esc = False
    for ch in s:
        if in_str:
            if esc:
                esc = False
            elif ch == "\\":
                esc = True
            elif ch == '"':
                in_str = False
        elif ch == '"':
            in_str = True
        elif ch in "{[":
            stack.append("}" if ch == "{" else "]")
        elif ch in "}]":
            if not stack or stack.pop() != ch:
                return None
    if not stack:
        return None
    if in_str:
        s += '"'
    s = re.sub(r"[,:\s]+$", "", s)
    return s + "".join(reversed(stack))


def _parsed_candidates(text: str):
    """Every candidate of ``text`` that parses, in the order above (lazily)."""
    candidates = [text.strip()]
    candidates += [m.strip() for m in _FENCE_RE.findall(text)]
    candidates += _balanced_spans(text)
    closed = _close_truncated(text)
    if closed:
        candidates.append(closed)
    for cand in candidates:
        try:
            yield _loads(cand)
        except ValueError:
            continue


def extract_json(text: str) -> Any:
    """Best-effort JSON extraction from LLM text. Raises ValueError when nothing parses."""
    if not text or not text.strip():
        raise ValueError("empty LLM output")
    for value in _parsed_candidates(text):
        return value
    raise ValueError(f"no JSON found in LLM output: {text.strip()[:80]!r}")


def extract_for_schema(text: str, schema: dict) -> Any:
    """The JSON in ``text`` that has the schema's shape: the first candidate passing ``check_schema``, else, where a
    bare array is asked for (Listings A.3, A.4, A.6), the array of a one-key object wrapping it. Raises ValueError
    (the shape problem of the first candidate, or that nothing parses): a reply without it is a failed call."""
    if not text or not text.strip():
        raise ValueError("empty LLM output")
    first: Any = None
    found = False
    for value in _parsed_candidates(text):
        if check_schema(value, schema) is None:
            return value
        if not found:
            first, found = value, True
    if not found:
        raise ValueError(f"no JSON found in LLM output: {text.strip()[:80]!r}")
    if schema.get("type") == "array" and isinstance(first, dict) and len(first) == 1:
        (inner,) = first.values()
        if isinstance(inner, list):
            return inner
    raise ValueError(str(check_schema(first, schema)))


def check_schema(data: Any, schema: dict | None) -> str | None:
    """Minimal structural check (type + required keys): enough to reject echoed schemas or prose."""
    if not schema:
        return None
    t = schema.get("type")
    if t == "object":
        if not isinstance(data, dict):
            return f"expected a JSON object, got {type(data).__name__}"
        missing = [k for k in schema.get("required", []) if k not in data]
        if missing:
            return f"missing keys {missing}"
    elif t == "array" and not isinstance(data, list):
        return f"expected a JSON array, got {type(data).__name__}"
    return None
