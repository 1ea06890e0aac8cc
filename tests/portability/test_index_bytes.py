"""A clean HubLink index build gives byte-identical files: the index is a DVC output, so a fresh clone that
rebuilds it (the quick start) must reproduce the hash in dvc.lock, or `git status` is dirty and `dvc pull` refuses
to overwrite it. The rows' generation tag used to be a clock reading."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from hublab.embedding.hashing import HashingEmbedder
from hublab.graph.rdf import RdfKnowledgeGraph
from hublab.llm.factory import build_llm
from hublab.retrievers.base import Resources
from hublab.retrievers.methods.hublink.hubs import HubDetector, all_hub_roots, hub_paths
from hublab.retrievers.registry import get_retriever_class
from hublab.vectorstore.factory import build_vector_store


def _build(graph, root: Path):
    root.mkdir(parents=True)
    res = Resources(graph=graph, root_entity_ids=["R659055"], embedder=HashingEmbedder(),
                    llm=build_llm({"backend": "none"}), vector_store=build_vector_store(None, root / "index.db"),
                    index_name="g", cache_dir=str(root))
    r = get_retriever_class("hublink")(res)
    r.index(progress=False)
    r.resources.vector_store.close()  # settles the engine's background work, as a process exit does
    return r


def _digest(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file()}


def test_two_clean_builds_are_byte_identical(gv3_orkg_graph, tmp_path):
    det = HubDetector(gv3_orkg_graph, ["Paper"])
    papers = all_hub_roots(gv3_orkg_graph, det, ["R659055"])[:4]
    triples = {t.render(): t for p in papers for hp in hub_paths(gv3_orkg_graph, det, p) for t in hp.triples}
    g = RdfKnowledgeGraph.from_triples(list(triples.values()), name="g")
    a = _build(g, tmp_path / "a")
    _build(g, tmp_path / "b")
    da, db = _digest(tmp_path / "a"), _digest(tmp_path / "b")
    assert len(da) > 3 and da == db
    manifest = json.loads(a.hub_index.manifest_path.read_text())
    assert manifest["builds"] == 1 and manifest["complete"] is True
