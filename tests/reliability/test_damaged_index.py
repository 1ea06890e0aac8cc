"""A damaged index is detected, never searched, and ``hublab index`` builds it again cleanly (issue #45, class 2).

The audit's cases on a real project (10 GV3 papers, HubLink's index built by ``hublab index``): the hub manifest
emptied or cut to zero bytes, rows lost from the collection, one Milvus Lite data file deleted. Before, a run exited
0 searching what was left (Recall@10 1.0 → 0.5, or every metric 0) and ``hublab index`` re-indexed every hub on top
of the old rows (twice the rows). Now each run stops before its first question with one ``error:`` line naming the
index and the command that rebuilds it, and that command leaves exactly the index an uninterrupted build leaves.
An index sidecar cut short (Milvus Lite's per-segment index file, derived from the segment's data file) is not a
damaged index: the run removes it with one ``warning:`` line, the engine builds it again, and the run answers as an
uninterrupted one. Full tier (``indexed_project``: ``hublab`` subprocesses, ~10 s per case)."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from reliability import killing as K


def _empty_manifest(root: Path) -> str:
    K.manifest_file(root).write_text("{}")
    return "its manifest"


def _zero_byte_manifest(root: Path) -> str:
    K.manifest_file(root).write_bytes(b"")
    return "its manifest"


def _lost_rows(root: Path) -> str:
    """One hub's rows deleted behind the manifest's back (what a lost segment leaves)."""
    from hublab.vectorstore.milvus import MilvusVectorStore

    state = json.loads(K.manifest_file(root).read_text())
    hub = sorted(state["hubs"])[0]
    store = MilvusVectorStore(str(K.index_dir(root, "hublink") / "index.db"))
    store.delete(state["collection"], filter=f"hub_root == {json.dumps(hub)}")
    store.close()
    return "rows"


def _lite_file(root: Path, pattern: str) -> Path:
    found = sorted((K.index_dir(root, "hublink") / "index.db" / "collections").rglob(pattern))
    assert found, pattern
    return found[0]


def _lost_data_file(root: Path) -> str:
    _lite_file(root, "*.parquet").unlink()
    return "is missing"


DAMAGES: list[Callable[[Path], str]] = [_empty_manifest, _zero_byte_manifest, _lost_rows, _lost_data_file]


@pytest.mark.parametrize("damage", DAMAGES, ids=[d.__name__.strip("_") for d in DAMAGES])
def test_a_damaged_index_is_refused_then_rebuilt_cleanly(indexed_project: Path, reference_index, damage):
    """Each case without its fix: exit 0 with degraded metrics, or a traceback; then twice the rows (or a
    traceback) after ``hublab index``."""
    said = damage(indexed_project)
    run = subprocess.run(K.cli_args(*K.RUN_ARGS), cwd=indexed_project, env=K.env(indexed_project),
                         capture_output=True, text=True, timeout=240)
    out = run.stdout + run.stderr
    assert run.returncode == 2, out[-3000:]
    assert "Traceback" not in out, out[-3000:]
    errors = [line for line in out.splitlines() if line.startswith("error: ")]
    assert len(errors) == 1 and "damaged" in errors[0] and said in errors[0], out[-3000:]
    assert "hublab index" in errors[0], errors
    built = K.hublab(indexed_project, *K.INDEX_ARGS, "--no-progress")
    assert built.returncode == 0, (built.stdout + built.stderr)[-3000:]
    assert "damaged" in built.stderr and "again from scratch" in built.stderr, built.stderr[-2000:]
    snap = K.index_snapshot(indexed_project)
    assert sorted(snap["rows"]) == sorted(reference_index["rows"])  # no second copy, nothing lost
    assert snap["manifest"] == reference_index["manifest"] and snap["results"] == reference_index["results"]


def test_a_cut_index_sidecar_is_rebuilt_with_a_warning_and_the_run_answers_as_before(indexed_project: Path,
                                                                                    reference_run):
    """Derived data, not a damaged index: one ``warning:`` line naming the sidecar, then the answers, metrics and
    MLflow run of an uninterrupted run; the segment data files untouched."""
    sidecar = _lite_file(indexed_project, "*.idx")
    data = {p: p.read_bytes() for p in (K.index_dir(indexed_project, "hublink") / "index.db").rglob("*.parquet")}
    sidecar.write_bytes(sidecar.read_bytes()[:1000])
    run = K.hublab(indexed_project, *K.RUN_ARGS)
    warned = [line for line in run.stderr.splitlines() if line.startswith("warning: ")]
    assert len(warned) == 1 and "torn index sidecar" in warned[0] and str(sidecar) in warned[0], run.stderr[-3000:]
    assert "Traceback" not in run.stdout + run.stderr
    got = K.run_outcome(indexed_project, run.stdout)
    assert got["records"] == reference_run["records"]
    assert got["metrics"] == reference_run["metrics"]
    assert got["mlflow_metrics"] == reference_run["mlflow_metrics"]
    assert all(p.read_bytes() == raw for p, raw in data.items()) and data
