"""HubLink indexing (alg. 1-7): hub roots → hub paths → four vector levels in the vector store, with
hash-based incremental updates.

Crash safety: a hub's new rows are inserted (tagged with a new generation) *before* its old rows are
deleted, and the manifest of per-hub path hashes is written atomically after each batch. Before a batch
touches the store its hubs are recorded as ``unsettled`` in the manifest (and dropped from its committed
hubs); a kill leaves either the old or both generations of those hubs in the store — retrieval deduplicates
by path hash, so the previous index stays usable — and the next run re-indexes every unsettled hub still in
the graph and deletes the rows of those no longer in it, whatever the graph looks like by then (kill -9
tests: tests/reliability/).
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hublab.embedding.base import Embedder
from hublab.graph.base import KnowledgeGraph
from hublab.llm.base import LLM, llm_free
from hublab.retrievers.methods.hublink import prompts
from hublab.retrievers.methods.hublink.hubs import HubDetector, HubPath, all_hub_roots, hub_paths
from hublab.retrievers.methods.hublink.text import path_to_text, triple_text
from hublab.vectorstore.base import VectorStore

LEVELS = ("path", "triple", "entity", "predicate")


def _q(s: str) -> str:
    return json.dumps(s)


@dataclass
class IndexSettings:
    hub_types: list[str]
    indexing_root_entity_ids: list[str]
    max_hub_path_length: int
    llm_path_text: bool

    def fingerprint(self, embedder: Embedder) -> str:
        blob = json.dumps([self.hub_types, self.indexing_root_entity_ids, self.max_hub_path_length,
                           self.llm_path_text, embedder.name, embedder.dim], sort_keys=True)
        return hashlib.sha256(blob.encode()).hexdigest()[:12]


class HubIndex:
    """The vector-store side of HubLink: build/update and the path records needed at query time."""

    def __init__(self, graph: KnowledgeGraph, embedder: Embedder, store: VectorStore, llm: LLM | None,
                 settings: IndexSettings, collection: str, manifest_dir: Path) -> None:
        self.graph = graph
        self.embedder = embedder
        self.store = store
        self.llm = llm
        self.settings = settings
        self.detector = HubDetector(graph, settings.hub_types)
        self.collection = f"{collection}_{settings.fingerprint(embedder)}"
        self.manifest_path = manifest_dir / f"{self.collection}.manifest.json"
        self._paths: dict[str, dict[str, Any]] | None = None

    # ---------------- manifest ----------------
    def _read_manifest(self) -> dict[str, Any]:
        if self.manifest_path.exists():
            return json.loads(self.manifest_path.read_text())
        return {}

    def manifest(self) -> dict[str, list[str]]:
        """Committed hubs → sorted path hashes (hubs whose store rows match)."""
        return self._read_manifest().get("hubs", {})

    def _save_manifest(self, hubs: dict[str, list[str]], unsettled: set[str] | None = None) -> None:
        self.manifest_path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.manifest_path.with_suffix(".tmp")
        tmp.write_text(json.dumps({"collection": self.collection, "hubs": hubs,
                                   "unsettled": sorted(unsettled or ())}))
        tmp.replace(self.manifest_path)

    def is_built(self) -> bool:
        return self.manifest_path.exists() and self.store.has_collection(self.collection)

    # ---------------- build ----------------
    def _path_text(self, p: HubPath) -> str:
        if self.settings.llm_path_text and not llm_free(self.llm):
            r = self.llm.complete(prompts.PATH_TO_TEXT.format(path="\n".join(p.rendered())), max_tokens=200)
            if r.error is None and r.text.strip():
                return r.text.strip()
        return path_to_text(p.triples)

    def _rows(self, paths: list[HubPath], gen: str) -> tuple[list[str], list[dict[str, Any]]]:
        texts: list[str] = []
        rows: list[dict[str, Any]] = []
        for p in paths:
            h = p.hash
            ptext = self._path_text(p)
            base = {"hub_root": p.root, "path_hash": h, "gen": gen}
            items: list[tuple[str, str, str]] = [("path", ptext, "")]
            seen: set[tuple[str, str]] = set()
            for t in p.triples:
                for level, text in (("triple", triple_text(t)), ("entity", t.subject.text),
                                    ("entity", t.object.text), ("predicate", t.predicate)):
                    if (level, text) not in seen and text:
                        seen.add((level, text))
                        items.append((level, text, t.subject.uid if level == "triple" else ""))
            for level, text, subject in items:
                texts.append(text)
                row = dict(base, level=level, text=text[:2000], subject=subject)
                if level == "path":
                    row["path_text"] = ptext[:4000]
                    row["triples"] = json.dumps(p.rendered())
                rows.append(row)
        return texts, rows

    def build(self, *, progress: bool = True, batch_hubs: int | None = None) -> dict[str, Any]:
        """Index new/changed hubs in batches of ``batch_hubs`` (default ``$HUBLAB_INDEX_BATCH_HUBS`` or 16); each
        batch is one commit (rows inserted, stale rows deleted, manifest saved)."""
        t0 = time.perf_counter()
        batch_hubs = max(1, int(batch_hubs or os.environ.get("HUBLAB_INDEX_BATCH_HUBS") or 16))
        had_collection = self.store.has_collection(self.collection)
        self.store.ensure_collection(self.collection, self.embedder.dim, "COSINE")
        state = self._read_manifest() if had_collection else {}  # a manifest without its collection is void
        old: dict[str, list[str]] = state.get("hubs", {})
        unsettled: set[str] = set(state.get("unsettled", []))  # rows may not match the manifest (killed batch)
        roots = all_hub_roots(self.graph, self.detector, self.settings.indexing_root_entity_ids)
        current: dict[str, list[HubPath]] = {r: hub_paths(self.graph, self.detector, r,
                                                          self.settings.max_hub_path_length) for r in roots}
        hubs = {r: v for r, v in old.items() if r in current and r not in unsettled}
        changed = [r for r in roots if sorted(p.hash for p in current[r]) != hubs.get(r)]
        removed = sorted(r for r in set(old) | unsettled if r not in current)
        if removed:  # first, so that a later kill cannot lose them
            self._save_manifest(hubs, unsettled | set(removed))
            ids = ", ".join(_q(r) for r in removed)
            self.store.delete(self.collection, filter=f"hub_root in [{ids}]")
            unsettled -= set(removed)
            self._save_manifest(hubs, unsettled)
        gen = hashlib.sha256(str(time.time_ns()).encode()).hexdigest()[:10]
        n_vectors = 0
        from rich.progress import Progress

        with Progress(disable=not progress) as bar:
            task = bar.add_task(f"indexing {len(changed)} of {len(roots)} hubs", total=len(changed))
            for i in range(0, len(changed), batch_hubs):
                batch = changed[i : i + batch_hubs]
                unsettled |= set(batch)
                for r in batch:
                    hubs.pop(r, None)
                self._save_manifest(hubs, unsettled)
                paths = [p for r in batch for p in current[r]]
                texts, rows = self._rows(paths, gen)
                if rows:
                    self.store.insert(self.collection, self.embedder.embed(texts), rows)
                    n_vectors += len(rows)
                ids = ", ".join(_q(r) for r in batch)
                self.store.delete(self.collection, filter=f'hub_root in [{ids}] and gen != "{gen}"')
                for r in batch:
                    hubs[r] = sorted(p.hash for p in current[r])
                unsettled -= set(batch)
                self._save_manifest(hubs, unsettled)
                bar.advance(task, len(batch))
        if not self.manifest_path.exists():
            self._save_manifest(hubs, unsettled)
        self._paths = None
        secs = time.perf_counter() - t0
        return {"collection": self.collection, "hubs": len(roots), "hubs_reindexed": len(changed),
                "hubs_removed": len(removed), "paths": sum(len(v) for v in current.values()),
                "vectors_written": n_vectors, "seconds": round(secs, 2),
                "vectors_per_s": round(n_vectors / secs, 1) if secs > 0 else None}

    # ---------------- query-time data ----------------
    def path_records(self) -> dict[str, dict[str, Any]]:
        """path_hash → {hub_root, path_text, triples}, loaded once per process."""
        if self._paths is None:
            rows = self.store.query(self.collection, filter='level == "path"',
                                    output_fields=["hub_root", "path_hash", "path_text", "triples"])
            self._paths = {r["path_hash"]: {"hub_root": r["hub_root"], "path_text": r.get("path_text", ""),
                                            "triples": json.loads(r.get("triples") or "[]")} for r in rows}
        return self._paths
