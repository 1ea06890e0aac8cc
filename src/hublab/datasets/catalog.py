"""What ``--graph`` and ``--dataset`` accept: the built-in names (from params.yaml) or a user's own KGQA file
(a thesis-format CSV or a JSONL of QA pairs), and the check that a dataset's golden triples refer to the
graph it is run on — by content (the golden ids exist in the graph), not by name."""

from __future__ import annotations

import os
import re
import stat
from pathlib import Path

from hublab.config import Settings
from hublab.datasets.kgqa_csv import load_kgqa_csv, unparseable_golden
from hublab.datasets.model import QAPair, is_statement, parse_statement, read_jsonl
from hublab.errors import InputError
from hublab.graph.base import KnowledgeGraph
from hublab.graph.model import TripleParseError, parse_triple_string

#: a user's KGQA file is read whole: a larger one is refused before reading (the thesis's CSVs are ~240 kB)
MAX_DATASET_BYTES = 100 * 1024 * 1024
#: one JSONL row (one question with its golden triples and answers) at most this long
MAX_JSONL_ROW_BYTES = 1024 * 1024
#: JSON nesting a JSONL row may use (a QA pair is an object holding lists of strings); deeper input would end in
#: a RecursionError inside the JSON parser
MAX_JSON_DEPTH = 20
_JSON_STRING = re.compile(rb'"(?:[^"\\]|\\.)*"')
_JSON_BRACKET = re.compile(rb"[\[\]{}]")


def dataset_file_problem(path: Path) -> InputError | None:
    """Refuse a dataset file whose reading would be unbounded, before it is read: not a regular file (``/dev/zero``,
    a FIFO: read without end), larger than :data:`MAX_DATASET_BYTES`; for JSONL, a row longer than
    :data:`MAX_JSONL_ROW_BYTES` or nested deeper than :data:`MAX_JSON_DEPTH` (located by row)."""
    file = str(path)
    try:
        st = os.stat(path)
    except OSError:
        return None  # "not found" / "not readable" are the loaders' own messages
    if stat.S_ISDIR(st.st_mode):
        return InputError("expected a KGQA .csv or .jsonl file, got a directory", file=file, field="--dataset")
    if not stat.S_ISREG(st.st_mode):
        return InputError("expected a KGQA .csv or .jsonl file, got a device, pipe or socket (it would be read "
                          "without end)", file=file, field="--dataset")
    if st.st_size > MAX_DATASET_BYTES:
        return InputError(f"is {st.st_size / 1e6:.0f} MB; a KGQA file is at most {MAX_DATASET_BYTES / 1e6:.0f} MB "
                          "(hublab.datasets.catalog.MAX_DATASET_BYTES)", file=file, field="--dataset")
    if path.suffix.lower() != ".jsonl":
        return None
    try:
        with path.open("rb") as fh:
            for row, raw in enumerate(fh, start=1):
                if len(raw) > MAX_JSONL_ROW_BYTES:
                    return InputError(f"the row is {len(raw) / 1e6:.1f} MB; a JSONL row is at most "
                                      f"{MAX_JSONL_ROW_BYTES / 1e6:.0f} MB (a huge cell?)", file=file, row=row)
                if raw.count(b"[") + raw.count(b"{") <= MAX_JSON_DEPTH:
                    continue
                depth = deepest = 0
                for m in _JSON_BRACKET.finditer(_JSON_STRING.sub(b'""', raw)):
                    depth += 1 if m.group() in (b"[", b"{") else -1
                    deepest = max(deepest, depth)
                if deepest > MAX_JSON_DEPTH:
                    return InputError(f"JSON nested {deepest} levels deep; a QA pair is an object of strings and "
                                      f"lists of strings (at most {MAX_JSON_DEPTH} levels)", file=file, row=row)
    except OSError:
        return None
    return None


def is_dataset_file(name: str) -> bool:
    return name.lower().endswith((".csv", ".jsonl")) or "/" in name or Path(name).exists()


def load_dataset(st: Settings, name: str) -> list[QAPair]:
    """A built-in dataset by name, or a KGQA file by path (CSV in the thesis's columns, or JSONL; the suffix is
    matched case-insensitively: ``upper.CSV`` is a CSV)."""
    if is_dataset_file(name):
        path = Path(name)
        if not path.exists():
            raise InputError("dataset file not found", file=str(path), field="--dataset")
        if path.is_dir():
            raise InputError("expected a KGQA .csv or .jsonl file, got a directory", file=str(path),
                             field="--dataset")
        suffix = path.suffix.lower()
        if suffix not in (".csv", ".jsonl"):
            raise InputError(f"unknown dataset file type {path.suffix!r}; expected .csv (thesis columns) or .jsonl",
                             file=str(path), field="--dataset")
        bounded = dataset_file_problem(path)
        if bounded is not None:
            raise bounded
        return load_kgqa_csv(path) if suffix == ".csv" else read_jsonl(path)
    valid = st.dataset_names()
    if name not in valid:
        raise InputError(f"unknown dataset {name!r}; valid: {', '.join(valid)} or a path to a .csv/.jsonl file",
                         field="--dataset")
    return read_jsonl(st.dataset_file(name))


def resolve_statements(pairs: list[QAPair], graph: KnowledgeGraph) -> tuple[list[QAPair], dict[int, list[str]]]:
    """``pairs`` with every golden N-Triples statement replaced by the graph's triple string for it, and 1-based row
    -> the statements the graph lacks (rendered from their terms, so they stay in the row, where they can never be
    retrieved: the same rule as golden ids the graph lacks). Pairs without statements are returned as they are."""
    from dataclasses import replace

    from hublab.graph.vocabulary import local_name, node_uid

    out: list[QAPair] = []
    missing: dict[int, list[str]] = {}
    for i, p in enumerate(pairs, start=1):
        if not any(is_statement(g) for g in p.golden_triples):
            out.append(p)
            continue
        golden: list[str] = []
        for g in p.golden_triples:
            if not is_statement(g):
                golden.append(g)
                continue
            s, pr, o = parse_statement(g)
            found = graph.triple_for_statement(s, pr, o) if hasattr(graph, "triple_for_statement") else None
            if found is not None:
                golden.append(found.render())
                continue
            missing.setdefault(getattr(p, "row", None) or i, []).append(g.strip())
            golden.append(f"({node_uid(s)}:{local_name(str(s))}, {local_name(str(pr))}, {node_uid(o)}:"
                          f"{o if o.__class__.__name__ == 'Literal' else local_name(str(o))})")
        out.append(replace(p, golden_triples=golden))
    return out, missing


def _golden_ids(pair: QAPair) -> list[str]:
    """The subject and object ids of a pair's golden triples (the thesis's ``'None'`` placeholders skipped)."""
    ids: list[str] = []
    for g in pair.golden_triples:
        if g in unparseable_golden([g]):
            continue
        try:
            t = parse_triple_string(g)
        except TripleParseError:
            continue
        ids += [t.subject_id, t.object_id]
    return ids


def check_golden_ids(pairs: list[QAPair], graph: KnowledgeGraph, *, dataset: str, graph_name: str,
                     min_share: float = 0.5) -> float:
    """Share of golden-triple ids present in the graph; below ``min_share`` the pairing is refused (the golden
    triples were written for another graph, so every metric would be 0)."""
    ids = [i for p in pairs for i in _golden_ids(p)]
    if not ids:
        return 1.0
    share = sum(1 for i in ids if graph.entity(i) is not None) / len(ids)
    if share < min_share:
        raise InputError(f"dataset {dataset!r}: only {share:.0%} of its golden triple ids exist in graph "
                         f"{graph_name!r}: golden triple ids would not match (wrong --graph?)", field="--graph")
    return share


def rows_with_missing_golden_ids(pairs: list[QAPair], graph: KnowledgeGraph) -> dict[int, list[str]]:
    """1-based row -> the golden ids of that row the graph lacks (distinct, in order), for every such row: a triple
    with such an id can never be retrieved, so the row scores 0 on it whatever the method does."""
    out: dict[int, list[str]] = {}
    for i, p in enumerate(pairs, start=1):
        missing = [g for g in dict.fromkeys(_golden_ids(p)) if graph.entity(g) is None]
        if missing:
            out[getattr(p, "row", None) or i] = missing
    return out


def duplicate_uids(pairs: list[QAPair]) -> dict[str, list[int]]:
    """uid -> the 1-based rows it appears in, for every uid given more than once (its answers would be counted
    twice, and a resumed run keys finished questions by row and uid)."""
    rows: dict[str, list[int]] = {}
    for i, p in enumerate(pairs, start=1):
        rows.setdefault(p.uid, []).append(getattr(p, "row", None) or i)
    return {u: r for u, r in rows.items() if len(r) > 1}
