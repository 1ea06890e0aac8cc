"""Exact in-memory search over a mirror of a Milvus Lite collection.

Why: Milvus Lite applies scalar filters *after* its ANN top-k and counts deleted rows inside that window,
so a hub-restricted search (``hub_root in [...]``) can return a handful of hits whatever the limit, and
an index that was updated in place loses results. For the collection sizes Milvus Lite is meant for
(≤ a few hundred thousand vectors) an exact matrix product is both correct and fast. A Milvus server
does pre-filtering properly and keeps using native search.

Supported filter grammar (what HubLab emits): ``<field> in [..]``, ``<field> not in [..]``,
``<field> == <literal>``, ``<field> != <literal>``, joined by ``and``; anything else → None (caller falls
back to native search).
"""

from __future__ import annotations

import json
import re
from typing import Any

import numpy as np

_CLAUSE = re.compile(r"^\s*(\w+)\s*(not in|in|==|!=)\s*(.+?)\s*$", re.S)


def parse_filter(expr: str) -> list[tuple[str, str, Any]] | None:
    if not expr or not expr.strip():
        return []
    clauses = []
    for part in re.split(r"\s+and\s+", expr.strip()):
        m = _CLAUSE.match(part)
        if not m:
            return None
        field, op, raw = m.groups()
        try:
            value = json.loads(raw)
        except json.JSONDecodeError:
            return None
        if op in ("in", "not in") and not isinstance(value, list):
            return None
        clauses.append((field, op, set(value) if isinstance(value, list) else value))
    return clauses


class Mirror:
    """Ids, vectors and scalar fields of one collection, with what every query needs precomputed once:
    L2-normalised vectors for COSINE, and per filtered field an inverted index value → row positions, so
    a query costs one matrix product plus a partial sort (no per-row Python work)."""

    def __init__(self, rows: list[dict[str, Any]]) -> None:
        self.ids = np.array([int(r["id"]) for r in rows], dtype=np.int64)
        self.matrix = (np.asarray([r["vector"] for r in rows], dtype=np.float32) if rows
                       else np.zeros((0, 1), np.float32))
        self.fields = [{k: v for k, v in r.items() if k != "vector"} for r in rows]
        self._columns: dict[str, np.ndarray] = {}
        self._postings: dict[str, dict[Any, np.ndarray]] = {}
        self._normed: np.ndarray | None = None

    def column(self, name: str) -> np.ndarray:
        if name not in self._columns:
            self._columns[name] = np.array([f.get(name) for f in self.fields], dtype=object)
        return self._columns[name]

    def postings(self, name: str) -> dict[Any, np.ndarray]:
        """value → sorted row positions holding it (built once per field)."""
        if name not in self._postings:
            lists: dict[Any, list[int]] = {}
            for pos, f in enumerate(self.fields):
                v = f.get(name)
                try:
                    lists.setdefault(v, []).append(pos)
                except TypeError:  # unhashable value (list/dict field): not filterable by postings
                    continue
            self._postings[name] = {v: np.asarray(p, dtype=np.int64) for v, p in lists.items()}
        return self._postings[name]

    def _rows_with(self, field: str, values: set[Any]) -> np.ndarray:
        post = self.postings(field)
        parts = [post[v] for v in values if v in post]
        return np.unique(np.concatenate(parts)) if parts else np.zeros(0, dtype=np.int64)

    def mask(self, clauses: list[tuple[str, str, Any]]) -> np.ndarray:
        m = np.ones(len(self.ids), dtype=bool)
        for field, op, value in clauses:
            if op in ("in", "==", "not in", "!="):
                values = value if op in ("in", "not in") else {value}
                hit = np.zeros(len(self.ids), dtype=bool)
                hit[self._rows_with(field, values)] = True
                m &= hit if op in ("in", "==") else ~hit
        return m

    def normed(self) -> np.ndarray:
        if self._normed is None:
            self._normed = self.matrix / np.maximum(np.linalg.norm(self.matrix, axis=1, keepdims=True), 1e-12)
        return self._normed

    def search(self, vectors: np.ndarray, k: int, clauses, metric: str) -> list[list[tuple[int, float]]]:
        """Per query vector: [(row position, score)] best first; L2 scores are negated distances.
        Ties are broken by row position, so results never depend on the partial sort's internals."""
        if len(self.ids) == 0:
            return [[] for _ in range(len(vectors))]
        idx = np.nonzero(self.mask(clauses))[0] if clauses else None
        if idx is not None and len(idx) == 0:
            return [[] for _ in range(len(vectors))]
        q = np.asarray(vectors, dtype=np.float32)
        if metric == "L2":
            sub = self.matrix if idx is None else self.matrix[idx]
            scores = -(((sub[None, :, :] - q[:, None, :]) ** 2).sum(-1))
        else:
            base = self.normed() if metric == "COSINE" else self.matrix
            sub = base if idx is None else base[idx]
            if metric == "COSINE":
                q = q / np.maximum(np.linalg.norm(q, axis=1, keepdims=True), 1e-12)
            scores = q @ sub.T
        n = scores.shape[1]
        k = min(k, n)
        out = []
        for row in scores:
            top = np.argpartition(-row, k - 1)[:k] if k < n else np.arange(n)
            top = top[np.lexsort((top, -row[top]))]
            pos = top if idx is None else idx[top]
            out.append(list(zip(pos.tolist(), row[top].tolist(), strict=True)))
        return out
