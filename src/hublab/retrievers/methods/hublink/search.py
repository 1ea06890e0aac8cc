"""Vector-store primitives of HubLink retrieval (alg. 10-13) and hub scoring (PRUNEHUBS).

Hits of all query vectors (question + components) at all four levels are merged per path hash, keeping
the best-scoring hit; hub-restricted searches are batched into one filtered query per call.
"""

from __future__ import annotations

import json
import math
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from hublab.scores import round_score
from hublab.vectorstore.base import HitArrays, VectorStore

MAX_LIMIT = 16384
_FIELDS = ["hub_root", "path_hash", "level", "text", "subject"]


@dataclass
class PathHit:
    path_hash: str
    hub_root: str
    score: float
    level: str
    text: str
    subject: str = ""
    support: float = 0.0  # set only to break ties (``HubSearch.break_ties``): Σ over query vectors of the best hit


def _rank_key(h: PathHit) -> tuple[float, float, str]:
    """Best score first, then ``support``, then a stable key (never the store's row order, which an incremental
    re-index changes)."""
    return (-h.score, -h.support, h.path_hash)


@dataclass
class Hub:
    root: str
    paths: dict[str, PathHit] = field(default_factory=dict)
    score: float = 0.0

    def add(self, hit: PathHit) -> None:
        old = self.paths.get(hit.path_hash)
        if old is None or hit.score > old.score or (hit.score == old.score and (hit.level, hit.text) < (old.level,
                                                                                                      old.text)):
            self.paths[hit.path_hash] = hit

    def ranked(self) -> list[PathHit]:
        return sorted(self.paths.values(), key=_rank_key)


def _with(h: PathHit, *, score: float | None = None, support: float | None = None) -> PathHit:
    """``dataclasses.replace`` for the two fields that change, without its per-call introspection."""
    return PathHit(h.path_hash, h.hub_root, h.score if score is None else score, h.level, h.text, h.subject,
                   h.support if support is None else support)


def _arrays(store, collection: str, vectors, limit: int, flt: str, fields: list[str] = _FIELDS) -> list[HitArrays]:
    """The store's hits per query vector as columns (``VectorStore.search_arrays``; duck-typed stores without
    it are adapted from ``search``)."""
    fn = getattr(store, "search_arrays", None)
    if fn is not None:
        return fn(collection, vectors, limit, filter=flt, output_fields=fields)
    return VectorStore.search_arrays(store, collection, vectors, limit, filter=flt, output_fields=fields)


def _text(v) -> str:
    return "" if v is None else v


def _best_per_path(results: list[HitArrays], skip) -> dict[str, tuple]:
    """``Hub.add`` over every hit in order (vector by vector, best first), on plain tuples: per path hash not in
    ``skip`` the hit with the best score, ties to the smaller ``(level, text)``; first-seen order of the paths.
    Values: ``(score, level, text, hub_root, subject)``."""
    best: dict[str, tuple] = {}
    for a in results:
        f = a.fields
        for ph, root, score, level, text, subject in zip(f["path_hash"], f["hub_root"], a.scores.tolist(),
                                                          f["level"], f["text"], f["subject"], strict=True):
            if ph in skip:
                continue
            old = best.get(ph)
            if old is not None:
                if score < old[0]:
                    continue
                level, text = _text(level), _text(text)
                if score == old[0] and (level, text) >= (old[1], old[2]):
                    continue
                best[ph] = (score, level, text, root, subject)
            else:
                best[ph] = (score, _text(level), _text(text), root, subject)
    return best


def _hub_from(root: str, best: dict[str, tuple]) -> Hub:
    return Hub(root, {ph: PathHit(ph, r, sc, lv, tx, sj or "") for ph, (sc, lv, tx, r, sj) in best.items()})


def _ids(ids: list[str]) -> str:
    return "[" + ", ".join(json.dumps(i) for i in ids) + "]"


class HubSearch:
    def __init__(self, store: VectorStore, collection: str, top_paths: int, diversity_penalty: float) -> None:
        self.store = store
        self.collection = collection
        self.top_paths = top_paths
        self.penalty = diversity_penalty
        self._pool: ThreadPoolExecutor | None = None  # created on first use by ``_map`` (server stores only)

    def _search_arrays(self, vectors, limit: int, filter: str) -> list[HitArrays]:
        return _arrays(self.store, self.collection, vectors, min(max(1, limit), MAX_LIMIT), filter)

    def _search_per_vector(self, vectors, limit: int, filter: str) -> list[list[PathHit]]:
        out = []
        for a in self._search_arrays(vectors, limit, filter):
            f = a.fields
            out.append([PathHit(ph, root, score, _text(level), _text(text), subject or "")
                        for ph, root, score, level, text, subject in zip(
                            f["path_hash"], f["hub_root"], a.scores.tolist(), f["level"], f["text"], f["subject"],
                            strict=True)])
        return out

    def _search(self, vectors, limit: int, filter: str) -> list[PathHit]:
        return [h for hits in self._search_per_vector(vectors, limit, filter) for h in hits]

    def break_ties(self, vectors, ranked: list[PathHit], keep: int) -> list[PathHit]:
        """When the cut at ``keep`` falls inside a group of equal best scores, rank that group by ``support``:
        the sum over query vectors of each vector's best hit on the path (one filtered search over the tied
        paths). Why: a question quoting a paper's title scores the title's entity-level row of *every* path of
        that paper 1.0, so the best score alone cannot tell its venue path from its DOI path; the other query
        vectors (question, components) can. The thesis keeps the best hit per path and is silent on ties."""
        if len(ranked) <= keep or ranked[keep - 1].score != ranked[keep].score or self.store is None:
            return ranked
        cut = ranked[keep].score
        tied = [h for h in ranked if h.score == cut]
        flt = f"hub_root == {json.dumps(tied[0].hub_root)} and path_hash in {_ids([h.path_hash for h in tied])}"
        support: dict[str, float] = {}
        for a in _arrays(self.store, self.collection, vectors, min(64 * len(tied), MAX_LIMIT), flt, ["path_hash"]):
            # hits come best first, so a path's first hit is its best: built back to front, the dict keeps it
            best = dict(zip(reversed(a.fields["path_hash"]), reversed(a.scores.tolist()), strict=True))
            for k, v in best.items():
                support[k] = support.get(k, 0.0) + v
        return sorted((_with(h, support=support.get(h.path_hash, 0.0)) if h.score == cut else h for h in ranked),
                      key=_rank_key)

    def global_search(self, vectors, excluded: list[str]) -> dict[str, Hub]:
        """GLOBALSIMILARITYSEARCH: over-fetch 2·TopPathsToKeep per query vector outside ``excluded`` hubs."""
        flt = f"hub_root not in {_ids(excluded)}" if excluded else ""
        hubs: dict[str, Hub] = {}
        for hit in self._search(vectors, 2 * self.top_paths, flt):
            hubs.setdefault(hit.hub_root, Hub(hit.hub_root)).add(hit)
        return hubs

    def paths_for_hub(self, vectors, root: str) -> list[PathHit]:
        """GETHUBPATHSFORHUB (Alg. 9) for one hub: query ``2·TopPathsToKeep`` hits per query vector restricted to
        the hub and outside the path hashes already taken; keep each path's hit with the highest initial score
        (§4.6.2: "only the version of each path with the highest initial similarity score remains"),
        diversity-rank those paths and take them until ``TopPathsToKeep``; repeat while short and the store still
        answers. Every hub with at least ``TopPathsToKeep`` indexed paths thus gets that many."""
        taken: dict[str, PathHit] = {}
        hub_filter = f"hub_root == {json.dumps(root)}"
        while len(taken) < self.top_paths:
            flt = hub_filter + (f" and path_hash not in {_ids(list(taken))}" if taken else "")
            results = self._search_arrays(vectors, 2 * self.top_paths, flt)
            if not any(len(a) for a in results):
                break
            batch = _hub_from(root, _best_per_path(results, taken))
            if not batch.paths:  # the store ignored the exclusion: nothing new will come
                break
            for h in self.break_ties(vectors, self.diversity_rank(batch), self.top_paths - len(taken)):
                if len(taken) >= self.top_paths:
                    break
                taken[h.path_hash] = h
        return list(taken.values())

    def _map(self, fn, items: list) -> list:
        """``fn`` over ``items``, results in ``items``' order; from threads when the store answers searches
        concurrently (a server: each hub's searches are round trips that overlap), else one after another. Each
        hub's work is independent of the others', so the results are the same either way."""
        concurrency = getattr(self.store, "concurrent_searches", None)  # duck-typed test stores may lack it
        workers = min(len(items), concurrency(self.collection)) if concurrency is not None else 1
        if workers <= 1:
            return [fn(x) for x in items]
        if self._pool is None:
            self._pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="hub-search")
        return list(self._pool.map(fn, items))

    def _prefetch(self, roots: list[str]) -> None:
        """Tell the store that hub-restricted searches of ``roots`` follow (``VectorStore.prefetch``: a server
        store fetches their rows in one request instead of one per hub); duck-typed stores may lack it."""
        fn = getattr(self.store, "prefetch", None)
        if fn is not None and roots:
            fn(self.collection, "hub_root", roots)

    def paths_for_hubs(self, vectors, roots: list[str], hubs: dict[str, Hub]) -> None:
        """GETHUBPATHSFORHUB for each of ``roots``: the hub's paths are *replaced* by its own top paths (Alg. 13
        line 11, Alg. 15 line 7). Hubs the store has no path for are left out of ``hubs``."""
        self._prefetch(roots)
        for root, got in zip(roots, self._map(lambda r: self.paths_for_hub(vectors, r), roots), strict=True):
            if got:
                hubs[root] = Hub(root, {h.path_hash: h for h in got})
            else:
                hubs.pop(root, None)

    def fill_or_prune(self, vectors, candidates: dict[str, Hub]) -> dict[str, Hub]:
        """FILLORREMOVEPATHS (Alg. 13) for every candidate hub: fewer than TopPathsToKeep paths → its own top paths
        (GETHUBPATHSFORHUB; dropped when the store has none), more → pruned to TopPathsToKeep."""

        def one(item: tuple[str, Hub]) -> Hub | None:
            root, hub = item
            if len(hub.paths) >= self.top_paths:
                return self.prune_paths(hub, vectors)
            got = self.paths_for_hub(vectors, root)
            return Hub(root, {h.path_hash: h for h in got}) if got else None

        items = list(candidates.items())
        self._prefetch([r for r, _ in items])
        return {r: h for (r, _), h in zip(items, self._map(one, items), strict=True) if h is not None}

    def diversity_rank(self, hub: Hub) -> list[PathHit]:
        """APPLYSUBJECTDIVERSITYRANKER: penalise repeated subjects among triple-level hits, then re-sort."""
        ranked = hub.ranked()
        if self.penalty <= 0:
            return ranked
        counts: dict[str, int] = {}
        adjusted = []
        changed = False
        for h in ranked:
            if h.level == "triple" and h.subject:
                seen = counts.get(h.subject, 0)
                counts[h.subject] = seen + 1
                if seen:  # PathHits are never mutated: an unpenalised hit is passed on as it is
                    h = _with(h, score=round_score(h.score - self.penalty * seen))
                    changed = True
            adjusted.append(h)
        return sorted(adjusted, key=_rank_key) if changed else adjusted

    def prune_paths(self, hub: Hub, vectors=None) -> Hub:
        ranked = self.diversity_rank(hub)
        if vectors is not None:
            ranked = self.break_ties(vectors, ranked, self.top_paths)
        kept = ranked[: self.top_paths]
        out = Hub(hub.root, {h.path_hash: h for h in kept})
        return out


def hub_score(scores: list[float], alpha: float) -> float:
    """Exponentially weighted mean Σ wᵢsᵢ / Σ wᵢ with wᵢ = exp(α·sᵢ) (α = 0: plain mean)."""
    if not scores:
        return float("-inf")
    weights = [math.exp(alpha * s) for s in scores]
    return sum(w * s for w, s in zip(weights, scores, strict=True)) / sum(weights)


def prune_hubs(hubs: dict[str, Hub], alpha: float, keep: int) -> list[Hub]:
    for h in hubs.values():  # rounded: libm's exp may differ in the last bit between C libraries
        h.score = round_score(hub_score([p.score for p in h.paths.values()], alpha))
    return sorted(hubs.values(), key=lambda h: (-h.score, h.root))[:keep]
