"""Disk cache for embeddings keyed by sha256(model, text): unique texts are embedded once, and
re-indexing an unchanged graph costs no model calls."""

from __future__ import annotations

import hashlib
import sqlite3
import threading
from pathlib import Path

import numpy as np

from hublab.embedding.base import Embedder, on_grid

#: Process-wide tallies of unique texts per call: ``embedded`` (sent to the model) and ``cached`` (vectors found);
#: a tuning study reports its own as the difference before and after its trials.
TEXTS: dict[str, int] = {"embedded": 0, "cached": 0}


class CachedEmbedder(Embedder):
    """The inner embedder's vectors, stored by text. The cache file is opened on first use: its name holds the
    vectors' identity and dimension, which a lazily loaded model (``SentenceTransformerEmbedder``) only knows then,
    and a pipeline that never embeds should not load the model to name it."""

    def __init__(self, inner: Embedder, cache_dir: str | Path) -> None:
        self.inner = inner
        self.name = inner.name
        self._cache_dir = Path(cache_dir)
        self._vectors_id: str | None = None
        self._db: sqlite3.Connection | None = None
        self._lock = threading.Lock()
        self.model_calls = 0  # number of texts actually sent to the model (for tests and stats)
        # In-memory layer over the sqlite table (same vectors): retrieval embeds the same question and triple
        # texts again and again (LLM-free HubLink's output filter: ~200 triples per question).
        self._mem: dict[str, np.ndarray] = {}
        self.mem_entries = 20000

    @property
    def dim(self) -> int:  # type: ignore[override]
        return self.inner.dim

    @property
    def vectors_id(self) -> str:
        if self._vectors_id is None:
            self._vectors_id = self.inner.vectors_id
        return self._vectors_id

    def _open(self) -> sqlite3.Connection:
        """The sqlite table (opened once; call with ``self._lock`` held)."""
        if self._db is None:
            safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in self.inner.cache_id)
            path = self._cache_dir / "embeddings" / f"{safe}-{self.inner.dim}.sqlite"
            path.parent.mkdir(parents=True, exist_ok=True)
            db = sqlite3.connect(str(path), check_same_thread=False, timeout=60)
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("CREATE TABLE IF NOT EXISTS emb (key TEXT PRIMARY KEY, vec BLOB)")
            self._db = db
        return self._db

    def _key(self, text: str) -> str:
        return hashlib.sha256(f"{self.inner.cache_id}\x00{text}".encode()).hexdigest()

    def embed(self, texts: list[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        keys = [self._key(t) for t in texts]
        unique = list(dict.fromkeys(keys))
        mem = self._mem
        found: dict[str, np.ndarray] = {k: mem[k] for k in unique if k in mem}
        todo = [k for k in unique if k not in found] if found else unique
        with self._lock:
            for i in range(0, len(todo), 900):
                chunk = todo[i : i + 900]
                q = f"SELECT key, vec FROM emb WHERE key IN ({','.join('?' * len(chunk))})"
                for k, blob in self._open().execute(q, chunk):
                    found[k] = np.frombuffer(blob, dtype=np.float32)
        missing_keys = [k for k in unique if k not in found]
        TEXTS["embedded"] += len(missing_keys)
        TEXTS["cached"] += len(unique) - len(missing_keys)
        if missing_keys:
            text_of = dict(zip(keys, texts, strict=True))
            vecs = self.inner.embed([text_of[k] for k in missing_keys])
            self.model_calls += len(missing_keys)
            with self._lock:
                db = self._open()
                db.executemany(
                    "INSERT OR REPLACE INTO emb (key, vec) VALUES (?, ?)",
                    [(k, np.asarray(v, dtype=np.float32).tobytes()) for k, v in zip(missing_keys, vecs, strict=True)],
                )
                db.commit()
            for k, v in zip(missing_keys, vecs, strict=True):
                found[k] = np.asarray(v, dtype=np.float32)
        if len(mem) + len(found) > self.mem_entries:
            mem.clear()
        mem.update(found)
        stacked = np.stack([found[k] for k in keys])
        # entries stored before the grid (or by an embedder that does not round) are rounded on the way out, so a
        # cached vector and a fresh one of the same text are the same bytes
        return on_grid(stacked) if self.inner.vectors_id != self.inner.cache_id else stacked.astype(np.float32,
                                                                                                   copy=False)
