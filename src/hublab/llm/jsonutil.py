"""Lenient JSON extraction from model output (code fences, leading prose, trailing text)."""

from __future__ import annotations

import json
import re
from typing import Any

_FENCE = re.compile(r"```(?:json)?\s*(.*?)```", re.S)


def extract_json(text: str) -> Any:
    """Parse the first JSON object/array in ``text``; raises ValueError if there is none."""
    if not text or not text.strip():
        raise ValueError("empty output")
    candidates = [m.group(1) for m in _FENCE.finditer(text)] + [text]
    for cand in candidates:
        cand = cand.strip()
        try:
            return json.loads(cand)
        except json.JSONDecodeError:
            pass
        for opener, closer in (("{", "}"), ("[", "]")):
            start = cand.find(opener)
            end = cand.rfind(closer)
            if 0 <= start < end:
                try:
                    return json.loads(cand[start : end + 1])
                except json.JSONDecodeError:
                    continue
    raise ValueError(f"no JSON found in output: {text[:120]!r}")


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
