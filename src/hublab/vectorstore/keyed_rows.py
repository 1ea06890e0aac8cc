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

import numpy as np

from hublab.vectorstore.exact import Mirror

#: A key value with more rows than this is searched natively (the ANN index is the better tool for a large slice).
KEY_ROWS_MAX = 4096
#: Rows kept per collection (vectors, their float64 unit copy and fields: ~5 KB per 384-d row): emptied when full.
CACHE_ROWS_MAX = 100_000
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
        pinned = next(((f, v) for f, op, v in clauses if op == "==" and f in keys and isinstance(v, str | int)), None)
        if pinned is None:
            return None
        self._check_count(name)
        cache = self._rows.setdefault(name, {})
        if pinned in cache:
            return cache[pinned]
        mirror = self._fetch(name, *pinned)
        with self._lock:
            if self._n_rows.get(name, 0) + (len(mirror.ids) if mirror is not None else 0) > CACHE_ROWS_MAX:
                cache.clear()
                self._n_rows[name] = 0
            cache[pinned] = mirror
            self._n_rows[name] = self._n_rows.get(name, 0) + (len(mirror.ids) if mirror is not None else 0)
        return mirror

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

    def _fetch(self, name: str, field: str, value: Any) -> Mirror | None:
        st = self.store
        literal = json.dumps(value)
        got = st._server_call(st.client.query, name, filter=f"{field} == {literal}", output_fields=["*", "vector"],
                              limit=KEY_ROWS_MAX + 1, timeout=st.timeout, strict_float32=True,
                              doing=f"fetching the rows of {field} == {literal} in {name}", **st._read_level())
        if len(got) > KEY_ROWS_MAX:
            return None
        got = sorted(got, key=lambda r: int(r["id"]))  # the server's row order is not stable; ids are
        ids = np.asarray([int(r["id"]) for r in got], dtype=np.int64)
        matrix = (np.stack([np.asarray(r["vector"], dtype=np.float32) for r in got]) if got
                  else np.zeros((0, 1), np.float32))
        fields = [{k: v for k, v in r.items() if k != "vector"} for r in got]
        return Mirror.from_arrays(ids, matrix, fields)
