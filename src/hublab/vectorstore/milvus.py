"""Milvus vector store through pymilvus ``MilvusClient``: a Milvus Lite ``.db`` file by default, or a
Milvus server/cluster by URI — the same code path for both.

Milvus Lite gotchas handled here: ``flush()`` after inserts (searches before it are ~6x slower; a full server
flushes once at the end of a build instead),
``load_collection()`` before the first search in a process, and one process per ``.db`` file.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import numpy as np

from hublab.errors import HubLabError
from hublab.vectorstore import mirror_cache
from hublab.vectorstore._milvus_collections import create_lite_collection, ensure_server_collection, reconcile_index
from hublab.vectorstore._milvus_mirror import (
    arrays_from_mirror,
    cached_mirror,
    hits_from_mirror,
    mirror_of,
    mirror_search,
    projected,
)
from hublab.vectorstore.base import HitArrays, SearchHit, VectorStore
from hublab.vectorstore.exact import parse_filter
from hublab.vectorstore.index_spec import IndexSpec
from hublab.vectorstore.keyed_rows import KeyedRows
from hublab.vectorstore.lite_damage import load_lite
from hublab.vectorstore.milvus_client import GRPC_OPTIONS as GRPC_OPTIONS  # noqa: F401 (re-exported)
from hublab.vectorstore.milvus_client import _client, check_lite_file, release_client, server_error
from hublab.vectorstore.milvus_native import native_search

#: Searches a caller may overlap on a server (``concurrent_searches``): HubLink's per-hub searches of one question
#: (10 hubs by default) at once. Measured at GV3 ×1 on a 2.3.5 standalone on this 2-core machine: docs/scale.md.
SERVER_SEARCH_THREADS = 8
#: Rows of a collection this process writes that it keeps to seed the exact mirror (``MilvusVectorStore._seed``):
#: past this many the copy is dropped, so a build's memory stops growing with the corpus, and a first search reads
#: the rows back instead. 300,000 covers GV3 ×10's HubLink index (262,600 vectors); about 0.6 GB of 384-d rows.
SEED_MAX_ROWS = 300_000


class MilvusVectorStore(VectorStore):
    """``exact``: ``auto`` searches through the exact in-memory mirror whenever the engine is Milvus Lite (a
    ``.db`` file, or a ``milvus-lite server`` — its version reads ``milvus_lite-…``), whose filtered search is
    truncated (see :mod:`hublab.vectorstore.exact`); a Milvus server or cluster keeps native search.
    ``never`` always searches natively, ``always`` always through the mirror.

    ``exact_max_vectors`` (``auto`` only) is the size switch: a Lite collection with more vectors than that is
    searched natively instead of being mirrored (the mirror holds every vector twice in this process, ~3 KB per
    384-d vector). The price: the Lite engine's native filtered search is approximate (HNSW, filter applied during
    the walk: under a selective filter it can return fewer hits than match, tests/vectorstore/test_size_switch.py)
    and its filter evaluation scans the collection per search; a full Milvus server has neither problem and is the
    store for graphs above the limit (docs/scale.md). ``None`` (default) = no limit.

    ``index`` (a server): the vector index collections are created with and searched by (``index_spec``); a
    collection whose index differs is re-indexed in place (its vectors stay). Native hits are rescored in float64
    and ordered like the mirror's (rounded score, then the row's content), so a FLAT server gives the mirror's
    lists. ``timeout_s`` bounds every server call, retries included (pymilvus retries an unreachable server until
    then): a server that goes away mid-run fails the call with one line naming the URI."""

    def __init__(self, uri: str, *, token: str | None = None, exact: str = "auto",
                 exact_max_vectors: int | None = None, index: IndexSpec | None = None,
                 timeout_s: float | None = 60.0, mirror_cache_dir: Path | None = None) -> None:
        if exact not in ("auto", "always", "never"):
            raise HubLabError(f"vector_store.exact must be auto, always or never, got {exact!r}")
        if exact_max_vectors is not None and int(exact_max_vectors) < 0:
            raise HubLabError(f"vector_store.exact_max_vectors must be >= 0, got {exact_max_vectors!r}")
        self.uri = uri
        self.index = index or IndexSpec()
        self.timeout = None if uri.endswith(".db") else timeout_s
        self._token = token
        # a Lite file's engine starts on first use: a run whose collections all come from valid mirror copies
        # (mirror_cache) never starts it (~0.8 s of pymilvus imports and engine start-up before a first question)
        if uri.endswith(".db"):
            check_lite_file(uri)  # what the engine would refuse, said at once in one line
        self._client_obj = None if uri.endswith(".db") else _client(uri, token, self.timeout)
        self._loaded: set[str] = set()
        self._metric: dict[str, str] = {}
        self.local_file = uri.endswith(".db")
        self.lite = self.local_file or self._server_is_lite()
        self.use_mirror = exact == "always" or (exact == "auto" and self.lite)
        self.exact_max_vectors = None if exact == "always" or exact_max_vectors is None else int(exact_max_vectors)
        self._mirrors: dict[str, object] = {}
        self._row_cache: dict[str, dict[int, tuple]] = {}  # native search: id → (vector, fields, content key)
        self._mirror_rows: dict[str, int] = {}
        #: a Lite file's collections created in this process: what was inserted (ids, vectors, fields), so the first
        #: search builds the mirror from it instead of reading every row back through gRPC (~1.3 s per DiFaR corpus)
        self._seed: dict[str, tuple[list[np.ndarray], list[np.ndarray], list[dict[str, Any]]]] = {}
        self._save_on_close: dict[str, Any] = {}  # exact.Mirror of collections this process wrote (mirror_cache)
        self._too_big: dict[str, bool] = {}  # collection → above exact_max_vectors (decided once per content)
        self._unflushed: set[str] = set()  # a full server's collections written since their last flush
        #: a full server: searches pinned to one key value answered exactly from that value's rows
        self._keyed = None if self.lite else KeyedRows(self)
        #: where a Lite file's mirrors are kept between processes (:mod:`hublab.vectorstore.mirror_cache`)
        self.mirror_cache_dir = Path(mirror_cache_dir) if mirror_cache_dir is not None and self.local_file else None

    @property
    def client(self):
        """The pymilvus client (for a Lite file: its engine started now, on first use)."""
        if self._client_obj is None:
            if self.local_file:  # created with the engine, not before: a method that keeps no index (BM25) leaves
                Path(self.uri).parent.mkdir(parents=True, exist_ok=True)  # no empty models/<graph>__<method>/
            self._client_obj = _client(self.uri, self._token, self.timeout)
        return self._client_obj

    # ---------------- size switch (exact mirror vs. native search) ----------------
    def mirrors(self, name: str) -> bool:
        """Whether searches on ``name`` go through the exact mirror: ``use_mirror`` and, with
        ``exact_max_vectors``, a collection no larger than that (re-decided after inserts/deletes)."""
        if not self.use_mirror:
            return False
        if self.exact_max_vectors is None:
            return True
        if name not in self._too_big:
            n = self.count(name)
            self._too_big[name] = n > self.exact_max_vectors
            if self._too_big[name]:
                import logging

                logging.getLogger(__name__).warning(
                    "%s: %d vectors > exact_max_vectors %d: native Milvus Lite search (no in-memory mirror; filtered"
                    " searches are approximate on the Lite engine, use a Milvus server for exact ones)",
                    name, n, self.exact_max_vectors)
        return not self._too_big[name]

    def concurrent_searches(self, name: str) -> int:
        """``SERVER_SEARCH_THREADS`` for natively searched collections on a server (each search is a gRPC round
        trip of ~10 ms on 2.3.5, mostly waiting); 1 for a Lite file and for mirrored collections (in-process)."""
        return 1 if self.local_file or self.mirrors(name) else SERVER_SEARCH_THREADS

    def _changed(self, name: str) -> None:
        self._save_on_close.pop(name, None)
        if self._keyed is not None:
            self._keyed.forget(name)
        self._row_cache.pop(name, None)
        self._mirrors.pop(name, None)
        self._too_big.pop(name, None)

    def _server_is_lite(self) -> bool:
        try:
            return str(self.client.get_server_version(timeout=self.timeout)).startswith("milvus_lite")
        except Exception:  # noqa: BLE001 - a server that cannot say is treated as a full Milvus
            return False

    def ensure_collection(self, name: str, dim: int, metric: str = "COSINE", *, keys: tuple[str, ...] = ()) -> None:
        """``keys`` become indexed VARCHAR columns on a server (``_milvus_collections.ensure_server_collection``); a
        Lite file keeps every field dynamic (its searches go through the exact mirror, and its bytes stay as they
        were)."""
        metric = metric.upper()
        if self.local_file:  # Milvus Lite file
            if not self.client.has_collection(name):
                create_lite_collection(self, name, dim, metric)
                self._seed[name] = ([], [], [])
        else:
            self._server_call(ensure_server_collection, self, name, dim, metric, tuple(keys),
                              doing=f"creating collection {name}")
        self._metric[name] = metric

    def _read_level(self) -> dict[str, str]:
        """Session consistency named on every server read: Milvus 2.3.5 answered a search that left the level to the
        collection's default ~15x slower (~200 ms, like Strong) than one naming Session (14 ms), measured."""
        return {} if self.local_file else {"consistency_level": "Session"}

    def _server_call(self, fn, *args, doing: str, **kwargs):
        """``fn`` with pymilvus errors turned into one line naming the URI (``HubLabError``s pass through)."""
        if self.local_file:
            return fn(*args, **kwargs)
        try:
            return fn(*args, **kwargs)
        except HubLabError:
            raise
        except Exception as exc:  # pymilvus raises MilvusException and grpc errors
            raise server_error(self.uri, exc, doing) from None

    def has_collection(self, name: str) -> bool:
        if self.local_file and (name in self._mirrors or cached_mirror(self, name)):
            return True  # a Lite file has one process, this one: only our own drop_collection removes it
        return bool(self._server_call(self.client.has_collection, name, timeout=self.timeout,
                                      doing=f"looking up collection {name}"))

    def drop_collection(self, name: str) -> None:
        if self.has_collection(name):
            self._server_call(self.client.drop_collection, name, timeout=self.timeout,
                              doing=f"dropping collection {name}")
        self._loaded.discard(name)
        self._unflushed.discard(name)
        self._changed(name)
        self._seed.pop(name, None)
        if self.mirror_cache_dir is not None:
            mirror_cache.forget(self.mirror_cache_dir, Path(self.uri), name)

    def _mirror(self, name: str):
        """Lazy in-memory copy (ids, vectors, fields) of a collection for exact search
        (:func:`hublab.vectorstore._milvus_mirror.mirror_of`)."""
        return mirror_of(self, name)

    def _read_rows(self, name: str) -> list[dict[str, Any]]:
        """Every row of ``name`` through the query iterator, vectors as float32 arrays (``strict_float32``: one
        array per batch, ~30 % faster than Python float lists)."""
        self._ensure_loaded(name)
        it = self.client.query_iterator(name, batch_size=4000, filter="", output_fields=["*"], strict_float32=True)
        rows: list[dict[str, Any]] = []
        while True:
            batch = it.next()
            if not batch:
                break
            rows.extend(batch)
        it.close()
        return rows

    def insert(self, name: str, vectors: np.ndarray, rows: list[dict[str, Any]]) -> None:
        if len(rows) != len(vectors):
            raise ValueError("vectors and rows differ in length")
        batch = 2000
        for i in range(0, len(rows), batch):
            data = [dict(r, vector=np.asarray(v, dtype=np.float32).tolist())
                    for r, v in zip(rows[i : i + batch], vectors[i : i + batch], strict=True)]
            done = self._server_call(self.client.insert, name, data, timeout=self.timeout,
                                     doing=f"inserting into {name}")
            seed = self._seed.get(name)
            if seed is not None:
                ids = list((done or {}).get("ids") or [])
                if len(ids) != len(data) or sum(map(len, seed[0])) + len(ids) > SEED_MAX_ROWS:
                    self._seed.pop(name)  # which id is which row is unknown, or the copy is too large: read back
                else:
                    seed[0].append(np.asarray(ids, dtype=np.int64))
                    seed[1].append(np.asarray(vectors[i : i + batch], dtype=np.float32))
                    seed[2].extend({"id": int(pk), **r} for pk, r in zip(ids, rows[i : i + batch], strict=True))
        self._written(name)

    def _written(self, name: str) -> None:
        """After an insert or delete: a Lite engine flushes at once (its searches before a flush are ~6x slower, and
        its files are DVC outputs whose bytes depend on when segments are sealed). A full server defers the flush to
        :meth:`flush`: the write is durable once acknowledged (the server's log), Session reads see it, and each
        flush seals a segment the server then indexes, which made a build flushing per 1,024 rows 18x slower than one
        flush at its end (docs/scale.md)."""
        if self.lite:
            self._server_call(self.client.flush, name, timeout=self.timeout, doing=f"flushing {name}")
        else:
            self._unflushed.add(name)
        self._changed(name)

    def flush(self, name: str) -> None:
        """Seal what was written to ``name`` since the last flush (a full server; a Lite engine flushed already)."""
        if name in self._unflushed:
            self._server_call(self.client.flush, name, timeout=self.timeout, doing=f"flushing {name}")
            self._unflushed.discard(name)

    def _ensure_loaded(self, name: str) -> None:
        if name not in self._loaded:
            if not self.local_file:
                self._server_call(reconcile_index, self, name, None, doing=f"checking the index of {name}")
            if name in self._loaded:  # re-indexed and loaded
                return
            if self.local_file:
                self._load_lite(name)
            else:
                self._server_call(self.client.load_collection, name, timeout=self.timeout,
                                  doing=f"loading collection {name}")
            self._loaded.add(name)

    def _load_lite(self, name: str) -> None:
        """A Lite collection loaded, torn index sidecars repaired, or one line naming a damaged index
        (:func:`hublab.vectorstore.lite_damage.load_lite`)."""
        load_lite(self.client, self.uri, name)

    def _metric_of(self, name: str) -> str:
        """The collection's metric, as its index says (native hits are rescored with it). A collection without an
        index is COSINE, the store's default; a failed look-up is a server error, not a silent default."""
        if name not in self._metric:
            desc = self._server_call(self.client.describe_index, name, "vector", timeout=self.timeout,
                                     doing=f"describing the index of {name}")
            if not desc:
                return "COSINE"  # not cached: an index created later may say otherwise
            self._metric[name] = str(desc.get("metric_type", "COSINE")).upper()
        return self._metric[name]

    def scores_any_metric(self) -> bool:
        """Every search goes through the exact mirror (Lite, no size switch): scored here with any metric."""
        return self.use_mirror and self.exact_max_vectors is None

    def _native_metric(self, name: str, metric: str | None) -> None:
        """A native search scores with the collection's index: another metric is refused, never silently ignored."""
        if metric is not None and metric.upper() != self._metric_of(name):
            raise HubLabError(f"collection {name} is indexed for {self._metric_of(name)}; a search with "
                              f"{metric.upper()} needs its own collection on this store")

    def search(self, name, vectors, k, *, filter="", output_fields=None, metric=None) -> list[list[SearchHit]]:
        if k <= 0 or len(vectors) == 0:
            return [[] for _ in range(len(vectors))]
        found = mirror_search(self, name, vectors, k, filter, metric)
        if found is not None:
            return hits_from_mirror(*found)
        self._native_metric(name, metric)
        return self._native_search(name, vectors, int(k), filter or "")

    def _native_search(self, name: str, vectors, k: int, filter: str) -> list[list[SearchHit]]:
        """Native search, ordered like the mirror (:func:`hublab.vectorstore.milvus_native.native_search`)."""
        return native_search(self, name, vectors, k, filter)

    def search_arrays(self, name, vectors, k, *, filter="", output_fields, metric=None) -> list[HitArrays]:
        """Through the mirror: positions → ids, scores and the requested field columns by fancy indexing (no
        object per hit); natively: ``search``'s hits turned into columns."""
        if k > 0 and len(vectors) > 0:
            found = mirror_search(self, name, vectors, k, filter, metric)
            if found is not None:
                return arrays_from_mirror(*found, output_fields)
        return super().search_arrays(name, vectors, k, filter=filter, output_fields=output_fields, metric=metric)

    def prefetch(self, name: str, field: str, values: list[Any]) -> None:
        """On a full server: the rows of every value not cached yet in one request
        (:meth:`hublab.vectorstore.keyed_rows.KeyedRows.prefetch`); nothing for a Lite engine (its mirror holds every
        row)."""
        if self._keyed is not None and values and not self.mirrors(name):
            self._ensure_loaded(name)
            self._keyed.prefetch(name, field, list(values))

    def query(self, name, *, filter, output_fields=None, limit=16384) -> list[dict[str, Any]]:
        """Rows matching ``filter`` (no vectors), at most ``limit``. A collection whose mirror is in memory answers
        from it (HubLink's path records: ~0.3 s through Lite's gRPC for GV3, milliseconds here); which rows a
        query over the limit returns is unspecified either way (callers split such queries)."""
        mirror = self._mirrors.get(name) if self.local_file else None  # a server's rows may change under us
        clauses = parse_filter(filter) if mirror is not None else None
        if mirror is not None and clauses is not None:
            pos = mirror.positions(clauses) if clauses else np.arange(len(mirror.ids))
            return projected([mirror.fields[p] for p in pos[: max(int(limit), 0)].tolist()], output_fields)
        if self._keyed is not None and not self.mirrors(name) and (clauses := parse_filter(filter)) is not None:
            cached = self._keyed.query(name, clauses, limit)
            if cached is not None:  # every value the filter pins has its rows here (HubLink's path records)
                return projected(cached, output_fields)
        self._ensure_loaded(name)
        rows = self._server_call(self.client.query, name, filter=filter, output_fields=output_fields or ["*"],
                                 limit=limit, timeout=self.timeout, doing=f"querying {name}", **self._read_level())
        return [{k: v for k, v in r.items() if k != "vector"} for r in rows]

    def delete(self, name, *, filter) -> None:
        self._server_call(self.client.delete, name, filter=filter, timeout=self.timeout,
                          doing=f"deleting from {name}")
        self._written(name)
        self._seed.pop(name, None)  # the inserted rows are no longer the collection's

    def count(self, name: str) -> int:
        if self.local_file and name in self._mirrors:  # a Lite file's mirror is its collection (dropped on change)
            return self._mirror_rows[name]
        self._ensure_loaded(name)
        res = self._server_call(self.client.query, name, filter="", output_fields=["count(*)"],
                                timeout=self.timeout, doing=f"counting {name}", **self._read_level())
        return int(res[0]["count(*)"]) if res else 0

    def close(self) -> None:
        """For a Milvus Lite file: stop this process's embedded server for it, which waits for the engine's
        background work (segment compaction, index sidecars), so the files on disk are final (what DVC hashes).
        Ends every use of the file in this process; a later store for it starts the server again. A server store:
        what this process wrote and did not flush yet is flushed (the client is shared per URI and token)."""
        if not self.local_file:
            for name in sorted(self._unflushed):
                self.flush(name)
            return
        release_client(self.uri)
        if "milvus_lite" in sys.modules:  # else no engine was started in this process
            from milvus_lite import server_manager_instance

            server_manager_instance.release_server(self.uri)
        # the files are final now: a copy stamped earlier could miss the engine's last compaction (a flaky cache
        # miss under load, read back through gRPC in the next process)
        for name, mirror in sorted(self._save_on_close.items()):
            if self.mirror_cache_dir is not None:
                mirror_cache.save(self.mirror_cache_dir, Path(self.uri), name, mirror.ids, mirror.matrix,
                                  mirror.fields, self._metric.get(name))
        self._save_on_close.clear()
        self._mirrors.clear()
        self._loaded.clear()
