"""The index stage's stats file describes the index, not the build: a fresh clone's clean build and this machine's
reuse of an existing collection must write the same bytes (the file is a committed DVC output)."""

from __future__ import annotations


def test_build_history_and_timings_leave_the_stats_file_at_every_depth():
    from hublab.cli.index import _split_stats

    built = {"nodes": {"collection": "c", "units": 3, "skipped": False, "evicted": []}, "labels": 5,
             "build_seconds": 1.5, "vectors_written": 3}
    reused = {"nodes": {"collection": "c", "units": 3, "skipped": True}, "labels": 5, "build_seconds": 0.1}
    kept, moved = _split_stats(built)
    assert kept == {"nodes": {"collection": "c", "units": 3}, "labels": 5}
    assert moved == {"nodes.skipped": False, "nodes.evicted": [], "build_seconds": 1.5, "vectors_written": 3}
    assert _split_stats(reused)[0] == kept
