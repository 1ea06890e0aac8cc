"""Reciprocal-rank fusion: the one way HubLab merges rankings whose scores are not comparable
(BM25 vs cosine, node vs triple similarity). STaRK's hybrid retriever uses the same fusion."""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from typing import TypeVar

T = TypeVar("T")


def rrf(rankings: Sequence[Sequence[T]], *, key: Callable[[T], Hashable], k: int = 60) -> list[tuple[T, float]]:
    """score(x) = Σ 1 / (k + rank(x)) over the rankings (ranks 1-based); best first, ties keep first-seen order.

    ``key`` identifies an item across rankings; the first-seen item object is returned for each key."""
    scores: dict[Hashable, float] = {}
    first: dict[Hashable, T] = {}
    for ranking in rankings:
        for rank, item in enumerate(ranking, start=1):
            kk = key(item)
            first.setdefault(kk, item)
            scores[kk] = scores.get(kk, 0.0) + 1.0 / (k + rank)
    order = sorted(scores, key=lambda kk: -scores[kk])  # sorted is stable: ties keep first-seen order
    return [(first[kk], scores[kk]) for kk in order]
