"""Reciprocal-rank fusion: the one way HubLab merges rankings whose scores are not comparable
(BM25 vs cosine, node vs triple similarity, triple vs path text). STaRK's hybrid retriever uses the same
fusion; the ``hybrid`` baseline and HubLink's LLM-free output ranking both call :func:`rrf`."""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from typing import TypeVar

T = TypeVar("T")


def rrf(rankings: Sequence[Sequence[T]], *, key: Callable[[T], Hashable], k: int = 60,
        weights: Sequence[float] | None = None) -> list[tuple[T, float]]:
    """score(x) = Σ wᵢ / (k + rankᵢ(x)) over the rankings (ranks 1-based, wᵢ = 1 unless ``weights``); best
    first, ties keep first-seen order. A ranking with weight 0 contributes nothing (an ablation switch).

    ``key`` identifies an item across rankings; the first-seen item object is returned for each key."""
    if weights is not None and len(weights) != len(rankings):
        raise ValueError(f"{len(weights)} weights for {len(rankings)} rankings")
    scores: dict[Hashable, float] = {}
    first: dict[Hashable, T] = {}
    for i, ranking in enumerate(rankings):
        w = 1.0 if weights is None else float(weights[i])
        for rank, item in enumerate(ranking, start=1):
            kk = key(item)
            first.setdefault(kk, item)
            scores[kk] = scores.get(kk, 0.0) + w / (k + rank)
    order = sorted(scores, key=lambda kk: -scores[kk])  # sorted is stable: ties keep first-seen order
    return [(first[kk], scores[kk]) for kk in order]
