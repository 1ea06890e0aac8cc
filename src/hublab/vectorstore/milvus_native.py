"""Native search on a Milvus server (or a Lite collection too large to mirror), ordered like the exact mirror:
float32 hits from the server are rescored in float64 from their vectors, rounded, and tie-broken by content, so
FLAT gives the mirror's list. Functions of a :class:`~hublab.vectorstore.milvus.MilvusVectorStore` (its client,
timeouts, read level and row cache)."""

from __future__ import annotations

from typing import Any

import numpy as np

from hublab.scores import as64, round_scores
from hublab.vectorstore.base import SearchHit

# Scores that Milvus returns as distances (smaller = closer) are negated so higher is always better.
_DISTANCE_METRICS = {"L2"}
#: Milvus's largest search limit (topk), the same in 2.3 and 2.4/2.5.
MAX_TOPK = 16384
#: Native hits are rescored in float64; the server's float32 scores differ from those by less than this, so a
#: fetched hit scoring below (cut - this) proves every row tied with the cut was fetched.
_F32_SLACK = 1e-5
#: Hits the first request of a native search asks for at least (ids and scores only: a few KB).
FIRST_LIMIT = 256
#: Rows (vector + fields) a server store keeps per collection for rescoring native hits (~2 KB each).
_ROW_CACHE_MAX = 200_000


def content_key(fields: dict[str, Any]) -> tuple:
    """The tie-break key of a row by content: the exact mirror's (``Mirror.tie_ranks``) for one row."""
    from hublab.vectorstore.exact import VOLATILE_FIELDS

    return tuple(sorted((k, repr(v)) for k, v in fields.items() if k not in VOLATILE_FIELDS and k != "vector"))


def rescore(query: np.ndarray, vectors: np.ndarray, metric: str) -> np.ndarray:
    """Scores of ``vectors`` for one query as the exact mirror computes them (float64, rounded; L2 negated)."""
    q, v = as64(query)[0], as64(vectors)
    if metric == "L2":
        return round_scores(-((v - q) ** 2).sum(axis=1))
    if metric == "COSINE":
        q = q / max(float(np.linalg.norm(q)), 1e-12)
        v = v / np.maximum(np.linalg.norm(v, axis=1, keepdims=True), 1e-12)
    return round_scores(v @ q)


def native_search(store: Any, name: str, vectors, k: int, filter: str) -> list[list[SearchHit]]:
    """Native search, ordered like the mirror: the server finds the hits (ids and float32 scores only), those
    that can be in the top k (scoring at least the k-th minus the float32 slack) are rescored in float64 from
    their vectors (``rescore``), rounded, and sorted by score then content (``content_key``). The server is
    asked for more than ``k`` hits, and again for more while the last one could still tie with the k-th (many
    HubLink rows share a text, so ties at the cut are common): the k kept are the exact top k of what the index
    finds, in a portable order. On FLAT that is the mirror's list.

    Vectors and fields come from a per-collection row cache filled by id (``_rows``, kept on the store): HubLink
    searches the same hubs again and again, and shipping every hit's 384 floats through pymilvus per search cost
    seconds."""
    store._ensure_loaded(name)
    metric = store._metric_of(name)
    sign = -1.0 if metric in _DISTANCE_METRICS else 1.0
    queries = np.asarray(vectors, dtype=np.float32)
    found: list[list[tuple[int, float]] | None] = [None] * len(queries)
    pending = list(range(len(queries)))
    # the first request already reaches past most tie groups: a replicated graph (bench_scale ×100) repeats every
    # text 100 times, and each retry is another scan of the index's probed lists, where more hits cost ~nothing
    limit = min(max(2 * k, k + 16, FIRST_LIMIT), MAX_TOPK)
    while pending:
        res = store._server_call(
            store.client.search, name, data=[queries[i].tolist() for i in pending], filter=filter, limit=limit,
            output_fields=[], search_params=store.index.search_params(limit), timeout=store.timeout,
            doing=f"searching {name}", **store._read_level())
        retry = []
        for i, hits in zip(pending, res, strict=True):
            got = sorted(((int(h["id"]), sign * float(h["distance"])) for h in hits), key=lambda x: (-x[1], x[0]))
            if len(got) >= limit and limit < MAX_TOPK and got[-1][1] >= got[k - 1][1] - 2 * _F32_SLACK:
                retry.append(i)  # the k-th score's ties may reach past what was fetched
            else:
                cut = got[k - 1][1] - 2 * _F32_SLACK if len(got) >= k else -np.inf
                found[i] = [x for x in got if x[1] >= cut]
        pending, limit = retry, min(4 * limit, MAX_TOPK)
    rows = _rows(store, name, {hid for hits in found for hid, _ in hits or ()})
    out = []
    for i, hits in enumerate(found):
        ids = [hid for hid, _ in hits or () if hid in rows]
        if not ids:
            out.append([])
            continue
        scores = rescore(queries[i : i + 1], np.stack([rows[h][0] for h in ids]), metric)
        order = sorted(range(len(ids)), key=lambda j: (-scores[j], rows[ids[j]][2], ids[j]))[:k]
        out.append([SearchHit(ids[j], float(scores[j]), rows[ids[j]][1]) for j in order])
    return out

def _rows(store: Any, name: str, ids: set[int]) -> dict[int, tuple[np.ndarray, dict[str, Any], tuple]]:
    """id → (vector, fields, content key) for ``ids``, fetched by id for those not cached yet. The cache holds at
    most ``_ROW_CACHE_MAX`` rows per collection (emptied when full) and is dropped when this process changes
    the collection. Safe from concurrent searches (``concurrent_searches``): the answer is built from the rows
    this call found or fetched, never re-read from a cache another thread may have emptied meanwhile."""
    cache = store._row_cache.setdefault(name, {})
    out = {i: row for i in ids if (row := cache.get(i)) is not None}
    missing = sorted(ids - out.keys())
    if len(cache) + len(missing) > _ROW_CACHE_MAX:
        cache.clear()
    for start in range(0, len(missing), 4000):
        chunk = missing[start : start + 4000]
        got = store._server_call(store.client.query, name, filter=f"id in {chunk}", output_fields=["*", "vector"],
                                limit=len(chunk), timeout=store.timeout, doing=f"fetching rows of {name}",
                                **store._read_level())
        for r in got:
            fields = {key: v for key, v in r.items() if key != "vector"}
            row = (np.asarray(r["vector"], dtype=np.float32), fields, content_key(fields))
            out[int(r["id"])] = cache[int(r["id"])] = row
    return out
