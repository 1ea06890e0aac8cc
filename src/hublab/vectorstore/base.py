"""The VectorStore interface (Milvus Lite by default, a Milvus server by URI)."""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any

import numpy as np

from hublab.errors import HubLabError

#: Distance metrics by their pipeline names → the store's names (Milvus: COSINE, L2, IP).
METRICS = {"cosine": "COSINE", "l2": "L2", "ip": "IP"}


def metric_name(name: str) -> str:
    """The store's metric name for a pipeline ``distance_metric`` (case-insensitive)."""
    key = str(name).strip().lower()
    if key not in METRICS:
        from hublab.errors import InputError

        raise InputError(f"distance_metric must be one of {sorted(METRICS)}, got {name!r}", field="distance_metric")
    return METRICS[key]


class DamagedIndex(HubLabError):
    """A store that finds a collection's files damaged when it opens or loads it. ``where`` and ``what`` let a
    caller that knows more (the index, the command that rebuilds it) say it its own way."""

    def __init__(self, message: str, where: str, what: str) -> None:
        super().__init__(message)
        self.where, self.what = where, what


@dataclass
class SearchHit:
    id: int
    score: float  # higher is more similar (cosine similarity for COSINE)
    fields: dict[str, Any]  # at least the requested output fields; read-only (may be shared between hits)


@dataclass
class HitArrays:
    """The hits of one query vector as columns, best first: what a caller that reads a few fields of thousands
    of hits needs without one object per hit."""

    ids: np.ndarray  # int64
    scores: np.ndarray  # higher is more similar
    fields: dict[str, Any]  # output field -> sequence of per-hit values (None where a hit lacks the field)

    def __len__(self) -> int:
        return len(self.ids)


class VectorStore(ABC):
    @abstractmethod
    def ensure_collection(self, name: str, dim: int, metric: str = "COSINE", *, keys: tuple[str, ...] = ()) -> None:
        """Create the collection if missing (fields are dynamic: any scalar metadata may be stored). ``keys``:
        string fields every row carries and searches filter on (``hub_root == …``); a store may give them typed,
        indexed columns (a Milvus server does: a filter on a dynamic field parses every row's JSON per search)."""

    @abstractmethod
    def has_collection(self, name: str) -> bool: ...

    @abstractmethod
    def drop_collection(self, name: str) -> None: ...

    @abstractmethod
    def insert(self, name: str, vectors: np.ndarray, rows: list[dict[str, Any]]) -> None:
        """Insert vectors with metadata rows; ids are assigned by the store."""

    def flush(self, name: str) -> None:  # noqa: B027 - optional hook, most stores write through
        """Make what was inserted into or deleted from ``name`` final for every reader, other processes included. A
        build calls it once at its end: a store may defer that work past each ``insert`` (a Milvus server seals and
        indexes a segment per flush). Default: nothing (the store's writes are final at once)."""
        return None

    @abstractmethod
    def search(
        self,
        name: str,
        vectors: np.ndarray,
        k: int,
        *,
        filter: str = "",
        output_fields: list[str] | None = None,
        metric: str | None = None,
    ) -> list[list[SearchHit]]:
        """One hit list per query vector, best first. ``filter`` is a Milvus boolean expression. ``metric``
        (a store that :meth:`scores_any_metric`): score with it instead of the collection's."""

    def scores_any_metric(self) -> bool:
        """Whether every search is scored in this process from the stored vectors (an exact mirror), so that one
        collection of a corpus serves every metric (``search(metric=…)``); a server scores with its index's."""
        return False

    def search_arrays(
        self,
        name: str,
        vectors: np.ndarray,
        k: int,
        *,
        filter: str = "",
        output_fields: list[str],
        metric: str | None = None,
    ) -> list[HitArrays]:
        """``search`` as columns (one ``HitArrays`` per query vector) with exactly ``output_fields``. Stores with
        an in-memory copy override this to skip building per-hit objects."""
        out = []
        for hits in self.search(name, vectors, k, filter=filter, output_fields=output_fields, metric=metric):
            out.append(HitArrays(np.array([h.id for h in hits], dtype=np.int64),
                                 np.array([h.score for h in hits], dtype=np.float64),
                                 {f: [h.fields.get(f) for h in hits] for f in output_fields}))
        return out

    def concurrent_searches(self, name: str) -> int:
        """How many searches on ``name`` a caller may usefully run at once from threads. 1 (default): an
        in-process engine or matrix product gains nothing from threads; a remote server answers round trips
        concurrently, so a method making many independent searches per question (HubLink: one per hub) may
        overlap them."""
        return 1

    def prefetch(self, name: str, field: str, values: list[Any]) -> None:  # noqa: B027 - optional hint
        """A hint: searches filtered to each of ``values`` of ``field`` (``field == value``) follow. A server store
        that answers such searches from the value's rows fetches all of them in one request instead of one per
        value (HubLink: a question's candidate hubs); stores without such a cache ignore it."""
        return None

    @abstractmethod
    def query(
        self, name: str, *, filter: str, output_fields: list[str] | None = None, limit: int = 16384
    ) -> list[dict[str, Any]]: ...

    @abstractmethod
    def delete(self, name: str, *, filter: str) -> None: ...

    @abstractmethod
    def count(self, name: str) -> int: ...

    def close(self) -> None:  # noqa: B027 - optional hook, most stores need nothing
        return None
