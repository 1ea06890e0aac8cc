"""Similarity scores that are the same on every machine, and orders taken from them.

Why: the last bits of a float32 matrix product depend on the CPU's kernels (AVX2 vs AVX-512 code paths in BLAS,
the blocking a kernel picks for a matrix shape), so ranking on raw float32 scores gives different lists on
different machines whenever two candidates are within a few ulps, which HubLink's many near-ties make common.

The rule here: a score that becomes an order is computed in float64 from float32 vectors (each product is exact
in float64; summation-order differences stay near 1e-16) and rounded to ``SCORE_DECIMALS`` decimals; ties are
then broken on a stable key chosen by the caller (a path hash, a uid, a text), never on memory or row order. A
machine-dependent difference can still change a rounded score only when the exact value lies within ~1e-16 of
a rounding boundary: about one score in 10^10.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

#: Decimals every ranking score is rounded to (1e-6: far above float64 noise, far below MiniLM's meaningful
#: differences; 0.7345126 and 0.7345131 tie and fall to the stable key).
SCORE_DECIMALS = 6


def round_scores(scores: Any) -> np.ndarray:
    """float64 scores rounded to ``SCORE_DECIMALS`` (round half to even, as numpy does)."""
    return np.round(np.asarray(scores, dtype=np.float64), SCORE_DECIMALS)


def round_score(score: float) -> float:
    """One score rounded like ``round_scores`` (Python's ``round`` is correctly rounded: the same on every CPU)."""
    return round(float(score), SCORE_DECIMALS)


def as64(vectors: Any) -> np.ndarray:
    """Vectors as a 2-D float64 array (a float32 input is widened exactly)."""
    arr = np.asarray(vectors)
    if arr.ndim == 1:
        arr = arr[None, :]
    return arr.astype(np.float64, copy=False)


def dot_scores(a: Any, b: Any) -> np.ndarray:
    """Rounded inner products, ``(len(a), len(b))``: ``a @ b.T`` in float64. For unit vectors this is the cosine."""
    return round_scores(as64(a) @ as64(b).T)


def order(scores: Sequence[float] | np.ndarray, keys: Sequence[Any] | np.ndarray | None = None) -> list[int]:
    """Positions best first: by rounded score (descending), then by ``keys`` (ascending; default: position).

    ``keys`` must identify candidates by content (a uid, a text, a hash) wherever the candidates' position can
    differ between runs; position is a stable key only for lists built in a fixed order."""
    s = round_scores(scores).ravel()
    if keys is None:
        return [int(i) for i in np.lexsort((np.arange(len(s)), -s))]
    return sorted(range(len(s)), key=lambda i: (-s[i], keys[i]))


def top_k(scores: Sequence[float] | np.ndarray, k: int, keys: Sequence[Any] | np.ndarray | None = None) -> list[int]:
    """The first ``k`` of ``order``."""
    return order(scores, keys)[: max(0, int(k))]
