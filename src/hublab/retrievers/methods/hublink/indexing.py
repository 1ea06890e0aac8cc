"""HubLink indexing (alg. 1-7): hub roots → hub paths → four vector levels in the vector store, with
hash-based incremental updates.

Crash safety: a hub's new rows are inserted (tagged with a new generation) *before* its old rows are
deleted, and the manifest of per-hub path hashes is written atomically after each batch. Before a batch
touches the store its hubs are recorded as ``unsettled`` in the manifest (and dropped from its committed
hubs); a kill leaves either the old or both generations of those hubs in the store — retrieval deduplicates
by path hash, so the previous index stays usable — and the next run re-indexes every unsettled hub still in
the graph and deletes the rows of those no longer in it, whatever the graph looks like by then (kill -9
tests: tests/reliability/).

Damage: a complete build records the collection's row count in the manifest. Before the first question the
manifest is checked against the store (readable, for this collection, the recorded row count); a mismatch (a lost
data file, an emptied or foreign manifest) is a one-line error naming the index, never a search over it, and
``hublab index`` drops such a collection and builds it again from scratch instead of adding a second copy of every
row to it.

PATHTOTEXT: with ``llm_path_text`` and a real LLM, each path is verbalised by the LLM (the thesis's Alg. 6),
in parallel, and the text is cached on disk by (model, prompt version, path hash), so it is paid once per path
and graph version; the model and prompt version are part of the index fingerprint, so changing them (or
switching ``llm_path_text``) builds a new collection. Otherwise (the LLM-free default) the template verbaliser
(``_path_text.py``).
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hublab.atomic import write_text_atomic
from hublab.embedding.base import Embedder
from hublab.graph.base import KnowledgeGraph
from hublab.graph.model import Triple
from hublab.llm.base import LLM, llm_free
from hublab.retrievers.methods.hublink import prompts
from hublab.retrievers.methods.hublink._path_text import PathTexts
from hublab.retrievers.methods.hublink.hubs import HubDetector, HubPath, all_hub_roots, hub_paths
from hublab.retrievers.methods.hublink.text import triple_text
from hublab.vectorstore.base import DamagedIndex, VectorStore

LEVELS = ("path", "triple", "entity", "predicate")
log = logging.getLogger(__name__)


def _q(s: str) -> str:
    return json.dumps(s)


@dataclass
class IndexSettings:
    hub_types: list[str]
    indexing_root_entity_ids: list[str]
    max_hub_path_length: int
    llm_path_text: bool

    def fingerprint(self, embedder: Embedder, llm: LLM | None = None) -> str:
        """Identifies what the index holds. ``llm_path_text`` counts only when an LLM will really verbalise the
        paths (LLM-free, the template texts are the same whatever the flag says); then the model and the prompt
        version are part of it too."""
        llm_text = self.llm_path_text and not llm_free(llm)
        parts: list[Any] = [self.hub_types, self.indexing_root_entity_ids, self.max_hub_path_length, llm_text,
                            embedder.vectors_id, embedder.dim]
        if llm_text:
            parts.append([getattr(llm, "model", "?"), prompts.PATH_TO_TEXT_VERSION])
        blob = json.dumps(parts, sort_keys=True)
        return hashlib.sha256(blob.encode()).hexdigest()[:12]


class HubIndex:
    """The vector-store side of HubLink: build/update and the path records needed at query time."""

    def __init__(self, graph: KnowledgeGraph, embedder: Embedder, store: VectorStore, llm: LLM | None,
                 settings: IndexSettings, collection: str, manifest_dir: Path, *, workers: int = 8) -> None:
        self.graph = graph
        self.embedder = embedder
        self.store = store
        self.llm = llm
        self.settings = settings
        self.workers = max(1, int(workers))
        self.detector = HubDetector(graph, settings.hub_types)
        self.collection = f"{collection}_{settings.fingerprint(embedder, llm)}"
        self.manifest_path = manifest_dir / f"{self.collection}.manifest.json"
        self._builds = 0  # builds that wrote rows (the manifest's ``builds``; set by ``build``)
        self._manifest_cache: tuple[tuple[int, int, int], dict[str, list[str]]] | None = None
        self._paths: dict[str, dict[str, Any]] | None = None
        self._hub_paths_loaded: set[str] = set()
        self._by_hub: dict[str, dict[str, dict[str, Any]]] = {}  # hub_root -> path_hash -> record (same objects)
        self.path_texts = PathTexts(llm, settings.llm_path_text, manifest_dir, workers=self.workers)
        self.llm_path_text = self.path_texts.enabled

    # ---------------- manifest ----------------
    def _read_manifest(self) -> dict[str, Any]:
        """The manifest, ``{}`` when there is none; raises ValueError when it is not one this class wrote."""
        if not self.manifest_path.exists():
            return {}
        try:
            state = json.loads(self.manifest_path.read_text(encoding="utf-8"))
        except (UnicodeDecodeError, ValueError) as exc:
            raise ValueError(f"not JSON ({exc})") from None
        if not isinstance(state, dict) or state.get("collection") != self.collection:
            raise ValueError(f"not the manifest of {self.collection}")
        return state

    def manifest_key(self) -> tuple[int, int, int] | None:
        """The manifest file's identity (inode, mtime, size): every save replaces it; None when there is none."""
        try:
            st = self.manifest_path.stat()
        except OSError:
            return None
        return st.st_ino, st.st_mtime_ns, st.st_size

    def manifest(self) -> dict[str, list[str]]:
        """Committed hubs → sorted path hashes (hubs whose store rows match). Read-only for callers: parsed once
        per version of the file (keyed by its stat; every save replaces the file), not once per question."""
        key = self.manifest_key()
        if key is None:
            return {}
        cached = self._manifest_cache
        if cached is None or cached[0] != key:
            cached = (key, self._read_manifest().get("hubs", {}))
            self._manifest_cache = cached
        return cached[1]

    def _save_manifest(self, hubs: dict[str, list[str]], unsettled: set[str] | None = None, *,
                       complete: bool = False) -> None:
        """Atomic (write + rename). ``complete`` is true only in the save that ends a whole build, so an
        interrupted build (even one killed between two batches, with nothing unsettled) is never taken as built."""
        write_text_atomic(self.manifest_path, json.dumps(self._state(hubs, unsettled, complete)))

    def _state(self, hubs: dict[str, list[str]], unsettled: set[str] | None, complete: bool) -> dict[str, Any]:
        state = {"collection": self.collection, "hubs": hubs, "unsettled": sorted(unsettled or ()),
                 "complete": complete, "builds": self._builds}
        if complete:  # what the store holds once built: checked before every use (``problem``)
            state["rows"] = self.store.count(self.collection)
        return state

    def build_state(self) -> str | None:
        """None when the index is completely built and its store matches its manifest; else why not (for the error
        a run prints). A manifest from before the ``complete`` flag counts as built when nothing is unsettled."""
        problem = self.problem()
        return problem[0] if problem else None

    def problem(self) -> tuple[str, bool] | None:
        """(why the index cannot be searched, whether it is damaged rather than unbuilt or interrupted), or None."""
        if not self.manifest_path.exists():
            return f"index {self.collection} not built (no manifest {self.manifest_path})", False
        if not self.store.has_collection(self.collection):
            return f"index {self.collection}: the manifest exists but the vector collection does not", False
        try:
            state = self._read_manifest()
        except (OSError, ValueError) as exc:
            return f"index {self.collection} is damaged: its manifest {self.manifest_path} is {exc}", True
        unsettled, hubs = state.get("unsettled") or [], state.get("hubs") or {}
        if unsettled or not state.get("complete", bool(hubs)):
            return (f"index {self.collection} is incomplete (an interrupted build): {len(hubs)} hubs committed, "
                    f"{len(unsettled)} unsettled"), False
        rows = state.get("rows")
        try:
            held = self.store.count(self.collection) if rows is not None else None
        except DamagedIndex as exc:  # the store cannot load it (a Lite data file the engine cannot read)
            return f"index {self.collection} is damaged: {exc.where} {exc.what}", True
        if held != rows:
            return (f"index {self.collection} is damaged: its vector collection holds {held} rows, its manifest "
                    f"{self.manifest_path} records {rows}"), True
        return None

    def _void_collection(self) -> str | None:
        """Why the stored collection cannot be built upon (damaged, or rows without a manifest), or None."""
        if not self.manifest_path.exists():
            return f"index {self.collection}: a vector collection without its manifest {self.manifest_path}"
        problem = self.problem()
        return problem[0] if problem and problem[1] else None

    def is_built(self) -> bool:
        return self.build_state() is None

    # ---------------- PATHTOTEXT (``PathTexts``) ----------------
    def path_text(self, triples: tuple[Triple, ...] | list[Triple]) -> tuple[str, str | None]:
        """PATHTOTEXT for one path (:meth:`PathTexts.text`): the answer step shares the index's text cache."""
        return self.path_texts.text(triples)

    def save_text_cache(self) -> None:
        self.path_texts.save()

    # ---------------- build ----------------
    def _rows(self, paths: list[HubPath], gen: str) -> tuple[list[str], list[dict[str, Any]], int]:
        texts: list[str] = []
        rows: list[dict[str, Any]] = []
        ptexts, n_fallbacks = self.path_texts.texts(paths)
        for p, ptext in zip(paths, ptexts, strict=True):
            h = p.hash
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
        return texts, rows, n_fallbacks

    def build(self, *, progress: bool = True, batch_hubs: int | None = None) -> dict[str, Any]:
        """Index new/changed hubs in batches of ``batch_hubs`` (default ``$HUBLAB_INDEX_BATCH_HUBS`` or 64); each
        batch is one commit (rows inserted, stale rows deleted, manifest saved)."""
        t0 = time.perf_counter()
        batch_hubs = max(1, int(batch_hubs or os.environ.get("HUBLAB_INDEX_BATCH_HUBS") or 64))
        had_collection = self.store.has_collection(self.collection)
        if had_collection and (void := self._void_collection()):  # rebuilt, never topped up with a second copy
            log.warning("%s: dropping the collection and building it again from scratch", void)
            self.store.drop_collection(self.collection)
            had_collection = False
        self.store.ensure_collection(self.collection, self.embedder.dim, "COSINE", keys=("hub_root", "path_hash"))
        state = self._read_manifest() if had_collection else {}  # a manifest without its collection is void
        old: dict[str, list[str]] = state.get("hubs", {})
        unsettled: set[str] = set(state.get("unsettled", []))  # rows may not match the manifest (killed batch)
        had_rows = set(old) | unsettled  # hubs that may have rows in the store
        roots = all_hub_roots(self.graph, self.detector, self.settings.indexing_root_entity_ids)
        root_set = set(roots)
        hubs = {r: v for r, v in old.items() if r in root_set and r not in unsettled}
        # a hub's paths are made when its batch is indexed, never all at once (memory would grow with the graph); a
        # hub the manifest already holds is walked once more first, to tell by its paths' hashes whether it changed
        changed = [r for r in roots if r not in hubs or sorted(p.hash for p in self._paths_of(r)) != hubs[r]]
        # The rows' generation tag: the number of builds that wrote rows, not a clock, so that a clean build gives
        # byte-identical index files on every run and machine (a DVC output whose hash a fresh clone's quick start
        # reproduces); a resumed or incremental build is the next number, so older rows are still told apart.
        self._builds = int(state.get("builds", 0)) + (1 if changed else 0)
        gen = hashlib.sha256(f"{self.collection}:{self._builds}".encode()).hexdigest()[:10]
        removed = sorted(r for r in set(old) | unsettled if r not in root_set)
        if removed:  # first, so that a later kill cannot lose them
            self._save_manifest(hubs, unsettled | set(removed))
            ids = ", ".join(_q(r) for r in removed)
            self.store.delete(self.collection, filter=f"hub_root in [{ids}]")
            unsettled -= set(removed)
            self._save_manifest(hubs, unsettled)
        n_vectors = 0
        n_text_fallbacks = 0
        from hublab.progress import build_bar, up_to_date

        if not changed and not removed:
            up_to_date(progress, f"HubLink index {self.collection}: {len(roots)} hubs",
                       f"{self.manifest_path.parent}")
        # LLM path texts: the calls are counted up front for the bar, so those builds (one call a path: small
        # graphs) make their hubs' paths first
        ahead = {r: self._paths_of(r) for r in changed} if self.path_texts.enabled else {}
        llm_todo = self.path_texts.llm_calls_todo(changed, ahead)  # the PATHTOTEXT calls this build will make
        with build_bar(progress and bool(changed), f"HubLink index {self.collection}", len(changed), unit="hubs",
                       llm_calls=sum(llm_todo.values())) as advance:
            for i in range(0, len(changed), batch_hubs):
                batch = changed[i : i + batch_hubs]
                unsettled |= set(batch)
                for r in batch:
                    hubs.pop(r, None)
                self._save_manifest(hubs, unsettled)
                current = {r: ahead.pop(r) if r in ahead else self._paths_of(r) for r in batch}
                n_written, n_fb = self._write_batch(current, gen, had_rows)
                n_vectors += n_written
                n_text_fallbacks += n_fb
                for r in batch:
                    hubs[r] = sorted(p.hash for p in current[r])
                unsettled -= set(batch)
                self._save_manifest(hubs, unsettled)
                advance(len(batch), llm_calls=sum(llm_todo.get(r, 0) for r in batch))
        if changed or removed:  # once per build: a server seals and indexes a segment per flush
            self.store.flush(self.collection)
        if unsettled or self._read_manifest() != self._state(hubs, unsettled, True):  # the one save that marks it
            self._save_manifest(hubs, unsettled, complete=not unsettled)  # built (skipped if it is)
        self._paths = None
        secs = time.perf_counter() - t0
        return {"collection": self.collection, "hubs": len(roots), "hubs_reindexed": len(changed),
                "hubs_removed": len(removed), "paths": sum(len(v) for v in hubs.values()),
                "vectors_written": n_vectors, "seconds": round(secs, 2),
                "llm_path_text": self.llm_path_text, "path_text_fallbacks": n_text_fallbacks,
                "vectors_per_s": round(n_vectors / secs, 1) if secs > 0 else None}

    def _paths_of(self, root: str) -> list[HubPath]:
        return hub_paths(self.graph, self.detector, root, self.settings.max_hub_path_length)

    def _write_batch(self, current: dict[str, list[HubPath]], gen: str, had_rows: set[str]) -> tuple[int, int]:
        """Insert the rows of a batch's hubs (``current``: hub -> its paths), then delete the older generation's rows
        of those that had rows; returns (vectors written, path-text fallbacks)."""
        texts, rows, n_fb = self._rows([p for paths in current.values() for p in paths], gen)
        if rows:
            self.store.insert(self.collection, self.embedder.embed(texts), rows)
        # Only hubs that had rows before need their old generation removed: a fresh hub has none, and a filtered
        # delete scans the whole collection (quadratic over a cold build of a large graph).
        stale = [r for r in current if r in had_rows]
        if stale:
            ids = ", ".join(_q(r) for r in stale)
            self.store.delete(self.collection, filter=f'hub_root in [{ids}] and gen != "{gen}"')
        return len(rows), n_fb

    # ---------------- query-time data ----------------
    #: Up to this many indexed paths, the answer step's path records are loaded at once (one pass over the store);
    #: above, per answered hub (memory ~2 KB per path record: GV3 ×100 has 351k paths).
    EAGER_PATH_RECORDS_MAX = 50_000
    #: Rows per store query (Milvus caps offset + limit at 16,384 by default).
    QUERY_LIMIT = 16_384

    def path_records(self, roots: list[str] | None = None) -> dict[str, dict[str, Any]]:
        """path_hash → {hub_root, path_text, triples} for the hubs ``roots`` (all committed hubs if None). Chosen by
        size: a small index's records are all loaded on first use; a large one's are fetched per hub on first use
        and kept, so memory grows with the hubs answered, not with the graph. Queries are split by hubs until no
        answer reaches the store's query limit (one query of the whole index truncated beyond 16,384 paths)."""
        manifest = self.manifest() if self._paths is None or roots is None else {}
        if self._paths is None:
            self._paths = {}
            self._by_hub = {}
            self._hub_paths_loaded.clear()
            if roots is None or sum(len(v) for v in manifest.values()) <= self.EAGER_PATH_RECORDS_MAX:
                self._load_paths(sorted(manifest))
        wanted = list(manifest) if roots is None else list(roots)
        todo = sorted({r for r in wanted if r not in self._hub_paths_loaded})
        if todo:
            self._load_paths(todo)
        if roots is None:
            return dict(self._paths)
        out: dict[str, dict[str, Any]] = {}
        for r in dict.fromkeys(wanted):  # per hub, not a scan of every loaded path
            out.update(self._by_hub.get(r, {}))
        return out

    def _load_paths(self, roots: list[str]) -> None:
        assert self._paths is not None
        if not roots:
            return
        limit = self.QUERY_LIMIT
        flt = f'level == "path" and hub_root in [{", ".join(map(_q, roots))}]'
        rows = self.store.query(self.collection, filter=flt,
                                output_fields=["hub_root", "path_hash", "path_text", "triples"], limit=limit)
        if len(rows) >= limit and len(roots) > 1:  # may be cut by the limit: split the chunk
            half = len(roots) // 2
            self._load_paths(roots[:half])
            self._load_paths(roots[half:])
            return
        if len(rows) >= limit:
            import logging

            logging.getLogger(__name__).warning("hub %s has >= %d paths: its path records may be incomplete",
                                                roots[0], limit)
        for r in rows:
            rec = {"hub_root": r["hub_root"], "path_text": r.get("path_text", ""),
                   "triples": json.loads(r.get("triples") or "[]")}
            self._paths[r["path_hash"]] = rec
            self._by_hub.setdefault(r["hub_root"], {})[r["path_hash"]] = rec
        self._hub_paths_loaded.update(roots)
