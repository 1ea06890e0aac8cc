"""Reader for the ORKG export JSON (a list of triples ``{entity_subject, predicate, entity_object}``
plus bare entity records ``{uid, text, knowledge_types}``), with errors that name the record."""

from __future__ import annotations

import json
from pathlib import Path

from hublab.errors import InputError
from hublab.graph.model import Knowledge, Triple


def _knowledge(rec: object, *, file: str, row: int, field: str) -> Knowledge:
    if not isinstance(rec, dict):
        raise InputError(f"expected an object {{uid, text, knowledge_types}}, got {type(rec).__name__}",
                         file=file, row=row, field=field)
    uid = rec.get("uid")
    text = rec.get("text")
    types = rec.get("knowledge_types", [])
    if not isinstance(uid, str) or not uid:
        raise InputError("expected a non-empty string 'uid'", file=file, row=row, field=f"{field}.uid")
    if not isinstance(text, str):
        raise InputError("expected a string 'text'", file=file, row=row, field=f"{field}.text")
    if types is None:
        types = []
    if not isinstance(types, list) or not all(isinstance(t, str) for t in types):
        raise InputError("expected a list of strings", file=file, row=row, field=f"{field}.knowledge_types")
    return Knowledge(uid, text, tuple(types))


def parse_export(data: object, *, file: str = "<export>") -> tuple[list[Triple], list[Knowledge]]:
    """Validate and convert parsed export JSON. Row numbers are 0-based list indices."""
    if not isinstance(data, list):
        raise InputError(f"expected a JSON list of records, got {type(data).__name__}", file=file)
    triples: list[Triple] = []
    entities: list[Knowledge] = []
    for i, rec in enumerate(data):
        if not isinstance(rec, dict):
            raise InputError(f"expected an object, got {type(rec).__name__}", file=file, row=i)
        if "predicate" in rec or "entity_subject" in rec or "entity_object" in rec:
            for key in ("entity_subject", "predicate", "entity_object"):
                if key not in rec:
                    raise InputError("missing key of a triple record", file=file, row=i, field=key)
            pred = rec["predicate"]
            if not isinstance(pred, str) or not pred:
                raise InputError("expected a non-empty string", file=file, row=i, field="predicate")
            s = _knowledge(rec["entity_subject"], file=file, row=i, field="entity_subject")
            o = _knowledge(rec["entity_object"], file=file, row=i, field="entity_object")
            triples.append(Triple(s, pred, o))
        elif "uid" in rec:
            entities.append(_knowledge(rec, file=file, row=i, field="entity"))
        else:
            raise InputError("record is neither a triple nor an entity (no 'predicate' or 'uid')", file=file, row=i)
    return triples, entities


def read_export(path: str | Path) -> tuple[list[Triple], list[Knowledge]]:
    path = Path(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError as exc:
        raise InputError("file not found", file=str(path)) from exc
    except json.JSONDecodeError as exc:
        raise InputError(f"invalid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}", file=str(path)) from exc
    except UnicodeDecodeError as exc:
        raise InputError(f"not UTF-8 text ({exc.reason} at byte {exc.start})", file=str(path)) from None
    return parse_export(data, file=str(path))
