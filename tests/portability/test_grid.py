"""The portable grid of stored embeddings (issue #42): GV1's index differed between two CPUs because a few of its
~4.5 million float64 components, computed ~1e-16 apart by different kernels, straddled a float32 rounding boundary.
On the 2^-20 grid such neighbours round to the same value unless they straddle one of the grid's midpoints."""

from __future__ import annotations

import numpy as np

from hublab.embedding.base import GRID_BITS, on_grid


def _unit_rows(n: int, seed: int = 0) -> np.ndarray:
    v = np.random.default_rng(seed).standard_normal((n, 384))
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def test_neighbours_across_a_float32_boundary_land_on_one_grid_value():
    """Values just either side of float32 rounding midpoints (what two CPUs' float64 results look like when one
    component straddles a boundary): float32 tells them apart, the grid does not."""
    base = _unit_rows(50).ravel()
    f32 = base.astype(np.float32).astype(np.float64)
    nxt = np.nextafter(base.astype(np.float32), np.float32(np.inf)).astype(np.float64)
    mid = (f32 + nxt) / 2  # exact in float64: a float32 rounding boundary
    below, above = np.nextafter(mid, -np.inf), np.nextafter(mid, np.inf)  # 1 ulp of float64 apart
    differ = below.astype(np.float32) != above.astype(np.float32)
    assert differ.mean() > 0.99  # straight to float32: almost every such pair differs
    assert np.array_equal(on_grid(below), on_grid(above))  # on the grid: none does


def test_the_grid_is_exact_idempotent_and_close():
    v = _unit_rows(200, seed=1)
    g = on_grid(v)
    assert g.dtype == np.float32
    assert np.array_equal(on_grid(g), g)  # idempotent: a cached vector and a fresh one are the same bytes
    assert np.array_equal(g.astype(np.float64) * 2**GRID_BITS, np.round(g.astype(np.float64) * 2**GRID_BITS))
    assert np.abs(g - v).max() <= 2.0 ** -(GRID_BITS + 1)
    g64 = g.astype(np.float64)
    cos = (g64 * v).sum(axis=1) / np.linalg.norm(g64, axis=1)
    assert np.abs(cos - 1).max() < 1e-9  # a vector keeps its direction: scores move by ~1e-7 at most
