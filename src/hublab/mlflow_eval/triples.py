"""What a user's ``predict_fn`` returned, as the thesis's triple strings the metrics compare.

A retrieval function written outside HubLab returns its triples as it likes: the canonical strings
``(R1:subject, predicate, L2:object)``, ``(subject, predicate, object)`` tuples, or ``{"subject", "predicate",
"object"}`` dicts whose nodes are ``"R1:label"`` strings or ``{"id", "label"}`` dicts. The metrics match on the
rendered string (``hublab.graph.model``), so every shape is rendered exactly as HubLab renders a ``Triple``;
anything else is malformed and named by its position, never silently dropped (a dropped triple would change
every rank after it).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from hublab.errors import InputError

#: Keys of a dict output that hold the ranked triples (a predict_fn often returns the answer next to them).
OUTPUT_KEYS = ("triples", "retrieved_context", "context")
PARTS = ("subject", "predicate", "object")


def _node(value: Any, *, where: str) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, Mapping) and isinstance(value.get("id"), str) and isinstance(value.get("label"), str):
        return f"{value['id']}:{value['label']}"
    raise InputError(f"{where}: expected 'id:label' or {{'id', 'label'}}, got {type(value).__name__} {value!r:.80}")


def render(item: Any, *, index: int) -> str:
    """One returned item as a triple string (``index`` is 1-based, for the error message)."""
    where = f"output triple {index}"
    if isinstance(item, str):
        return item  # kept as it is: the reference counts non-triple strings (e.g. 'None') as items too
    if isinstance(item, Mapping):
        missing = [p for p in PARTS if p not in item]
        if missing:
            raise InputError(f"{where}: dict without {missing} (keys {sorted(map(str, item))[:6]})")
        parts = [item[p] for p in PARTS]
    elif isinstance(item, Sequence) and not isinstance(item, bytes | bytearray):
        if len(item) != 3:
            raise InputError(f"{where}: expected (subject, predicate, object), got {len(item)} elements")
        parts = list(item)
    else:
        raise InputError(f"{where}: expected a triple string, a 3-tuple or a subject/predicate/object dict, "
                         f"got {type(item).__name__} {item!r:.80}")
    s, p, o = parts
    if not isinstance(p, str):
        raise InputError(f"{where}: predicate must be a string, got {type(p).__name__}")
    return f"({_node(s, where=where)}, {p}, {_node(o, where=where)})"


def triple_strings(outputs: Any) -> list[str]:
    """The ranked triple strings of a predict_fn's output: a list of triples, or a dict holding one under
    ``triples`` / ``retrieved_context`` / ``context``. ``None`` is no output (an empty list); a bare string is
    malformed (iterating it would score its characters)."""
    if outputs is None:
        return []
    if isinstance(outputs, Mapping):
        key = next((k for k in OUTPUT_KEYS if k in outputs), None)
        if key is None:
            raise InputError(f"output dict has none of the keys {list(OUTPUT_KEYS)} "
                             f"(keys {sorted(map(str, outputs))[:6]})")
        outputs = outputs[key]
        if outputs is None:
            return []
    if isinstance(outputs, str | bytes) or not isinstance(outputs, Sequence):
        raise InputError(f"expected a list of triples, got {type(outputs).__name__} {outputs!r:.80}")
    return [render(t, index=i) for i, t in enumerate(outputs, start=1)]


def golden_strings(expectations: Mapping[str, Any] | None, key: str) -> list[str]:
    """The golden triples under ``key`` of a row's expectations (same shapes as outputs)."""
    if not expectations or key not in expectations or expectations[key] is None:
        raise InputError(f"no golden triples: the row's expectations have no '{key}' (have "
                         f"{sorted(expectations or {})})")
    gold = expectations[key]
    if isinstance(gold, str | bytes) or not isinstance(gold, Sequence):
        raise InputError(f"expectations['{key}']: expected a list of triples, got {type(gold).__name__}")
    try:
        return [render(t, index=i) for i, t in enumerate(gold, start=1)]
    except InputError as exc:
        raise InputError(f"expectations['{key}']: {exc}") from None
