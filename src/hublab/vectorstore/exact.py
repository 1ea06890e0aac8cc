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
from functools import lru_cache
from typing import Any

import numpy as np

from hublab.scores import as64, round_scores

#: Build bookkeeping, not content: left out of the tie-break key (``Mirror.tie_ranks``). ``gen`` is HubLink's
#: index generation, ``content_hash`` a dense index's build hash.
VOLATILE_FIELDS = frozenset({"id", "gen", "content_hash"})
#: Query vectors whose scores against every row are kept (a question's few vectors; ~0.2 MB each at GV3's size).
FULL_SCORE_QUERIES = 8

_CLAUSE = re.compile(r"^\s*(\w+)\s*(not in|in|==|!=)\s*(.+?)\s*$", re.S)


@lru_cache(maxsize=8192)
def _parse(expr: str) -> tuple[tuple[str, str, Any], ...] | None:
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
        try:
            clauses.append((field, op, frozenset(value) if isinstance(value, list) else value))
        except TypeError:  # unhashable list items: no exact search for this expression
            return None
    return tuple(clauses)


def parse_filter(expr: str) -> list[tuple[str, str, Any]] | None:
    """``[(field, op, value)]`` (``in``/``not in`` values as frozensets), ``[]`` for no filter, None when the
    expression is outside the grammar. Parsed expressions are cached (HubLab repeats the same hub filters)."""
    if not expr or not expr.strip():
        return []
    parsed = _parse(expr)
    return None if parsed is None else list(parsed)


class Mirror:
    """Ids, vectors and scalar fields of one collection, with what every query needs precomputed once:
    L2-normalised vectors for COSINE, per field an inverted index value → row positions and a column array,
    so a query costs set operations on sorted positions, one matrix product over the selected rows and a
    partial sort (no per-row Python work)."""

    def __init__(self, rows: list[dict[str, Any]]) -> None:
        self.ids = np.array([int(r["id"]) for r in rows], dtype=np.int64)
        self.matrix = (np.asarray([r["vector"] for r in rows], dtype=np.float32) if rows
                       else np.zeros((0, 1), np.float32))
        self.fields = [{k: v for k, v in r.items() if k != "vector"} for r in rows]
        self._columns: dict[str, np.ndarray] = {}
        self._postings: dict[str, dict[Any, np.ndarray]] = {}
        self._base64: dict[str, np.ndarray] = {}
        self._tie: np.ndarray | None = None
        self._last_query: tuple[tuple[tuple[int, ...], bytes], np.ndarray] | None = None
        self._known: dict[tuple, _KnownQuery] = {}  # query → its scores and order over every row (oldest first)
        self._seen_queries: dict[tuple, None] = {}  # queries searched once on a subset of rows

    @classmethod
    def from_arrays(cls, ids: np.ndarray, matrix: np.ndarray, fields: list[dict[str, Any]]) -> Mirror:
        """A mirror from columns already read (:mod:`hublab.vectorstore.mirror_cache`), without a dict per row."""
        m = cls([])
        m.ids = np.asarray(ids, dtype=np.int64)
        m.matrix = np.asarray(matrix, dtype=np.float32) if len(ids) else np.zeros((0, 1), np.float32)
        m.fields = fields
        return m

    def column(self, name: str) -> np.ndarray:
        """Field ``name`` of every row (object array; None where a row lacks it)."""
        if name not in self._columns:
            col = np.empty(len(self.fields), dtype=object)
            col[:] = [f.get(name) for f in self.fields]
            self._columns[name] = col
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

    def _rows_with(self, field: str, values) -> np.ndarray:
        post = self.postings(field)
        parts = [post[v] for v in values if _hashable(v) and v in post]
        if len(parts) == 1:
            return parts[0]
        return np.unique(np.concatenate(parts)) if parts else np.zeros(0, dtype=np.int64)

    def mask(self, clauses: list[tuple[str, str, Any]]) -> np.ndarray:
        m = np.zeros(len(self.ids), dtype=bool)
        m[self.positions(clauses)] = True
        return m

    def positions(self, clauses) -> np.ndarray:
        """Sorted row positions matching every clause, from the postings (set operations on sorted position
        arrays; a full-length mask only for a purely negative filter)."""
        idx: np.ndarray | None = None
        excluded: list[np.ndarray] = []
        for field, op, value in clauses:
            values = value if op in ("in", "not in") else (value,)
            rows = self._rows_with(field, values)
            if op in ("in", "=="):
                idx = rows if idx is None else idx[np.isin(idx, rows, assume_unique=True)]
            else:
                excluded.append(rows)
        if idx is None:
            keep = np.ones(len(self.ids), dtype=bool)
            for rows in excluded:
                keep[rows] = False
            return np.flatnonzero(keep)
        for rows in excluded:
            if len(rows) and len(idx):
                idx = idx[~np.isin(idx, rows, assume_unique=True)]
        return idx

    def tie_ranks(self) -> np.ndarray:
        """Per row, its rank among all rows by content (every scalar field except the build bookkeeping in
        ``VOLATILE_FIELDS``): the tie-break of equal scores. Why: row positions and ids depend on insertion order,
        which an interrupted and resumed (or incremental) build changes; content does not."""
        if self._tie is None:
            keys = [tuple(sorted((k, repr(v)) for k, v in f.items() if k not in VOLATILE_FIELDS)) for f in self.fields]
            ranks = np.empty(len(keys), dtype=np.int64)
            ranks[sorted(range(len(keys)), key=keys.__getitem__)] = np.arange(len(keys))
            self._tie = ranks
        return self._tie

    def _base(self, metric: str) -> np.ndarray:
        """The float64 matrix scores are computed on (unit rows for COSINE), cached per metric."""
        if metric not in self._base64:
            m64 = self.matrix.astype(np.float64)
            if metric == "COSINE":
                m64 /= np.maximum(np.linalg.norm(m64, axis=1, keepdims=True), 1e-12)
            self._base64[metric] = m64
        return self._base64[metric]

    def search_arrays(self, vectors: np.ndarray, k: int, clauses, metric: str) -> list[tuple[np.ndarray, np.ndarray]]:
        """Per query vector: (row positions, scores), best first; L2 scores are negated distances.

        Scores are portable (``hublab.scores``: float64, rounded to ``SCORE_DECIMALS``) and equal scores are
        ordered by the rows' content (``tie_ranks``), so the same collection gives the same lists on every CPU and
        whatever order its rows were inserted in; rows tied at the cut are chosen by that order too."""
        empty = (np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float64))
        if len(self.ids) == 0:
            return [empty for _ in range(len(vectors))]
        idx = self.positions(clauses) if clauses else None
        if idx is not None and len(idx) == 0:
            return [empty for _ in range(len(vectors))]
        arr = np.asarray(vectors)
        if metric != "L2":
            key = (metric, arr.shape, arr.dtype.str, arr.tobytes())
            known = self._known.get(key)
            if known is not None:  # a repeated query: select from its scores and order over every row
                return known.top(idx, k, self.tie_ranks())
            if idx is None or key in self._seen_queries:
                return self._remember(key, self._full(arr, metric)).top(idx, k, self.tie_ranks())
            self._seen_queries[key] = None
            while len(self._seen_queries) > 4 * FULL_SCORE_QUERIES:
                self._seen_queries.pop(next(iter(self._seen_queries)), None)
        scores = self._subset_scores(arr, metric, idx)
        ties = self.tie_ranks() if idx is None else self.tie_ranks()[idx]
        n = scores.shape[1]
        k = min(k, n)
        out = []
        for row in scores:
            if k < n:  # every row scoring at least the k-th best, ties at the cut included, then the exact order
                kth = row[np.argpartition(-row, k - 1)[k - 1]]
                cand = np.flatnonzero(row >= kth)
            else:
                cand = np.arange(n)
            top = cand[np.lexsort((ties[cand], -row[cand]))][:k]
            out.append((top if idx is None else idx[top], row[top]))
        return out

    def _full(self, arr: np.ndarray, metric: str) -> np.ndarray:
        """Rounded scores of the query vectors against every row (COSINE or IP)."""
        q = as64(arr)
        return round_scores((self._normed_query(q) if metric == "COSINE" else q) @ self._base(metric).T)

    def _subset_scores(self, arr: np.ndarray, metric: str, idx: np.ndarray | None) -> np.ndarray:
        base = self._base(metric)
        sub = base if idx is None else base[idx]
        q = as64(arr)
        if metric == "L2":
            return round_scores(-(((sub[None, :, :] - q[:, None, :]) ** 2).sum(-1)))
        return round_scores((self._normed_query(q) if metric == "COSINE" else q) @ sub.T)

    def _remember(self, key: tuple, full: np.ndarray) -> _KnownQuery:
        """Keep a query's full scores for its next searches (HubLink searches each of a question's ~100 hubs
        with the same vectors: one matrix-vector product per question instead of a gather and a product per
        hub). The same rounded scores as a product over the selected rows (``hublab.scores``: float64 products of
        float32 vectors, rounded to 1e-6), and the same order (rounded score, then ``tie_ranks``)."""
        known = _KnownQuery(full)
        self._known[key] = known
        while len(self._known) > FULL_SCORE_QUERIES:
            self._known.pop(next(iter(self._known)), None)
        return known

    def _normed_query(self, q: np.ndarray) -> np.ndarray:
        """Unit-length query vectors, cached for the last query (HubLab sends the same vectors many times)."""
        key = (q.shape, q.tobytes())
        last = self._last_query  # replaced as one tuple: threads never mix two queries
        if last is not None and last[0] == key:
            return last[1]
        normed = q / np.maximum(np.linalg.norm(q, axis=1, keepdims=True), 1e-12)  # float64 in, float64 out
        self._last_query = (key, normed)
        return normed

    def search(self, vectors: np.ndarray, k: int, clauses, metric: str) -> list[list[tuple[int, float]]]:
        """Per query vector: [(row position, score)] best first (see ``search_arrays``)."""
        return [list(zip(pos.tolist(), sc.tolist(), strict=True))
                for pos, sc in self.search_arrays(vectors, k, clauses, metric)]


class _KnownQuery:
    """A repeated query's rounded scores against every row and (computed on its first search) every row's rank in the
    mirror's order (score descending, then ``tie_ranks``): a filtered top-k is then a partial sort of the
    selected rows' integer ranks, the same list as sorting their (score, tie rank) pairs."""

    def __init__(self, full: np.ndarray) -> None:
        self.full = full
        self._order: np.ndarray | None = None
        self._rank: np.ndarray | None = None

    def top(self, idx: np.ndarray | None, k: int, ties: np.ndarray) -> list[tuple[np.ndarray, np.ndarray]]:
        if self._order is None:
            order = np.stack([np.lexsort((ties, -row)) for row in self.full])
            rank = np.empty_like(order)
            rows = np.arange(order.shape[1])
            for j in range(len(order)):
                rank[j, order[j]] = rows
            self._order, self._rank = order, rank
        out = []
        for j, row in enumerate(self.full):
            if idx is None:
                top = self._order[j, :k]
            else:
                r = self._rank[j, idx]
                if k < len(idx):
                    sel = np.argpartition(r, k - 1)[:k]
                    sel = sel[np.argsort(r[sel])]
                else:
                    sel = np.argsort(r)
                top = idx[sel]
            out.append((top, row[top]))
        return out


def _hashable(v: Any) -> bool:
    try:
        hash(v)
    except TypeError:
        return False
    return True
