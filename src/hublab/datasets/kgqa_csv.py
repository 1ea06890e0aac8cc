"""Loader for the thesis KGQA CSVs (``shared/data/kgqa/*.csv``): 21 columns, or the first 15 for the
reduced set; a user's own file needs only ``uid``, ``question`` and ``golden_triples`` (docs/datasets.md).
List columns are Python literals (parsed with :func:`ast.literal_eval`, never ``eval``), booleans
are ``True``/``False`` and ints are decimal. Every golden triple string must parse with
:func:`hublab.graph.model.parse_triple_string`, except the literal string ``'None'``: the thesis's
GV3/GV4 conversion failed for one triple of one question and wrote ``None``. That entry is kept in
``golden_triples`` so |G| (and thus recall) matches the thesis, and is listed by :func:`unparseable_golden`.
Errors name the file, the 1-based data row and the column.
"""

from __future__ import annotations

import ast
import csv
import io
from pathlib import Path
from typing import Any

from hublab.datasets.model import MISSING_TRIPLE, QAPair, check_row, unparseable_golden
from hublab.errors import InputError

# CSV column -> QAPair field, in the thesis's column order.
COLUMNS: dict[str, str] = {
    "uid": "uid",
    "question": "question",
    "golden_answer": "golden_answer",
    "source_ids": "source_ids",
    "golden_doc_chunks": "golden_doc_chunks",
    "golden_triples": "golden_triples",
    "is_generated_with": "is_generated_with",
    "topic_entity_id": "topic_entity_id",
    "topic_entity_value": "topic_entity_value",
    "hops": "hops",
    "based_on_template": "based_on_template",
    "use_case": "use_case",
    "retrieval_operation": "retrieval_operation",
    "semi-typed": "semi_typed",
    "updated template": "updated_template",
    "graph_representation": "graph_representation",
    "answer_format": "answer_format",
    "answer_type": "answer_type",
    "condition_type": "condition_type",
    "used_in_reduced": "used_in_reduced",
    "notes": "notes",
}
#: What a KGQA file must have: a question, its id and the triples that answer it (a user's own minimal file).
#: Every other thesis column is optional: the generation metrics need ``golden_answer``, the thesis's
#: breakdowns (Tables 10.2-10.6) ``hops``, ``use_case``, ``retrieval_operation`` and ``semi-typed``.
REQUIRED = ("uid", "question", "golden_triples")
THESIS_COLUMNS = tuple(list(COLUMNS)[:15])  # the reduced CSV has exactly these, the full sets all 21
LIST_COLUMNS = ("source_ids", "golden_doc_chunks", "golden_triples")
INT_COLUMNS = ("hops", "use_case")
BOOL_COLUMNS = ("semi-typed", "used_in_reduced")
NON_EMPTY = REQUIRED
__all__ = ["MISSING_TRIPLE", "QAPair", "load_kgqa_csv", "parse_row", "unparseable_golden"]


def _list(value: str, *, file: str, row: int, column: str) -> list[str]:
    if value.strip() == "":
        return []
    try:
        obj = ast.literal_eval(value)
    except (ValueError, SyntaxError) as exc:
        msg = f"expected a Python list literal, got {value[:80]!r}"
        raise InputError(msg, file=file, row=row, field=column) from exc
    if not isinstance(obj, list) or not all(isinstance(x, str) for x in obj):
        raise InputError("expected a list of strings", file=file, row=row, field=column)
    return obj


def _bool(value: str, *, file: str, row: int, column: str) -> bool | None:
    v = value.strip().lower()
    if v in ("true", "false"):
        return v == "true"
    if v == "" and column not in REQUIRED:
        return None
    raise InputError(f"expected True or False, got {value!r}", file=file, row=row, field=column)


def _int(value: str, *, file: str, row: int, column: str) -> int | None:
    if value.strip() == "" and column not in REQUIRED:
        return None
    try:
        return int(value.strip())
    except ValueError as exc:
        raise InputError(f"expected an integer, got {value!r}", file=file, row=row, field=column) from exc


def parse_row(rec: dict[str, str], *, file: str, row: int) -> QAPair:
    kw: dict[str, Any] = {"row": row}
    for col, fld in COLUMNS.items():
        if col not in rec:
            continue
        raw = rec[col] if rec[col] is not None else ""
        if col in NON_EMPTY and raw.strip() == "":
            raise InputError("must not be empty", file=file, row=row, field=col)
        if col in LIST_COLUMNS:
            kw[fld] = _list(raw, file=file, row=row, column=col)
        elif col in INT_COLUMNS:
            kw[fld] = _int(raw, file=file, row=row, column=col)
        elif col in BOOL_COLUMNS:
            kw[fld] = _bool(raw, file=file, row=row, column=col)
        elif col == "notes":
            kw[fld] = raw
        else:
            kw[fld] = raw if raw != "" else None
    return check_row(kw, file=file, row=row)  # the row model the JSONL loader applies too


def _undecodable(value: str) -> str | None:
    """The first byte that was not UTF-8 (decoded with ``surrogateescape``), as ``0xNN``; None if all decoded."""
    for ch in value:
        if 0xDC80 <= ord(ch) <= 0xDCFF:
            return f"0x{ord(ch) - 0xDC00:02x}"
    return None


def load_kgqa_csv(path: str | Path) -> list[QAPair]:
    """Read a thesis KGQA CSV into :class:`QAPair` objects (``row`` = 1-based data row). A UTF-8 byte-order mark
    (Excel's "CSV UTF-8") is accepted; a byte that is not UTF-8 is reported with the data row and column it is in
    (the file is decoded whole, so the row is the real one, not the row of a read block)."""
    path = Path(path)
    file = str(path)
    try:
        raw = path.read_bytes()
    except FileNotFoundError as exc:
        raise InputError("file not found", file=file) from exc
    except IsADirectoryError:
        raise InputError("expected a KGQA .csv/.jsonl file, got a directory", file=file, field="--dataset") from None
    except PermissionError:
        raise InputError("file is not readable (permission denied)", file=file) from None
    text = raw.decode("utf-8-sig", errors="surrogateescape")
    reader = csv.DictReader(io.StringIO(text, newline=""), strict=True)
    try:
        header = reader.fieldnames or []
    except csv.Error as exc:
        raise InputError(f"malformed CSV: {exc}", file=file, row=0) from exc
    for col in header:
        bad = _undecodable(col)
        if bad:
            raise InputError(f"not UTF-8 text (byte {bad})", file=file, row=0)
    missing = [c for c in REQUIRED if c not in header]
    if missing:
        raise InputError(f"missing column(s) {missing}", file=file, row=0, field=missing[0])
    unknown = [c for c in header if c not in COLUMNS]
    if unknown:
        raise InputError(f"unknown column(s) {unknown}", file=file, row=0, field=unknown[0])
    pairs = []
    try:
        for i, rec in enumerate(reader, start=1):
            if None in rec:
                msg = f"{len(header) + len(rec[None])} fields, header has {len(header)}"
                raise InputError(msg, file=file, row=i)
            if any(v is None for v in rec.values()):
                raise InputError(f"fewer fields than the {len(header)} header columns", file=file, row=i)
            for col, v in rec.items():
                bad = _undecodable(v)
                if bad:
                    raise InputError(f"not UTF-8 text (byte {bad})", file=file, row=i, field=col)
            pairs.append(parse_row(rec, file=file, row=i))
    except csv.Error as exc:
        raise InputError(f"malformed CSV: {exc}", file=file, row=len(pairs) + 1) from exc
    if not pairs:
        raise InputError("no data rows", file=file)
    return pairs
