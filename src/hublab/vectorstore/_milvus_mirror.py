"""The exact in-memory mirror of a :class:`~hublab.vectorstore.milvus.MilvusVectorStore`'s collections: built from
what this process inserted, from its copy in the mirror cache, or from the rows read back; searched for a whole
collection (Lite) or for the rows of the key value a filter pins (a full server, :mod:`~.keyed_rows`)."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from hublab.vectorstore import mirror_cache
from hublab.vectorstore.base import HitArrays, SearchHit
from hublab.vectorstore.exact import Mirror, parse_filter

if TYPE_CHECKING:
    from hublab.vectorstore.milvus import MilvusVectorStore


def mirror_of(store: MilvusVectorStore, name: str) -> Mirror:
    """Lazy in-memory copy (ids, vectors, fields) of a Milvus Lite collection for exact search."""
    if name in store._mirrors and not store.local_file and store.count(name) != store._mirror_rows.get(name):
        store._mirrors.pop(name)  # a shared server: another process changed the collection
    if name not in store._mirrors:
        logging.getLogger("pymilvus").setLevel(logging.ERROR)  # mvccTs notice of Milvus Lite iterators
        if cached_mirror(store, name):
            return store._mirrors[name]
        seed = store._seed.pop(name, None) if store.local_file else None
        if seed is not None and seed[0]:
            ids = np.concatenate(seed[0]).astype(np.int64)
            order = np.argsort(ids, kind="stable")  # primary-key order, as the query iterator returns rows
            built = Mirror.from_arrays(ids[order], np.vstack(seed[1])[order], [seed[2][i] for i in order.tolist()])
            if store.mirror_cache_dir is not None:  # saved by close(): this process wrote the files, and the
                store._save_on_close[name] = built  # engine's background work may still change them until then
        else:
            built = Mirror(store._read_rows(name))
            if store.mirror_cache_dir is not None:
                store._metric_of(name)
                mirror_cache.save(store.mirror_cache_dir, Path(store.uri), name, built.ids, built.matrix,
                                  built.fields, store._metric.get(name))
        store._mirrors[name] = built
        store._mirror_rows[name] = len(built.ids)
    return store._mirrors[name]


def cached_mirror(store: MilvusVectorStore, name: str) -> bool:
    """Whether ``name``'s mirror now comes from its copy in ``mirror_cache_dir`` (valid for the collection's
    current files and naming its metric: nothing then needs the Lite engine); not for a collection this process
    is writing."""
    if store.mirror_cache_dir is None or name in store._seed:
        return False
    cached = mirror_cache.load(store.mirror_cache_dir, Path(store.uri), name)
    if cached is None or cached[3] is None:
        return False
    ids, matrix, fields, metric = cached
    store._mirrors[name] = Mirror.from_arrays(ids, matrix, fields)
    store._mirror_rows[name] = len(ids)
    store._metric.setdefault(name, metric)
    return True


def mirror_search(store: MilvusVectorStore, name: str, vectors, k, filter, metric=None):
    """(mirror, [(row positions, scores)] per vector) when an exact mirror answers this search, else None: the
    collection's (Lite), or on a full server the rows of the key value the filter pins
    (:mod:`hublab.vectorstore.keyed_rows`)."""
    mirrored = store.mirrors(name)
    if not mirrored and store._keyed is None:
        return None
    clauses = parse_filter(filter)
    if clauses is None:
        return None
    if mirrored:
        found = store._mirror(name)
    else:
        store._ensure_loaded(name)
        found = store._keyed.mirror_for(name, clauses)
        if found is None:
            return None
    return found, found.search_arrays(np.asarray(vectors), int(k), clauses,
                                      (metric or store._metric_of(name)).upper())


def hits_from_mirror(mirror, results) -> list[list[SearchHit]]:
    """Hits share the mirror's field dicts (read-only for callers; a superset of the output fields): no dict
    is built per hit."""
    ids, fields = mirror.ids, mirror.fields
    return [[SearchHit(int(ids[p]), score, fields[p]) for p, score in zip(pos.tolist(), sc.tolist(), strict=True)]
            for pos, sc in results]


def arrays_from_mirror(mirror, results, output_fields) -> list[HitArrays]:
    """Positions → ids, scores and the requested field columns by fancy indexing (no object per hit)."""
    pos = np.concatenate([p for p, _ in results]) if results else np.zeros(0, np.int64)
    cols = {f: mirror.column(f)[pos].tolist() for f in output_fields}  # one gather per field
    out, start = [], 0
    for p, scores in results:
        end = start + len(p)
        out.append(HitArrays(mirror.ids[p], scores, {f: c[start:end] for f, c in cols.items()}))
        start = end
    return out


def projected(rows: list[dict[str, Any]], output_fields: list[str] | None) -> list[dict[str, Any]]:
    """Copies of in-memory rows with the fields a server query would return (Milvus adds the primary key)."""
    if output_fields and "*" not in output_fields:
        return [{f: r[f] for f in ("id", *output_fields) if f in r} for r in rows]
    return [dict(r) for r in rows]
