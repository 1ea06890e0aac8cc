"""The store chosen by size: with ``exact: auto`` a Lite collection of up to ``exact_max_vectors`` vectors is
searched through the exact in-memory mirror, a larger one natively. On a toy collection the mirror is exact under
every filter HubLab emits. Native search on the Lite engine (milvus-lite 3.x: HNSW, the filter applied during the
graph walk) is exact unfiltered and under broad filters, and under selective filters returns only rows that match,
with their true scores, best first — but may return *fewer* than min(k, matching rows) and miss true neighbours
(measured with milvus-lite 3.2.2: 4 of 8 matching rows for ``hub_root == "H4" and path_hash not in [..]`` at k=40).
That is why the switch is opt-in and a full Milvus server is the store for large graphs (docs/scale.md)."""

from __future__ import annotations

import numpy as np
import pytest

from hublab.errors import InputError
from hublab.vectorstore.factory import build_vector_store

N, DIM = 400, 16
FILTERS = ["", 'hub_root == "H3"', 'hub_root in ["H1", "H7", "H9"]', 'hub_root not in ["H0", "H1"]',
           'hub_root in ["H2", "H5"] and level == "path"', 'hub_root == "H4" and path_hash not in ["p4", "p44"]']


def _data(seed=0, n=N):
    rng = np.random.default_rng(seed)
    vecs = rng.normal(size=(n, DIM)).astype(np.float32)
    rows = [{"hub_root": f"H{i % 40}", "level": "path" if i % 3 == 0 else "triple", "path_hash": f"p{i}", "i": i}
            for i in range(n)]
    return vecs, rows


def _exact(vecs, rows, q, k, keep):
    unit = vecs / np.linalg.norm(vecs, axis=1, keepdims=True)
    scores = unit @ (q / np.linalg.norm(q))
    idx = [i for i in range(len(rows)) if keep(rows[i])]
    return [rows[i]["i"] for i in sorted(idx, key=lambda i: -scores[i])[:k]]


KEEP = {
    "": lambda r: True,
    'hub_root == "H3"': lambda r: r["hub_root"] == "H3",
    'hub_root in ["H1", "H7", "H9"]': lambda r: r["hub_root"] in ("H1", "H7", "H9"),
    'hub_root not in ["H0", "H1"]': lambda r: r["hub_root"] not in ("H0", "H1"),
    'hub_root in ["H2", "H5"] and level == "path"': lambda r: r["hub_root"] in ("H2", "H5") and r["level"] == "path",
    'hub_root == "H4" and path_hash not in ["p4", "p44"]': lambda r: r["hub_root"] == "H4"
    and r["path_hash"] not in ("p4", "p44"),
}


def test_auto_switches_from_mirror_to_native_above_exact_max_vectors(tmp_path):
    vecs, rows = _data()
    path = tmp_path / "switch.db"
    small = build_vector_store({"exact": "auto", "exact_max_vectors": N}, path)  # N vectors: still mirrored
    big = build_vector_store({"exact": "auto", "exact_max_vectors": N - 1}, path)  # one fewer allowed: native
    small.ensure_collection("c", DIM, "COSINE")
    small.insert("c", vecs, rows)
    assert small.mirrors("c") and not big.mirrors("c")
    q = np.random.default_rng(1).normal(size=(4, DIM)).astype(np.float32)
    unit = vecs / np.linalg.norm(vecs, axis=1, keepdims=True)
    for flt in FILTERS:
        for k in (5, 12, 40):
            via_mirror = small.search("c", q, k, filter=flt, output_fields=["i", "hub_root"])
            native = big.search("c", q, k, filter=flt, output_fields=["i", "hub_root"])
            for j in range(len(q)):
                want = _exact(vecs, rows, q[j], k, KEEP[flt])
                assert [h.fields["i"] for h in via_mirror[j]] == want, (flt, k)  # the mirror is exact
                got = [h.fields["i"] for h in native[j]]
                if flt in ("", 'hub_root not in ["H0", "H1"]'):
                    assert got == want, (flt, k)  # native: exact without a selective filter
                assert 0 < len(got) <= len(want), (flt, k)  # selective filters: possibly fewer (Lite's HNSW)
                assert all(KEEP[flt](rows[i]) for i in got), (flt, k)  # only matching rows
                true = [float(unit[i] @ q[j] / np.linalg.norm(q[j])) for i in got]
                assert [h.score for h in native[j]] == pytest.approx(true, abs=1e-4)
                assert true == sorted(true, reverse=True)
    assert "c" in small._mirrors and "c" not in big._mirrors  # the native store never built a mirror


def test_switch_is_re_decided_when_the_collection_grows(tmp_path):
    vecs, rows = _data(n=300)
    store = build_vector_store({"exact_max_vectors": 250}, tmp_path / "grow.db")
    store.ensure_collection("c", DIM, "COSINE")
    store.insert("c", vecs[:200], rows[:200])
    assert store.mirrors("c")
    store.search("c", vecs[:1], 3, filter='hub_root == "H1"')
    assert "c" in store._mirrors
    store.insert("c", vecs[200:], rows[200:])
    assert not store.mirrors("c") and "c" not in store._mirrors  # 300 > 250: mirror dropped, native search
    hits = store.search("c", vecs[250:251], 3, filter='hub_root == "H10"', output_fields=["i"])[0]
    assert hits[0].fields["i"] == 250
    store.delete("c", filter="i >= 100")
    assert store.mirrors("c")  # back under the limit


def test_no_limit_and_exact_modes(tmp_path):
    vecs, rows = _data(n=50)
    path = tmp_path / "modes.db"
    default = build_vector_store({}, path)
    default.ensure_collection("c", DIM, "COSINE")
    default.insert("c", vecs, rows)
    assert default.exact_max_vectors is None and default.mirrors("c")  # no limit: mirror at any size
    assert build_vector_store({"exact": "always", "exact_max_vectors": 0}, path).mirrors("c")  # always wins
    assert not build_vector_store({"exact": "never"}, path).mirrors("c")
    assert not build_vector_store({"exact_max_vectors": 0}, path).mirrors("c")


@pytest.mark.parametrize("bad", [-1, "100", True, 1.5])
def test_exact_max_vectors_is_validated(tmp_path, bad):
    with pytest.raises(InputError, match="exact_max_vectors"):
        build_vector_store({"exact_max_vectors": bad}, tmp_path / "bad.db")
