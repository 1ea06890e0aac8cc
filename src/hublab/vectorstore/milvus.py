"""Milvus vector store through pymilvus ``MilvusClient``: a Milvus Lite ``.db`` file by default, or a
Milvus server/cluster by URI — the same code path for both.

Milvus Lite gotchas handled here: ``flush()`` after inserts (searches before it are ~6x slower),
``load_collection()`` before the first search in a process, and one process per ``.db`` file.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import numpy as np

from hublab.errors import HubLabError, InputError
from hublab.vectorstore import mirror_cache
from hublab.vectorstore.base import DamagedIndex, HitArrays, SearchHit, VectorStore
from hublab.vectorstore.exact import parse_filter
from hublab.vectorstore.index_spec import IndexSpec
from hublab.vectorstore.keyed_rows import KeyedRows
from hublab.vectorstore.lite_damage import damaged_message, torn_sidecars
from hublab.vectorstore.milvus_client import GRPC_OPTIONS as GRPC_OPTIONS  # noqa: F401 (re-exported)
from hublab.vectorstore.milvus_client import _client, check_lite_file, release_client, server_error
from hublab.vectorstore.milvus_native import native_search

#: Searches a caller may overlap on a server (``concurrent_searches``): HubLink's per-hub searches of one question
#: (10 hubs by default) at once. Measured at GV3 ×1 on a 2.3.5 standalone on this 2-core machine: docs/scale.md.
SERVER_SEARCH_THREADS = 8
#: Key columns (``ensure_collection(keys=…)``) on a server: VARCHAR of at most this many characters, with this
#: scalar index (MARISA trie: exact and ``in`` lookups; Milvus 2.3 and later).
KEY_MAX_LEN = 512
KEY_INDEX = "Trie"


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
        """``keys`` become indexed VARCHAR columns on a server (``_ensure_server_collection``); a Lite file keeps
        every field dynamic (its searches go through the exact mirror, and its bytes stay as they were)."""
        metric = metric.upper()
        if self.local_file:  # Milvus Lite file
            if not self.client.has_collection(name):
                self._create_lite_collection(name, dim, metric)
                self._seed[name] = ([], [], [])
        else:
            self._server_call(self._ensure_server_collection, name, dim, metric, tuple(keys),
                              doing=f"creating collection {name}")
        self._metric[name] = metric

    def _create_lite_collection(self, name: str, dim: int, metric: str) -> None:
        """A Lite file's collection. Searched only through the exact mirror (``exact: auto``/``always`` without
        ``exact_max_vectors``), it gets a FLAT index: with quick setup's AUTOINDEX the Lite engine builds a FAISS HNSW
        index per segment in a background thread after every flush, an index no search here uses, and that build
        (with FAISS's OpenMP threads) went on burning both cores into the first questions after an in-process index
        build (``bench/bench_hublink.py``: CPU time per question above wall time). A collection that may be
        searched natively keeps quick setup's AUTOINDEX."""
        if not (self.use_mirror and self.exact_max_vectors is None):
            self.client.create_collection(name, dimension=dim, metric_type=metric, auto_id=True,
                                          enable_dynamic_field=True)
            return
        from pymilvus import DataType

        schema = self.client.create_schema(auto_id=True, enable_dynamic_field=True)
        schema.add_field("id", DataType.INT64, is_primary=True)
        schema.add_field("vector", DataType.FLOAT_VECTOR, dim=dim)
        params = self.client.prepare_index_params()
        params.add_index("vector", index_type="FLAT", metric_type=metric)
        self.client.create_collection(name, schema=schema, index_params=params)
        self.client.load_collection(name)
        self._loaded.add(name)

    def _index_params(self, metric: str, keys: tuple[str, ...] = ()):
        params = self.client.prepare_index_params()
        params.add_index("vector", index_type=self.index.type, metric_type=metric, params=dict(self.index.build))
        for key in keys:
            params.add_index(key, index_type=KEY_INDEX)
        return params

    def _ensure_server_collection(self, name: str, dim: int, metric: str, keys: tuple[str, ...] = ()) -> None:
        """Create ``name`` with this store's index and Session consistency, or re-index an existing collection whose
        index differs. ``keys``: VARCHAR columns with a ``KEY_INDEX`` index instead of dynamic (JSON) fields: a
        filter on a dynamic field parses every row's JSON per search (measured on 2.3.5, 262,000 rows, FLAT: 68 ms
        per ``hub_root == …`` search, a VARCHAR column 49 ms, with the index 23 ms; docs/scale-out.md). A collection
        created before keeps its dynamic fields (filters give the same rows, only slower).
        Session: a search sees every insert this client made before it (pymilvus's quick setup uses
        Bounded, whose searches may miss the last seconds' inserts); Strong would also see other clients' inserts
        but waits for the server's next time tick on every search (measured on 2.3.5: 244 ms per search vs. 18 ms
        Session, 14 ms Bounded; HubLink makes dozens of searches per question)."""
        from pymilvus import DataType

        t = self.timeout
        if not self.client.has_collection(name, timeout=t):
            schema = self.client.create_schema(auto_id=True, enable_dynamic_field=True)
            schema.add_field("id", DataType.INT64, is_primary=True)
            schema.add_field("vector", DataType.FLOAT_VECTOR, dim=dim)
            for key in keys:
                schema.add_field(key, DataType.VARCHAR, max_length=KEY_MAX_LEN)
            try:
                self.client.create_collection(name, schema=schema, index_params=self._index_params(metric, keys),
                                              consistency_level="Session", timeout=t)
            except Exception as exc:
                if "index" not in str(getattr(exc, "message", exc)).lower():
                    raise  # not a refused index (a lost server, ...): _server_call names the URI
                # Milvus 2.3.5 creates the collection before it refuses the index: do not leave it without one
                if self.client.has_collection(name, timeout=t):
                    self.client.drop_collection(name, timeout=t)
                raise InputError(f"the Milvus server at {self.uri} refused a {self.index.type} index "
                                 f"{self.index.as_dict()}: {getattr(exc, 'message', exc)}",
                                 field="vector_store.index") from None
            self.client.load_collection(name, timeout=t)
            self._loaded.add(name)
            return
        self._reconcile_index(name, metric)

    def _reconcile_index(self, name: str, metric: str | None) -> None:
        """Rebuild ``name``'s vector index in place when it differs from ``vector_store.index`` (the vectors stay;
        a pipeline that changes only the index needs no new embeddings). Checked when a collection is ensured and
        when it is first loaded in this process (an index built earlier, then searched with other settings)."""
        if self.lite:  # the Lite engine behind a URI keeps its own index
            return
        t = self.timeout
        # pymilvus answers None for a collection without an index; anything else that fails is the server's error
        have = self._server_call(self.client.describe_index, name, "vector", timeout=t,
                                 doing=f"checking the index of {name}") or {}
        metric = metric or str(have.get("metric_type") or "COSINE").upper()
        if not self._index_matches(have, metric):
            import logging

            logging.getLogger(__name__).warning("%s on %s: index %s differs from vector_store.index %s: re-indexing "
                                                "in place", name, self.uri, have.get("index_type"),
                                                self.index.as_dict())
            if have:
                self.client.release_collection(name, timeout=t)
                self.client.drop_index(name, str(have.get("index_name") or "vector"), timeout=t)
            self.client.create_index(name, self._index_params(metric), timeout=t)
            self.client.load_collection(name, timeout=t)
            self._loaded.add(name)

    def _index_matches(self, desc: dict[str, Any], metric: str) -> bool:
        if not desc:
            return False
        if str(desc.get("index_type", "")).upper() != self.index.type:
            return False
        if str(desc.get("metric_type", metric)).upper() != metric:
            return False
        return all(str(desc.get(k)) == str(v) for k, v in self.index.build.items())

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
        if self.local_file and (name in self._mirrors or self._cached_mirror(name)):
            return True  # a Lite file has one process, this one: only our own drop_collection removes it
        return bool(self._server_call(self.client.has_collection, name, timeout=self.timeout,
                                      doing=f"looking up collection {name}"))

    def drop_collection(self, name: str) -> None:
        if self.has_collection(name):
            self._server_call(self.client.drop_collection, name, timeout=self.timeout,
                              doing=f"dropping collection {name}")
        self._loaded.discard(name)
        self._changed(name)
        self._seed.pop(name, None)
        if self.mirror_cache_dir is not None:
            mirror_cache.forget(self.mirror_cache_dir, Path(self.uri), name)

    def _mirror(self, name: str):
        """Lazy in-memory copy (ids, vectors, fields) of a Milvus Lite collection for exact search."""
        from hublab.vectorstore.exact import Mirror

        if name in self._mirrors and not self.local_file and self.count(name) != self._mirror_rows.get(name):
            self._mirrors.pop(name)  # a shared server: another process changed the collection
        if name not in self._mirrors:
            import logging

            logging.getLogger("pymilvus").setLevel(logging.ERROR)  # mvccTs notice of Milvus Lite iterators
            if self._cached_mirror(name):
                return self._mirrors[name]
            seed = self._seed.pop(name, None) if self.local_file else None
            if seed is not None and seed[0]:
                ids = np.concatenate(seed[0]).astype(np.int64)
                order = np.argsort(ids, kind="stable")  # primary-key order, as the query iterator returns rows
                mirror = Mirror.from_arrays(ids[order], np.vstack(seed[1])[order],
                                            [seed[2][i] for i in order.tolist()])
                if self.mirror_cache_dir is not None:  # saved by close(): this process wrote the files, and the
                    self._save_on_close[name] = mirror  # engine's background work may still change them until then
            else:
                mirror = Mirror(self._read_rows(name))
                if self.mirror_cache_dir is not None:
                    self._metric_of(name)
                    mirror_cache.save(self.mirror_cache_dir, Path(self.uri), name, mirror.ids, mirror.matrix,
                                      mirror.fields, self._metric.get(name))
            self._mirrors[name] = mirror
            self._mirror_rows[name] = len(mirror.ids)
        return self._mirrors[name]

    def _cached_mirror(self, name: str) -> bool:
        """Whether ``name``'s mirror now comes from its copy in ``mirror_cache_dir`` (valid for the collection's
        current files and naming its metric: nothing then needs the Lite engine); not for a collection this process
        is writing."""
        if self.mirror_cache_dir is None or name in self._seed:
            return False
        cached = mirror_cache.load(self.mirror_cache_dir, Path(self.uri), name)
        if cached is None or cached[3] is None:
            return False
        from hublab.vectorstore.exact import Mirror

        ids, matrix, fields, metric = cached
        self._mirrors[name] = Mirror.from_arrays(ids, matrix, fields)
        self._mirror_rows[name] = len(ids)
        self._metric.setdefault(name, metric)
        return True

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
                if len(ids) != len(data):  # cannot tell which id is which row: read the rows back instead
                    self._seed.pop(name)
                else:
                    seed[0].append(np.asarray(ids, dtype=np.int64))
                    seed[1].append(np.asarray(vectors[i : i + batch], dtype=np.float32))
                    seed[2].extend({"id": int(pk), **r} for pk, r in zip(ids, rows[i : i + batch], strict=True))
        self._server_call(self.client.flush, name, timeout=self.timeout, doing=f"flushing {name}")
        self._changed(name)

    def _ensure_loaded(self, name: str) -> None:
        if name not in self._loaded:
            if not self.local_file:
                self._server_call(self._reconcile_index, name, None, doing=f"checking the index of {name}")
            if name in self._loaded:  # re-indexed and loaded
                return
            if self.local_file:
                self._load_lite(name)
            else:
                self._server_call(self.client.load_collection, name, timeout=self.timeout,
                                  doing=f"loading collection {name}")
            self._loaded.add(name)

    def _load_lite(self, name: str) -> None:
        """Loading is where the Lite engine finds what its files cannot show from outside: one line naming the index
        and how to rebuild it, not pymilvus's traceback. Except for index sidecars it cannot read (``torn_sidecars``:
        derived data, torn by a process killed while the engine wrote them): those are removed with one warning and
        the load tried once more, the engine building them again from the collection's data files (which, like its
        manifest and WAL, are never touched here)."""
        try:
            self.client.load_collection(name)
            return
        except Exception as exc:  # noqa: BLE001 - pymilvus's MilvusException, whatever the engine found
            failed = exc
        torn = torn_sidecars(Path(self.uri), name)
        if torn:
            import logging

            for path in torn:
                path.unlink(missing_ok=True)
            logging.getLogger(__name__).warning(
                "warning: collection %s: removed %d torn index sidecar file(s) of the Milvus Lite index %s (empty or "
                "cut short; derived data, which the engine builds again from the collection's data files): %s",
                name, len(torn), self.uri, ", ".join(map(str, torn)))
            try:
                self.client.load_collection(name)
                return
            except Exception as exc:  # noqa: BLE001 - as above
                failed = exc
        said = " ".join(str(getattr(failed, "message", None) or failed).split())[:300]
        where, what = f"collection {name}", f"cannot be loaded ({said})"
        raise DamagedIndex(damaged_message(self.uri, where, what), where, what) from None

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

    def _mirror_search(self, name, vectors, k, filter, metric=None):
        """(mirror, [(row positions, scores)] per vector) when an exact mirror answers this search, else None: the
        collection's (Lite), or on a full server the rows of the key value the filter pins
        (:mod:`hublab.vectorstore.keyed_rows`)."""
        mirrored = self.mirrors(name)
        if not mirrored and self._keyed is None:
            return None
        clauses = parse_filter(filter)
        if clauses is None:
            return None
        if mirrored:
            mirror = self._mirror(name)
        else:
            self._ensure_loaded(name)
            mirror = self._keyed.mirror_for(name, clauses)
            if mirror is None:
                return None
        return mirror, mirror.search_arrays(np.asarray(vectors), int(k), clauses,
                                            (metric or self._metric_of(name)).upper())

    def _native_metric(self, name: str, metric: str | None) -> None:
        """A native search scores with the collection's index: another metric is refused, never silently ignored."""
        if metric is not None and metric.upper() != self._metric_of(name):
            raise HubLabError(f"collection {name} is indexed for {self._metric_of(name)}; a search with "
                              f"{metric.upper()} needs its own collection on this store")

    def search(self, name, vectors, k, *, filter="", output_fields=None, metric=None) -> list[list[SearchHit]]:
        if k <= 0 or len(vectors) == 0:
            return [[] for _ in range(len(vectors))]
        found = self._mirror_search(name, vectors, k, filter, metric)
        if found is not None:
            return self._hits_from_mirror(*found)
        self._native_metric(name, metric)
        return self._native_search(name, vectors, int(k), filter or "")

    def _native_search(self, name: str, vectors, k: int, filter: str) -> list[list[SearchHit]]:
        """Native search, ordered like the mirror (:func:`hublab.vectorstore.milvus_native.native_search`)."""
        return native_search(self, name, vectors, k, filter)

    def search_arrays(self, name, vectors, k, *, filter="", output_fields, metric=None) -> list[HitArrays]:
        """Through the mirror: positions → ids, scores and the requested field columns by fancy indexing (no
        object per hit); natively: ``search``'s hits turned into columns."""
        if k > 0 and len(vectors) > 0:
            found = self._mirror_search(name, vectors, k, filter, metric)
            if found is not None:
                mirror, results = found
                pos = np.concatenate([p for p, _ in results]) if results else np.zeros(0, np.int64)
                cols = {f: mirror.column(f)[pos].tolist() for f in output_fields}  # one gather per field
                out, start = [], 0
                for p, scores in results:
                    end = start + len(p)
                    out.append(HitArrays(mirror.ids[p], scores, {f: c[start:end] for f, c in cols.items()}))
                    start = end
                return out
        return super().search_arrays(name, vectors, k, filter=filter, output_fields=output_fields, metric=metric)

    @staticmethod
    def _hits_from_mirror(mirror, results) -> list[list[SearchHit]]:
        """Hits share the mirror's field dicts (read-only for callers; a superset of the output fields): no dict
        is built per hit."""
        ids, fields = mirror.ids, mirror.fields
        return [[SearchHit(int(ids[p]), score, fields[p]) for p, score in zip(pos.tolist(), sc.tolist(), strict=True)]
                for pos, sc in results]

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
            return _projected([mirror.fields[p] for p in pos[: max(int(limit), 0)].tolist()], output_fields)
        if self._keyed is not None and not self.mirrors(name) and (clauses := parse_filter(filter)) is not None:
            cached = self._keyed.query(name, clauses, limit)
            if cached is not None:  # every value the filter pins has its rows here (HubLink's path records)
                return _projected(cached, output_fields)
        self._ensure_loaded(name)
        rows = self._server_call(self.client.query, name, filter=filter, output_fields=output_fields or ["*"],
                                 limit=limit, timeout=self.timeout, doing=f"querying {name}", **self._read_level())
        return [{k: v for k, v in r.items() if k != "vector"} for r in rows]

    def delete(self, name, *, filter) -> None:
        self._server_call(self.client.delete, name, filter=filter, timeout=self.timeout,
                          doing=f"deleting from {name}")
        self._server_call(self.client.flush, name, timeout=self.timeout, doing=f"flushing {name}")
        self._changed(name)
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
        nothing to do (the client is shared per URI and token)."""
        if not self.local_file:
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


def _projected(rows: list[dict[str, Any]], output_fields: list[str] | None) -> list[dict[str, Any]]:
    """Copies of in-memory rows with the fields a server query would return (Milvus adds the primary key)."""
    if output_fields and "*" not in output_fields:
        return [{f: r[f] for f in ("id", *output_fields) if f in r} for r in rows]
    return [dict(r) for r in rows]
