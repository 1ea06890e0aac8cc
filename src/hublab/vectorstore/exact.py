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
    def __init__(self, rows: list[dict[str, Any]]) -> None:
        self.ids = np.array([int(r["id"]) for r in rows], dtype=np.int64)
        self.matrix = (np.asarray([r["vector"] for r in rows], dtype=np.float32) if rows
                       else np.zeros((0, 1), np.float32))
        self.fields = [{k: v for k, v in r.items() if k != "vector"} for r in rows]
        self._columns: dict[str, np.ndarray] = {}

    def column(self, name: str) -> np.ndarray:
        if name not in self._columns:
            self._columns[name] = np.array([f.get(name) for f in self.fields], dtype=object)
        return self._columns[name]

    def mask(self, clauses: list[tuple[str, str, Any]]) -> np.ndarray:
        m = np.ones(len(self.ids), dtype=bool)
        for field, op, value in clauses:
            col = self.column(field)
            if op == "in":
                m &= np.fromiter((v in value for v in col), bool, len(col))
            elif op == "not in":
                m &= np.fromiter((v not in value for v in col), bool, len(col))
            elif op == "==":
                m &= col == value
            else:
                m &= col != value
        return m

    def search(self, vectors: np.ndarray, k: int, clauses, metric: str) -> list[list[tuple[int, float]]]:
        """Per query vector: [(row position, score)] best first; L2 scores are negated distances."""
        if len(self.ids) == 0:
            return [[] for _ in range(len(vectors))]
        idx = np.nonzero(self.mask(clauses))[0] if clauses else np.arange(len(self.ids))
        if len(idx) == 0:
            return [[] for _ in range(len(vectors))]
        sub = self.matrix[idx]
        q = np.asarray(vectors, dtype=np.float32)
        if metric == "L2":
            scores = -(((sub[None, :, :] - q[:, None, :]) ** 2).sum(-1))
        else:
            if metric == "COSINE":
                sub = sub / np.maximum(np.linalg.norm(sub, axis=1, keepdims=True), 1e-12)
                q = q / np.maximum(np.linalg.norm(q, axis=1, keepdims=True), 1e-12)
            scores = q @ sub.T
        k = min(k, len(idx))
        out = []
        for row in scores:
            top = np.argpartition(-row, k - 1)[:k] if k < len(row) else np.arange(len(row))
            top = top[np.argsort(-row[top], kind="stable")]
            out.append([(int(idx[i]), float(row[i])) for i in top])
        return out
