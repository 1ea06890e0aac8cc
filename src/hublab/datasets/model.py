"""A KGQA question as HubLab stores it (``data/kgqa/<name>.jsonl``, one JSON object per line).

Field names follow the thesis CSV (21 columns) with Python-friendly names; ``golden_triples`` are
canonical triple strings of the dataset's graph.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from hublab.errors import InputError


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


def write_jsonl(pairs: list[QAPair], path: str | Path) -> None:
    """Atomic write (temp + rename): a failed stage never leaves half a dataset."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    with tmp.open("w", encoding="utf-8") as fh:
        for p in pairs:
            fh.write(json.dumps(p.to_dict(), ensure_ascii=False) + "\n")
    tmp.replace(path)


def read_jsonl(path: str | Path) -> list[QAPair]:
    path = Path(path)
    if not path.exists():
        raise InputError("dataset file not found (run `dvc repro datasets` or `hublab data datasets`)", file=str(path))
    out: list[QAPair] = []
    known = set(QAPair.__dataclass_fields__)
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
            missing = {"uid", "question", "golden_triples"} - set(obj)
            if missing:
                raise InputError(f"missing keys {sorted(missing)}", file=str(path), row=i)
            if not isinstance(obj["golden_triples"], list):
                raise InputError("expected a list of triple strings", file=str(path), row=i, field="golden_triples")
            obj.setdefault("golden_answer", "")  # optional, as in a CSV: only the generation metrics read it
            out.append(QAPair(**{k: v for k, v in obj.items() if k in known}))
    if not out:
        raise InputError("dataset is empty", file=str(path))
    return out
