"""A dense index over retrieval units: the configured vector store (Milvus) when there is one, else numpy.

The store holds each unit's position and the corpus content hash (unit keys and texts, the embedder's vectors and
the metric); units themselves are rebuilt from the graph. A collection is named by that hash
(:mod:`hublab.vectorstore.corpora`): a corpus is built once and reused by every later run, tuning trial, study and
method with the same units, and a folder keeps a bounded number per method, graph and metric.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from typing import Any, Literal

import numpy as np

from hublab.errors import InputError
from hublab.retrievers.base import Resources
from hublab.retrievers.components.units import Unit, content_hash
from hublab.scores import as64, dot_scores, round_scores
from hublab.vectorstore import corpora
from hublab.vectorstore.base import metric_name

#: The ``distance_metric`` parameter of the dense methods (VSS, hybrid, DiFaR, 4StepFocus).
DistanceMetric = Literal["cosine", "l2", "ip"]

log = logging.getLogger(__name__)

_BATCH = 1024

#: Process-wide tallies of dense index builds: ``built`` (units inserted) and ``reused`` (an identical corpus's
#: collection found); a tuning study reports its own as the difference before and after its trials.
BUILDS: dict[str, int] = {"built": 0, "reused": 0}


def collection_name(*parts: str) -> str:
    """Milvus names: letters, digits, underscores; must not start with a digit."""
    raw = "_".join(p for p in parts if p)
    name = re.sub(r"[^A-Za-z0-9_]", "_", raw)
    if not name or name[0].isdigit():
        name = "c_" + name
    return name[:250]


class DenseIndex:
    """Embeds units once and answers top-k (optionally restricted to a subset of unit positions)."""

    def __init__(self, resources: Resources, units: Sequence[Unit], *, prefix: str, metric: str = "cosine") -> None:
        if resources.embedder is None:
            raise InputError("a dense retriever needs an embedder", field="embedder")
        self.embedder = resources.embedder
        self.store = resources.vector_store
        self.units = units
        self.metric = metric_name(metric)
        # keys *and* texts: one unit key can have several texts (VSS node documents with or without relations,
        # ``add_rel``), and a collection built from other texts must be rebuilt, not searched
        # a store that scores every search here (Milvus Lite's exact mirror) keeps one collection per corpus for
        # every metric; a server scores with its index's metric, so there the metric is part of the corpus
        self.any_metric = self.store is not None and self.store.scores_any_metric()
        keyed_metric = "ANY" if self.any_metric else self.metric
        self.hash = content_hash((f"{u.key}\x02{u.text}" for u in units), self.embedder.vectors_id, keyed_metric)
        self.family = collection_name(prefix, resources.index_name or resources.graph.name, keyed_metric.lower())
        self.collection = corpora.content_keyed(self.family, self.hash)
        self.index_dir = resources.index_dir
        self.lock = corpora.lock_file(resources.cache_dir, resources.index_dir)
        self._matrix: np.ndarray | None = None
        self._ready = False

    # ------------------------------------------------------------ build
    def _embed(self, texts: list[str]) -> np.ndarray:
        parts = [self.embedder.embed(texts[i : i + _BATCH]) for i in range(0, len(texts), _BATCH)]
        if not parts:
            return np.zeros((0, max(1, int(self.embedder.dim or 1))), dtype=np.float32)
        return np.asarray(np.vstack(parts), dtype=np.float32)

    def _store_is_current(self) -> bool:
        assert self.store is not None
        if not self.store.has_collection(self.collection):
            return False
        try:
            rows = self.store.query(
                self.collection, filter=f'content_hash == "{self.hash}"', output_fields=["uidx"], limit=1
            )
            return bool(rows) and self.store.count(self.collection) == len(self.units)
        except Exception as exc:  # noqa: BLE001 - an unreadable collection is rebuilt, not fatal
            log.warning("vector store check failed for %s: %s; rebuilding", self.collection, exc)
            return False

    def build(self, *, progress: bool = False) -> dict[str, Any]:
        """Embed and store units unless an identical index exists; returns stats. ``progress``: a bar over the
        units embedded (stderr), or the line saying the stored index is up to date."""
        from hublab.progress import build_bar

        if self._ready:
            return {"collection": self.collection, "units": len(self.units), "skipped": True}
        if self.store is None:
            with build_bar(progress, f"dense index {self.family} (in memory)", len(self.units),
                           unit="units") as advance:
                parts = []
                for start in range(0, len(self.units), _BATCH):
                    chunk = self.units[start : start + _BATCH]
                    parts.append(self._embed([u.text for u in chunk]))
                    advance(len(chunk))
                self._matrix = np.asarray(np.vstack(parts), dtype=np.float32) if parts else self._embed([])
            self._ready = True
            return {"collection": None, "units": len(self.units), "skipped": False, "backend": "numpy"}
        with corpora.locked(self.lock):  # one worker builds a corpus, the others wait and reuse it
            stats = self._build_store(progress)
            if not stats["skipped"]:
                stats["evicted"] = corpora.record_build(self.index_dir, self.family, self.collection, self.store)
        BUILDS["reused" if stats["skipped"] else "built"] += 1
        return stats

    def _build_store(self, progress: bool) -> dict[str, Any]:
        from hublab.progress import build_bar, up_to_date

        assert self.store is not None
        if self._store_is_current():
            self._ready = True
            up_to_date(progress, f"dense index {self.family}: {len(self.units)} units", self._where())
            return {"collection": self.collection, "units": len(self.units), "skipped": True}
        if self.store.has_collection(self.collection):  # a partial build (a crash mid-insert): start it again
            self.store.drop_collection(self.collection)
        dim = int(self.embedder.dim or self.embedder.embed_one("dimension probe").shape[0])
        self.store.ensure_collection(self.collection, dim, self.metric)
        with build_bar(progress, f"dense index {self.family}", len(self.units), unit="units") as advance:
            for start in range(0, len(self.units), _BATCH):
                chunk = self.units[start : start + _BATCH]
                vecs = self._embed([u.text for u in chunk])
                rows = [
                    {"uidx": start + i, "content_hash": self.hash, "text": u.text[:2000]} for i, u in enumerate(chunk)
                ]
                self.store.insert(self.collection, vecs, rows)
                advance(len(chunk))
        self.store.flush(self.collection)  # once: a server seals and indexes a segment per flush
        self._ready = True
        return {"collection": self.collection, "units": len(self.units), "skipped": False}

    def _where(self) -> str:
        """Where the stored index lives, for the console (a server URI without its credentials)."""
        from hublab.redact import scrub

        return scrub(str(getattr(self.store, "uri", None) or type(self.store).__name__))

    # ------------------------------------------------------------ query
    def search(self, query: str, k: int, *, subset: list[int] | None = None) -> list[tuple[Unit, float]]:
        """Top-k units (best first) for the query, optionally only among unit positions in ``subset``."""
        if not self.units or k <= 0 or (subset is not None and not subset):
            return []
        self.build()
        qv = np.asarray(self.embedder.embed([query]), dtype=np.float32)
        if self.store is None:
            assert self._matrix is not None
            idx = np.arange(len(self.units)) if subset is None else np.asarray(sorted(set(subset)))
            mat = self._matrix[idx]
            if self.metric == "L2":
                scores = round_scores(-np.linalg.norm(as64(mat) - as64(qv)[0], axis=1))
            else:
                scores = dot_scores(mat, qv)[:, 0]  # portable: rounded float64 (hublab.scores)
            order = np.argsort(-scores, kind="stable")[:k]
            return [(self.units[int(idx[i])], float(scores[i])) for i in order]
        flt = ""
        if subset is not None:
            flt = "uidx in [" + ",".join(str(int(i)) for i in sorted(set(subset))) + "]"
        scored_with = {"metric": self.metric} if self.any_metric else {}  # else the collection's own
        hits = self.store.search(self.collection, qv, min(k, 16384), filter=flt, output_fields=["uidx"],
                                 **scored_with)
        out: list[tuple[Unit, float]] = []
        for h in hits[0] if hits else []:
            pos = h.fields.get("uidx")
            if pos is None or not 0 <= int(pos) < len(self.units):
                continue
            out.append((self.units[int(pos)], float(h.score)))
        return out

    def similarities(self, query: str, texts: list[str]) -> np.ndarray:
        """Similarity of the query with arbitrary texts (used for small re-scoring jobs)."""
        if not texts:
            return np.zeros(0, dtype=np.float32)
        vecs = self._embed([query] + texts)
        return dot_scores(vecs[1:], vecs[:1])[:, 0]
