"""kill -9 during ``hublab index`` (HubLink, LLM-free pipeline, 10 real GV3 papers): after SIGKILLs at five
points of the build — each rerun resuming from the previous kill's state — a final rerun must leave exactly the
index an uninterrupted build leaves: same manifest, same rows (none duplicated, none stale), same retrieval."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

from reliability import killing as K


def _assert_clean(snap: dict) -> None:
    rows = snap["rows"]
    per_unit = Counter((r[0], r[1], r[2], r[3]) for r in rows)  # (hub_root, path_hash, level, text)
    assert max(per_unit.values()) == 1, [k for k, n in per_unit.items() if n > 1][:5]
    paths = Counter((r[0], r[1]) for r in rows if r[2] == "path")
    assert max(paths.values()) == 1
    indexed = {(h, p) for h, hashes in snap["manifest"].items() for p in hashes}
    assert set(paths) == indexed, "store and manifest disagree (stale or missing hub paths)"


def test_reference_index_is_clean(reference_index):
    _assert_clean(reference_index)
    assert len(reference_index["manifest"]) == K.N_PAPERS
    assert all(r["contexts"] for r in reference_index["results"])


def test_index_killed_at_five_points_then_rerun_equals_uninterrupted_build(fresh_project: Path, reference_index):
    root = fresh_project
    db = K.index_dir(root, "hublink") / "index.db"
    points = [
        ("before the first commit (Milvus file open, no manifest)",
         lambda: db.exists() and K.manifest_file(root) is None),
        ("after 2 hubs committed", lambda: K.committed_hubs(root) >= 2),
        ("after 5 hubs committed", lambda: K.committed_hubs(root) >= 5),
        ("after 8 hubs committed", lambda: K.committed_hubs(root) >= 8),
        ("after the last commit (stats, exit)", lambda: K.committed_hubs(root) >= K.N_PAPERS),
    ]
    seen: list[dict] = []
    for i, (label, ready) in enumerate(points):
        proc = K.spawn(root, *K.INDEX_ARGS, log=root / f"index-kill-{i}.log")
        before = K.committed_hubs(root)
        killed = K.kill_when(proc, ready)
        assert killed, f"{label}: the build finished before the kill point"
        committed = K.manifest(root)
        seen.append({"point": label, "hubs_before": before, "hubs_after_kill": len(committed)})
        # the manifest is replaced atomically: always complete JSON, and only ever grows on an unchanged graph
        if K.manifest_file(root) is not None:
            json.loads(K.manifest_file(root).read_text())
        assert set(committed) <= set(reference_index["manifest"])
        for hub, hashes in committed.items():
            assert hashes == reference_index["manifest"][hub], f"{label}: hub {hub} committed with other paths"
    rerun = K.hublab(root, *K.INDEX_ARGS)
    done = _stats(rerun.stdout)
    assert done["hubs"] == K.N_PAPERS and done["hubs_reindexed"] == 0, (seen, done)  # killed after the last commit
    assert f"{K.N_PAPERS} hubs up to date" in rerun.stderr and "0/0" not in rerun.stderr  # said, not a bar at 0 of N
    snap = K.index_snapshot(root)
    _assert_clean(snap)
    assert snap["collection"] == reference_index["collection"]
    assert snap["collections"] == reference_index["collections"]
    assert snap["manifest"] == reference_index["manifest"], seen
    assert len(snap["rows"]) == len(reference_index["rows"]), seen
    assert Counter(snap["rows"]) == Counter(reference_index["rows"])
    assert snap["results"] == reference_index["results"]


def _stats(stdout: str) -> dict:
    return json.loads(stdout[stdout.index("{"):])


def test_index_update_killed_between_insert_and_commit_then_graph_reverted(fresh_project: Path, base_project,
                                                                           reference_index, gv3_orkg_graph):
    """The graph changes (paper 0 loses a triple, an 11th paper appears); the update is killed right after the new
    rows are inserted, before the old ones are deleted and the manifest is saved (HUBLAB_KILL_AT=delete:1, one
    batch). The graph then goes back to what it was and ``hublab index`` reruns: the index must be the
    reference again — no rows of the never-committed 11th paper, none of paper 0's uncommitted paths."""
    import shutil

    from hublab.graph.rdf import RdfKnowledgeGraph

    root = fresh_project
    shutil.copytree(base_project / "models", root / "models")
    snapshot = root / "data/snapshots/gv3_orkg.ttl"
    original = snapshot.read_bytes()
    triples = K.paper_triples(gv3_orkg_graph, K.N_PAPERS + 1)
    paper0 = sorted(reference_index["manifest"])[0]
    drop = next(k for k, t in triples.items() if t.subject.uid == paper0 and t.predicate != "research field")
    changed = [t for k, t in triples.items() if k != drop]
    RdfKnowledgeGraph.from_triples(changed, name=K.GRAPH).save(snapshot)
    K.hublab(root, *K.INDEX_ARGS, HUBLAB_INDEX_BATCH_HUBS="", HUBLAB_KILL_AT="delete:1")
    snapshot.write_bytes(original)
    done = _stats(K.hublab(root, *K.INDEX_ARGS).stdout)
    snap = K.index_snapshot(root)
    assert snap["manifest"] == reference_index["manifest"], done
    _assert_clean(snap)
    assert Counter(snap["rows"]) == Counter(reference_index["rows"]), done
    # retrieval does not depend on the rows' physical order: the re-indexed hub's rows are appended at the end,
    # and equal scores are ordered by content (vectorstore/exact.py tie_ranks), not by row position
    assert snap["results"] == reference_index["results"], done
