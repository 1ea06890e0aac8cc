"""Exact search over the rows of one key value on a Milvus server: a filter that pins a key column (``hub_root ==
"R1"``, HubLink's per-hub searches) is answered from that value's rows, fetched once by the column's scalar index
and scored in this process like the exact mirror, instead of an ANN search of the whole collection per call.

Why: on a Milvus 2.3.5 standalone at GV3 ×100 (2.6 M vectors, IVF_FLAT nlist 1024 / nprobe 64) every hub-filtered
search scanned 64 lists (~164,000 vectors) to find a hub's few hundred rows, ~66 such searches per question: 1.05 s
per question median (docs/scale.md). A hub's rows (~170 at GV3) are one indexed lookup and a 170 × 384 product;
HubLink searches the same hub several times per question (GETHUBPATHSFORHUB's rounds, tie-breaks), so they are
kept. The answer is exact (the mirror's scores, order and ties), where the ANN index was approximate.

What qualifies: the store's collection has the column as a schema VARCHAR field (``ensure_collection(keys=…)``,
which also gives it a scalar index); the filter parses (:func:`hublab.vectorstore.exact.parse_filter`) and has
``<key> == <value>``; the value has at most ``KEY_ROWS_MAX`` rows. Anything else is searched natively.

Staleness: rows cached here are dropped when this process writes the collection, and when its row count changed
(another process re-indexed it), checked at most every ``COUNT_CHECK_S`` seconds."""

from __future__ import annotations

import json
import threading
import time
from typing import Any

from hublab.vectorstore.exact import Mirror

#: A key value with more rows than this is searched natively (the ANN index is the better tool for a large slice).
KEY_ROWS_MAX = 4096
#: Rows kept per collection, emptied when full (per 384-d row: 1.5 KB float32 vector, 3 KB float64 unit copy, its
#: fields; an estimate from those sizes, not measured).
CACHE_ROWS_MAX = 100_000
#: Values fetched by one ``prefetch`` request, and the server's query limit (Milvus: offset + limit ≤ 16,384).
PREFETCH_VALUES = 32
QUERY_LIMIT = 16_384
#: How often (seconds) the collection's row count is compared with the one the cached rows were read at.
COUNT_CHECK_S = 10.0


class KeyedRows:
    """Per collection: its key columns, and per pinned ``(column, value)`` a small :class:`Mirror` of its rows
    (``None``: more than ``KEY_ROWS_MAX`` rows). Methods take the owning ``MilvusVectorStore`` for its client,
    timeouts, read level and error wording."""

    def __init__(self, store: Any) -> None:
        self.store = store
        self._keys: dict[str, frozenset[str]] = {}
        self._rows: dict[str, dict[tuple[str, Any], Mirror | None]] = {}
        self._n_rows: dict[str, int] = {}
        self._count: dict[str, tuple[float, int]] = {}  # collection → (checked at, row count then)
        self._lock = threading.Lock()

    def forget(self, name: str) -> None:
        """This process changed ``name``: its cached rows are stale (its key columns are not)."""
        with self._lock:
            self._rows.pop(name, None)
            self._n_rows.pop(name, None)
            self._count.pop(name, None)

    def key_columns(self, name: str) -> frozenset[str]:
        """The collection's schema VARCHAR fields other than the primary key (HubLink's ``hub_root`` and
        ``path_hash`` on a server; none on a collection whose fields are dynamic)."""
        if name not in self._keys:
            from pymilvus import DataType

            st = self.store
            desc = st._server_call(st.client.describe_collection, name, timeout=st.timeout,
                                   doing=f"describing collection {name}")
            self._keys[name] = frozenset(
                str(f["name"]) for f in desc.get("fields", [])
                if f.get("type") == DataType.VARCHAR and not f.get("is_primary"))
        return self._keys[name]

    def mirror_for(self, name: str, clauses: list[tuple[str, str, Any]]) -> Mirror | None:
        """The rows of the first ``<key> == <value>`` clause as a mirror (searched with all of ``clauses``), or
        None when the search has to go to the server's index."""
        keys = self.key_columns(name)
        pinned = next(((f, v) for f, op, v in clauses if op == "==" and f in keys and _literal(v)), None)
        if pinned is None:
            return None
        self._check_count(name)
        if pinned not in self._rows.get(name, {}):
            self._store(name, pinned[0], self._fetch(name, pinned[0], [pinned[1]]))
        return self._rows.get(name, {}).get(pinned)

    def prefetch(self, name: str, field: str, values: list[Any]) -> None:
        """The rows of every value of ``values`` not cached yet, in one request per chunk (a question's candidate
        hubs: one round trip instead of one per hub). A key the collection does not have: nothing."""
        if field not in self.key_columns(name):
            return
        self._check_count(name)
        cache = self._rows.get(name, {})
        todo = sorted({v for v in values if _literal(v) and (field, v) not in cache}, key=repr)
        for start in range(0, len(todo), PREFETCH_VALUES):
            self._store(name, field, self._fetch(name, field, todo[start : start + PREFETCH_VALUES]))

    def query(self, name: str, clauses: list[tuple[str, str, Any]], limit: int) -> list[dict[str, Any]] | None:
        """Rows matching ``clauses`` (without vectors) when a clause pins key values (``==`` or ``in``) whose rows
        are all cached, at most ``limit`` in id order; else None (the server answers)."""
        keys = self.key_columns(name)
        pinned = next(((f, sorted(v, key=repr) if op == "in" else [v]) for f, op, v in clauses
                       if op in ("==", "in") and f in keys), None)  # ``in`` values parse as a frozenset
        if pinned is None or not pinned[1] or not all(_literal(v) for v in pinned[1]):
            return None
        self._check_count(name)
        cache = self._rows.get(name, {})
        mirrors = [cache.get((pinned[0], v)) for v in pinned[1]]  # distinct values: distinct mirrors
        if any(m is None for m in mirrors):  # not fetched, or too many rows to keep
            return None
        rows = [(int(m.ids[p]), m.fields[p]) for m in mirrors for p in m.positions(clauses).tolist()]
        return [f for _, f in sorted(rows, key=lambda r: r[0])][: max(int(limit), 0)]

    def _store(self, name: str, field: str, got: dict[Any, Mirror | None]) -> None:
        with self._lock:
            cache = self._rows.setdefault(name, {})
            n = sum(len(m.ids) for m in got.values() if m is not None)
            if self._n_rows.get(name, 0) + n > CACHE_ROWS_MAX:
                cache.clear()
                self._n_rows[name] = 0
            for v, m in got.items():
                cache[(field, v)] = m
            self._n_rows[name] = self._n_rows.get(name, 0) + n

    def _check_count(self, name: str) -> None:
        now = time.monotonic()
        seen = self._count.get(name)
        if seen is not None and now - seen[0] < COUNT_CHECK_S:
            return
        n = self.store.count(name)
        if seen is not None and n != seen[1]:
            with self._lock:
                self._rows.pop(name, None)
                self._n_rows.pop(name, None)
        self._count[name] = (now, n)

    def _fetch(self, name: str, field: str, values: list[Any]) -> dict[Any, Mirror | None]:
        """value → a mirror of its rows (None: more than ``KEY_ROWS_MAX``), from one query; a result that may be cut
        by the server's query limit is split and asked again."""
        st = self.store
        literals = [json.dumps(v) for v in values]
        flt = f"{field} == {literals[0]}" if len(values) == 1 else f"{field} in [{', '.join(literals)}]"
        limit = QUERY_LIMIT if len(values) > 1 else KEY_ROWS_MAX + 1
        got = st._server_call(st.client.query, name, filter=flt, output_fields=["*", "vector"], limit=limit,
                              timeout=st.timeout, strict_float32=True,
                              doing=f"fetching the rows of {flt[:200]} in {name}", **st._read_level())
        if len(got) >= limit and len(values) > 1:  # maybe cut: halve
            half = len(values) // 2
            return {**self._fetch(name, field, values[:half]), **self._fetch(name, field, values[half:])}
        by_value: dict[Any, list[dict[str, Any]]] = {v: [] for v in values}
        for r in got:
            by_value[r[field]].append(r)
        # in id order: the server's row order is not stable, ids are (a mirror's ties go by content, then position)
        return {v: None if len(rows) > KEY_ROWS_MAX else Mirror(sorted(rows, key=lambda r: int(r["id"])))
                for v, rows in by_value.items()}


def _literal(v: Any) -> bool:
    return isinstance(v, str | int) and not isinstance(v, bool)

