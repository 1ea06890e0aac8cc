"""Portable scores (hublab.scores) and the exact mirror's content-keyed order: fast, no model."""

from __future__ import annotations

import numpy as np

from hublab.scores import SCORE_DECIMALS, dot_scores, order, round_scores, top_k
from hublab.vectorstore.exact import Mirror


def test_float64_noise_vanishes_in_the_rounding():
    """BLAS summation order moves a float64 score by a few ulps; the rounded score does not move (a value would
    have to lie within those ulps of a rounding boundary: ~1e-10 of scores)."""
    rng = np.random.default_rng(7)
    s = rng.uniform(-1, 1, 200_000)
    for ulps in (1, 4):
        up, down = s.copy(), s.copy()
        for _ in range(ulps):
            up, down = np.nextafter(up, 2.0), np.nextafter(down, -2.0)
        assert np.array_equal(round_scores(up), round_scores(s))
        assert np.array_equal(round_scores(down), round_scores(s))


def test_float32_rounding_alone_would_not_be_enough():
    """Why scores are computed in float64: float32 products of the same vectors in another summation order
    differ by ~1e-7, enough to cross a 1e-6 rounding boundary for a sizeable share of scores."""
    rng = np.random.default_rng(3)
    a = rng.standard_normal((64, 384)).astype(np.float32)
    b = rng.standard_normal((512, 384)).astype(np.float32)
    a /= np.linalg.norm(a, axis=1, keepdims=True)
    b /= np.linalg.norm(b, axis=1, keepdims=True)
    forward = np.round((a @ b.T).astype(np.float64), SCORE_DECIMALS)
    permuted = np.round((a[:, ::-1].copy() @ b[:, ::-1].T.copy()).astype(np.float64), SCORE_DECIMALS)
    assert (forward != permuted).any()
    assert np.array_equal(dot_scores(a, b), dot_scores(a[:, ::-1], b[:, ::-1]))


def test_order_breaks_ties_on_the_key_not_the_position():
    scores = [0.5, 0.7000001, 0.7, 0.5000004]  # 0.7000001 ≈ 0.7 and 0.5000004 ≈ 0.5 at 6 decimals
    assert order(scores, keys=["d", "b", "a", "c"]) == [2, 1, 3, 0]
    assert order(scores) == [1, 2, 0, 3]
    assert top_k(scores, 2, keys=["d", "b", "a", "c"]) == [2, 1]


def _rows(n: int, rng) -> tuple[np.ndarray, list[dict]]:
    vecs = rng.standard_normal((n, 8)).astype(np.float32)
    vecs[n // 2 :] = vecs[: n - n // 2]  # every vector twice: exact ties
    rows = [{"id": 1000 + i, "text": f"t{i:03d}", "hub_root": f"R{i % 3}", "gen": "g1"} for i in range(n)]
    return vecs, rows


def test_mirror_results_do_not_depend_on_insertion_order_or_ids():
    """An index whose rows were inserted in another order, with other ids and another build generation (a
    resumed or incremental build) returns the same rows for every query and filter, ties at the cut included."""
    rng = np.random.default_rng(11)
    vecs, rows = _rows(40, rng)
    a = Mirror([dict(r, vector=v) for r, v in zip(rows, vecs, strict=True)])
    perm = rng.permutation(len(rows))
    b = Mirror([dict(rows[i], id=5000 + j, gen="g2", vector=vecs[i]) for j, i in enumerate(perm)])
    queries = rng.standard_normal((5, 8)).astype(np.float32)
    for clauses in ([], [("hub_root", "in", frozenset({"R0", "R2"}))], [("hub_root", "!=", "R1")]):
        for k in (1, 3, 7, 40):
            ra = a.search_arrays(queries, k, clauses, "COSINE")
            rb = b.search_arrays(queries, k, clauses, "COSINE")
            for (pa, sa), (pb, sb) in zip(ra, rb, strict=True):
                assert [rows[i]["text"] for i in pa] == [rows[perm[j]]["text"] for j in pb]
                assert np.array_equal(sa, sb)


def test_mirror_cut_inside_a_tie_takes_the_smaller_content_keys():
    v = np.ones((4, 3), np.float32)
    m = Mirror([{"id": i, "text": t, "vector": v[i]} for i, t in enumerate(["d", "b", "c", "a"])])
    pos, scores = m.search_arrays(np.ones((1, 3), np.float32), 2, [], "COSINE")[0]
    assert [m.fields[p]["text"] for p in pos] == ["a", "b"] and scores.tolist() == [1.0, 1.0]
