"""A KGQA question as HubLab stores it (``data/kgqa/<name>.jsonl``, one JSON object per line), and the one row
model both loaders apply (``check_row``): the CSV loader after parsing its cells, the JSONL loader on each object.

Field names follow the thesis CSV (21 columns) with Python-friendly names; ``golden_triples`` are
canonical triple strings of the dataset's graph, or N-Triples statements (``<s> <p> <o> .``) that a run
turns into the graph's triple strings (``datasets/catalog.py::resolve_statements``).
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from hublab.atomic import write_text_atomic
from hublab.errors import InputError
from hublab.graph.model import TripleParseError, parse_triple_string

MISSING_TRIPLE = "None"  # the thesis's placeholder for a golden triple its id conversion could not produce


@dataclass
class QAPair:
    uid: str
    question: str
    golden_answer: str
    golden_triples: list[str]
    source_ids: list[str] = field(default_factory=list)
    topic_entity_id: str | None = None
    topic_entity_value: str | None = None
    hops: int | None = None
    use_case: int | None = None
    retrieval_operation: str | None = None
    semi_typed: bool | None = None
    is_generated_with: str | None = None
    based_on_template: str | None = None
    updated_template: str | None = None
    graph_representation: str | None = None
    answer_format: str | None = None
    answer_type: str | None = None
    condition_type: str | None = None
    used_in_reduced: bool | None = None
    golden_doc_chunks: list[str] = field(default_factory=list)
    notes: str = ""
    # Provenance of a remapped dataset: the original (thesis) golden triples and those not mapped.
    original_golden_triples: list[str] = field(default_factory=list)
    unmapped_golden_triples: list[str] = field(default_factory=list)
    row: int | None = None  # 1-based data row in the source CSV (header = row 0)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


#: The row model's types, by field: what a JSONL object may hold (a CSV cell is parsed into these types first).
_STR_FIELDS = ("uid", "question", "golden_answer", "notes")
_LIST_FIELDS = ("golden_triples", "source_ids", "golden_doc_chunks", "original_golden_triples",
                "unmapped_golden_triples")
_INT_FIELDS = ("hops", "use_case", "row")
_BOOL_FIELDS = ("semi_typed", "used_in_reduced")
#: Fields that must hold a non-empty value (a question, its id and the triples that answer it).
REQUIRED_FIELDS = ("uid", "question", "golden_triples")


def unparseable_golden(triples: list[str]) -> list[str]:
    """Golden entries that are not triple strings (the thesis's ``'None'`` placeholders)."""
    return [t for t in triples if t == MISSING_TRIPLE]


def is_statement(text: str) -> bool:
    """Whether a golden triple is written as an N-Triples statement (``<s> <p> <o> .``) rather than the thesis's
    ``(id:label, predicate, id:label)`` string."""
    return text.lstrip().startswith(("<", "_:"))


def parse_statement(text: str) -> tuple:
    """The (subject, predicate, object) RDF terms of one N-Triples statement; TripleParseError when it is not one."""
    from rdflib import Graph

    line = text.strip()
    if not line.endswith("."):
        line += " ."
    g = Graph()
    try:
        g.parse(data=line + "\n", format="nt")
    except Exception as exc:  # noqa: BLE001 - rdflib's N-Triples parser raises several kinds
        raise TripleParseError(f"not an N-Triples statement ('<s> <p> <o> .'): {' '.join(str(exc).split())[:160]}") \
            from None
    found = list(g)
    if len(found) != 1:
        raise TripleParseError(f"expected one N-Triples statement, found {len(found)}")
    return found[0]


def _type_problem(name: str, value: Any) -> str | None:
    """What is wrong with one field's value, or None."""
    if name in _LIST_FIELDS:
        ok = isinstance(value, list) and all(isinstance(x, str) for x in value)
        return None if ok else "expected a list of strings"
    if value is None:
        return "must not be null" if name in _STR_FIELDS[:2] else None
    if name in _STR_FIELDS:
        return None if isinstance(value, str) else f"expected a string, got {type(value).__name__}"
    if name in _INT_FIELDS:  # bool is an int in Python, not in a dataset
        ok = isinstance(value, int) and not isinstance(value, bool)
        return None if ok else f"expected an integer, got {type(value).__name__}"
    if name in _BOOL_FIELDS:
        return None if isinstance(value, bool) else f"expected true or false, got {type(value).__name__}"
    return None if isinstance(value, str) else f"expected a string or null, got {type(value).__name__}"


def check_row(fields: dict[str, Any], *, file: str, row: int) -> QAPair:
    """The row model of both loaders: known fields only, each of its type, the required ones non-empty, and every
    golden triple a triple string (or the thesis's ``'None'`` placeholder). Raises a located InputError."""
    unknown = sorted(set(fields) - set(QAPair.__dataclass_fields__))
    if unknown:
        raise InputError(f"unknown key(s) {unknown}", file=file, row=row, field=unknown[0])
    missing = [k for k in REQUIRED_FIELDS if k not in fields]
    if missing:
        raise InputError(f"missing keys {missing}", file=file, row=row, field=missing[0])
    for name, value in fields.items():
        problem = _type_problem(name, value)
        if problem:
            raise InputError(problem, file=file, row=row, field=name)
    for name in REQUIRED_FIELDS:
        if not fields[name] or (isinstance(fields[name], str) and not fields[name].strip()):
            msg = "expected at least one golden triple" if name == "golden_triples" else "must not be empty"
            raise InputError(msg, file=file, row=row, field=name)
    for i, t in enumerate(fields["golden_triples"]):
        if t == MISSING_TRIPLE:
            continue
        try:
            if is_statement(t):
                parse_statement(t)
            else:
                parse_triple_string(t)
        except TripleParseError as exc:
            raise InputError(f"golden triple {i}: {exc}", file=file, row=row, field="golden_triples") from exc
    text_or_empty = {k: ("" if k in ("golden_answer", "notes") and v is None else v) for k, v in fields.items()}
    return QAPair(**{"golden_answer": "", **text_or_empty})  # golden_answer optional: only generation reads it


def write_jsonl(pairs: list[QAPair], path: str | Path) -> None:
    """Atomic write (temp + rename): a failed stage never leaves half a dataset."""
    write_text_atomic(path, "".join(json.dumps(p.to_dict(), ensure_ascii=False) + "\n" for p in pairs))


def read_jsonl(path: str | Path) -> list[QAPair]:
    path = Path(path)
    if not path.exists():
        raise InputError("dataset file not found (run `dvc repro datasets` or `hublab data datasets`)", file=str(path))
    out: list[QAPair] = []
    with path.open("rb") as fh:
        for i, raw in enumerate(fh, start=1):
            try:
                line = raw.decode("utf-8-sig" if i == 1 else "utf-8")  # a BOM is not JSON
            except UnicodeDecodeError as exc:
                raise InputError(f"not UTF-8 text ({exc.reason} at byte {exc.start})", file=str(path), row=i) from None
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except json.JSONDecodeError as exc:
                raise InputError(f"invalid JSON: {exc.msg}", file=str(path), row=i) from exc
            if not isinstance(obj, dict):
                raise InputError("expected a JSON object per line", file=str(path), row=i)
            out.append(check_row(obj, file=str(path), row=i))
    if not out:
        raise InputError("dataset is empty", file=str(path))
    return out
