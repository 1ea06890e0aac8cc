"""Milvus Lite store: reopen in the same process, native (non-exact) filters, L2 score direction, and the
one-process-per-file lock turned into a clear error."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import numpy as np
import pytest

from hublab.vectorstore.factory import build_vector_store

VECS = np.eye(4, dtype=np.float32)[:3]  # three orthogonal unit vectors
ROWS = [{"hub_root": "R1", "level": 0, "text": "alpha"}, {"hub_root": "R2", "level": 1, "text": "beta"},
        {"hub_root": "R2", "level": 2, "text": "gamma"}]


def _filled(path, metric="COSINE"):
    store = build_vector_store(None, path)
    store.ensure_collection("c", 4, metric)
    store.insert("c", VECS, ROWS)
    return store


def test_reopen_after_close_keeps_rows_and_metadata(tmp_path):
    path = tmp_path / "re.db"
    _filled(path).close()
    again = build_vector_store({"uri": None}, path)
    assert again.has_collection("c") and again.count("c") == 3
    hit = again.search("c", VECS[1:2], 1, output_fields=["text", "level"])[0][0]
    assert {k: hit.fields[k] for k in ("text", "level")} == {"text": "beta", "level": 1}
    assert hit.score == pytest.approx(1.0, abs=1e-5)


def test_native_filter_expression_passes_through(tmp_path):
    store = _filled(tmp_path / "n.db")
    # `like` and `>=` are not in the exact-search grammar, so this goes through Milvus' own search
    hits = store.search("c", VECS[:1], 3, filter='level >= 1 and text like "g%"')[0]
    assert [h.fields["text"] for h in hits] == ["gamma"]
    assert [r["text"] for r in store.query("c", filter="level < 1", output_fields=["text"])] == ["alpha"]


def test_l2_scores_are_higher_for_closer_vectors(tmp_path):
    store = _filled(tmp_path / "l2.db", metric="L2")
    q = np.array([[0.9, 0.1, 0.0, 0.0]], dtype=np.float32)
    for flt in ("", 'text like "%a%"'):  # exact path and native path
        hits = store.search("c", q, 3, filter=flt)[0]
        assert hits[0].fields["text"] == "alpha" and hits[0].score > hits[-1].score


@pytest.mark.slow  # subprocesses
def test_second_process_gets_a_clear_lock_error(tmp_path):
    path = tmp_path / "lock.db"
    _filled(path)
    code = textwrap.dedent(f"""
        from hublab.errors import HubLabError
        from hublab.vectorstore.factory import build_vector_store
        try:
            build_vector_store(None, {str(path)!r}).count("c")
        except HubLabError as exc:
            print("CLEAR:", exc)
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert "CLEAR:" in out.stdout and "one process at a time" in out.stdout, out.stdout + out.stderr[-2000:]
    assert str(path) in out.stdout and "in use by pid" in out.stdout, out.stdout  # names the locked file and its owner
    assert out.returncode == 0, out.stderr[-2000:]  # a HubLabError, caught above: no other exception escaped
    assert build_vector_store(None, path).count("c") == len(VECS)  # the owner still reads its file


def test_search_arrays_matches_search_for_every_exact_filter(tmp_path):
    """The columnar search (HubLink's path) returns the same ids, scores and fields as ``search``, for each clause
    of the exact grammar and their conjunction; only the requested fields come back."""
    store = _filled(tmp_path / "arr.db")
    q = np.array([[0.5, 0.4, 0.3, 0.0], [0.0, 0.1, 0.9, 0.0]], dtype=np.float32)
    for flt in ("", 'hub_root == "R2"', 'hub_root != "R2"', 'text in ["alpha", "gamma"]', 'text not in ["beta"]',
                'hub_root == "R2" and text not in ["gamma"]', 'hub_root in ["R1", "R2"] and text in ["beta"]'):
        hits = store.search("c", q, 2, filter=flt)
        arrays = store.search_arrays("c", q, 2, filter=flt, output_fields=["text"])
        assert set(arrays[0].fields) == {"text"}, flt
        for h, a in zip(hits, arrays, strict=True):
            assert a.ids.tolist() == [x.id for x in h], flt
            assert a.scores.tolist() == [x.score for x in h], flt
            assert list(a.fields["text"]) == [x.fields["text"] for x in h], flt
