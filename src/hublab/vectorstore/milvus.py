"""Milvus vector store through pymilvus ``MilvusClient``: a Milvus Lite ``.db`` file by default, or a
Milvus server/cluster by URI — the same code path for both.

Milvus Lite gotchas handled here: ``flush()`` after inserts (searches before it are ~6x slower),
``load_collection()`` before the first search in a process, and one process per ``.db`` file.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Any

import numpy as np

from hublab.errors import HubLabError
from hublab.scores import round_score
from hublab.vectorstore.base import HitArrays, SearchHit, VectorStore

# Scores that Milvus returns as distances (smaller = closer) are negated so higher is always better.
_DISTANCE_METRICS = {"L2"}
_CLIENTS: dict[str, Any] = {}
_CLIENTS_LOCK = threading.Lock()


def lock_holder(lock_file: Path) -> str | None:
    """``pid N (command line)`` of the process holding an ``flock`` on ``lock_file`` (from /proc/locks), or None."""
    try:
        st = lock_file.stat()
        locks = Path("/proc/locks").read_text().splitlines()
    except OSError:
        return None
    dev = f"{os.major(st.st_dev):02x}:{os.minor(st.st_dev):02x}:{st.st_ino}"
    for line in locks:
        parts = line.split()
        if len(parts) >= 6 and parts[1] == "FLOCK" and parts[5] == dev:
            pid = parts[4]
            try:
                cmd = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()
            except OSError:
                cmd = ""
            return f"pid {pid}" + (f" ({cmd[:200]})" if cmd else "")
    return None


def _check_lite_lock(uri: str) -> None:
    """A Milvus Lite folder locked by another process: one line naming that process, instead of the Lite
    engine's logged traceback and pymilvus's "Open local milvus failed"."""
    import fcntl

    lock_file = Path(uri) / "LOCK"
    if not lock_file.is_file():
        return
    try:
        fd = os.open(lock_file, os.O_RDWR)
    except OSError:
        return
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        fcntl.flock(fd, fcntl.LOCK_UN)
    except OSError:
        holder = lock_holder(lock_file) or "another process"
        raise HubLabError(f"the Milvus Lite index {uri} is in use by {holder}: a Lite file can be opened by one "
                          "process at a time; wait for it to finish or stop it (or use a Milvus server: "
                          "vector_store.uri)") from None
    finally:
        os.close(fd)


def _client(uri: str, token: str | None):
    """One MilvusClient per URI per process (Milvus Lite allows one process per file anyway)."""
    with _CLIENTS_LOCK:
        if uri not in _CLIENTS:
            from pymilvus import MilvusClient

            if uri.endswith(".db") and uri not in _CLIENTS:
                _check_lite_lock(uri)
            try:
                _CLIENTS[uri] = MilvusClient(uri=uri, token=token or "")
            except Exception as exc:  # pymilvus raises its own exception types
                hint = ""
                if uri.endswith(".db") and (holder := lock_holder(Path(uri) / "LOCK")):
                    raise HubLabError(f"the Milvus Lite index {uri} is in use by {holder}: a Lite file can be "
                                      "opened by one process at a time") from None
                if uri.endswith(".db"):
                    hint = (" (a Milvus Lite file can be opened by one process at a time:"
                            " is another hublab process using it?)")
                raise HubLabError(f"cannot open Milvus at {uri}: {exc}{hint}") from exc
        return _CLIENTS[uri]


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
    store for graphs above the limit (docs/scale.md). ``None`` (default) = no limit."""

    def __init__(self, uri: str, *, token: str | None = None, exact: str = "auto",
                 exact_max_vectors: int | None = None) -> None:
        if exact not in ("auto", "always", "never"):
            raise HubLabError(f"vector_store.exact must be auto, always or never, got {exact!r}")
        if exact_max_vectors is not None and int(exact_max_vectors) < 0:
            raise HubLabError(f"vector_store.exact_max_vectors must be >= 0, got {exact_max_vectors!r}")
        if uri.endswith(".db"):
            Path(uri).parent.mkdir(parents=True, exist_ok=True)
        self.uri = uri
        self.client = _client(uri, token)
        self._loaded: set[str] = set()
        self._metric: dict[str, str] = {}
        self.local_file = uri.endswith(".db")
        self.lite = self.local_file or self._server_is_lite()
        self.use_mirror = exact == "always" or (exact == "auto" and self.lite)
        self.exact_max_vectors = None if exact == "always" or exact_max_vectors is None else int(exact_max_vectors)
        self._mirrors: dict[str, object] = {}
        self._mirror_rows: dict[str, int] = {}
        self._too_big: dict[str, bool] = {}  # collection → above exact_max_vectors (decided once per content)

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

    def _changed(self, name: str) -> None:
        self._mirrors.pop(name, None)
        self._too_big.pop(name, None)

    def _server_is_lite(self) -> bool:
        try:
            return str(self.client.get_server_version()).startswith("milvus_lite")
        except Exception:  # noqa: BLE001 - a server that cannot say is treated as a full Milvus
            return False

    def ensure_collection(self, name: str, dim: int, metric: str = "COSINE") -> None:
        metric = metric.upper()
        if not self.client.has_collection(name):
            self.client.create_collection(name, dimension=dim, metric_type=metric, auto_id=True,
                                          enable_dynamic_field=True)
        self._metric[name] = metric

    def has_collection(self, name: str) -> bool:
        if self.local_file and name in self._mirrors:
            return True  # a Lite file has one process, this one: only our own drop_collection removes it
        return bool(self.client.has_collection(name))

    def drop_collection(self, name: str) -> None:
        if self.client.has_collection(name):
            self.client.drop_collection(name)
        self._loaded.discard(name)
        self._changed(name)

    def _mirror(self, name: str):
        """Lazy in-memory copy (ids, vectors, fields) of a Milvus Lite collection for exact search."""
        from hublab.vectorstore.exact import Mirror

        if name in self._mirrors and not self.local_file and self.count(name) != self._mirror_rows.get(name):
            self._mirrors.pop(name)  # a shared server: another process changed the collection
        if name not in self._mirrors:
            import logging

            logging.getLogger("pymilvus").setLevel(logging.ERROR)  # mvccTs notice of Milvus Lite iterators
            self._ensure_loaded(name)
            it = self.client.query_iterator(name, batch_size=4000, filter="", output_fields=["*"])
            rows: list[dict[str, Any]] = []
            while True:
                batch = it.next()
                if not batch:
                    break
                for r in batch:  # float32 per row now: Python float lists of the whole collection were ~8x larger
                    r["vector"] = np.asarray(r["vector"], dtype=np.float32)
                rows.extend(batch)
            it.close()
            self._mirrors[name] = Mirror(rows)
            self._mirror_rows[name] = len(rows)
        return self._mirrors[name]

    def insert(self, name: str, vectors: np.ndarray, rows: list[dict[str, Any]]) -> None:
        if len(rows) != len(vectors):
            raise ValueError("vectors and rows differ in length")
        batch = 2000
        for i in range(0, len(rows), batch):
            data = [dict(r, vector=np.asarray(v, dtype=np.float32).tolist())
                    for r, v in zip(rows[i : i + batch], vectors[i : i + batch], strict=True)]
            self.client.insert(name, data)
        self.client.flush(name)
        self._changed(name)

    def _ensure_loaded(self, name: str) -> None:
        if name not in self._loaded:
            self.client.load_collection(name)
            self._loaded.add(name)

    def _metric_of(self, name: str) -> str:
        if name not in self._metric:
            try:
                desc = self.client.describe_index(name, "vector")
                self._metric[name] = str(desc.get("metric_type", "COSINE")).upper()
            except Exception:  # older servers / no index description
                self._metric[name] = "COSINE"
        return self._metric[name]

    def _mirror_search(self, name, vectors, k, filter):
        """(mirror, [(row positions, scores)] per vector) when the exact mirror answers this search, else None."""
        if not self.mirrors(name):
            return None
        from hublab.vectorstore.exact import parse_filter

        clauses = parse_filter(filter)
        if clauses is None:
            return None
        mirror = self._mirror(name)
        return mirror, mirror.search_arrays(np.asarray(vectors), int(k), clauses, self._metric_of(name))

    def search(self, name, vectors, k, *, filter="", output_fields=None) -> list[list[SearchHit]]:
        if k <= 0 or len(vectors) == 0:
            return [[] for _ in range(len(vectors))]
        found = self._mirror_search(name, vectors, k, filter)
        if found is not None:
            return self._hits_from_mirror(*found)
        self._ensure_loaded(name)
        res = self.client.search(
            name, data=[np.asarray(v, dtype=np.float32).tolist() for v in vectors], filter=filter or "",
            limit=int(k), output_fields=output_fields or ["*"],
        )
        sign = -1.0 if self._metric_of(name) in _DISTANCE_METRICS else 1.0
        out = []
        for hits in res:
            row = []
            for h in hits:
                fields = dict(h.get("entity", {}))
                fields.pop("vector", None)
                row.append(SearchHit(int(h["id"]), round_score(sign * float(h["distance"])), fields))
            out.append(row)
        return out

    def search_arrays(self, name, vectors, k, *, filter="", output_fields) -> list[HitArrays]:
        """Through the mirror: positions → ids, scores and the requested field columns by fancy indexing (no
        object per hit); natively: ``search``'s hits turned into columns."""
        if k > 0 and len(vectors) > 0:
            found = self._mirror_search(name, vectors, k, filter)
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
        return super().search_arrays(name, vectors, k, filter=filter, output_fields=output_fields)

    @staticmethod
    def _hits_from_mirror(mirror, results) -> list[list[SearchHit]]:
        """Hits share the mirror's field dicts (read-only for callers; a superset of the output fields): no dict
        is built per hit."""
        ids, fields = mirror.ids, mirror.fields
        return [[SearchHit(int(ids[p]), score, fields[p]) for p, score in zip(pos.tolist(), sc.tolist(), strict=True)]
                for pos, sc in results]

    def query(self, name, *, filter, output_fields=None, limit=16384) -> list[dict[str, Any]]:
        self._ensure_loaded(name)
        rows = self.client.query(name, filter=filter, output_fields=output_fields or ["*"], limit=limit)
        return [{k: v for k, v in r.items() if k != "vector"} for r in rows]

    def delete(self, name, *, filter) -> None:
        self.client.delete(name, filter=filter)
        self.client.flush(name)
        self._changed(name)

    def count(self, name: str) -> int:
        self._ensure_loaded(name)
        res = self.client.query(name, filter="", output_fields=["count(*)"])
        return int(res[0]["count(*)"]) if res else 0

    def close(self) -> None:
        pass


def default_uri(default_path: Path) -> str:
    return str(default_path)


def token_from_env(env_name: str | None) -> str | None:
    return os.environ.get(env_name) if env_name else None
