"""Remap thesis golden triples onto a rebuilt graph whose ids differ (thesis §7.3.5 did the same with ids).

A golden triple ``(R1:subject, predicate, L2:object)`` is matched by its labels ``(subject, predicate,
object)`` inside the subgraphs of the question's source papers, which are found by DOI (``source_ids``),
looking first in the paper its thesis id belongs to (:class:`IdHints`). Fallbacks, each counted in the report:
whitespace/case-normalised labels, then the whole graph.

Ambiguity (several label-equal candidates, e.g. two ``Evaluation Method Entity -Name-> Case Study`` under
one paper, or the same method in several source papers) is resolved per question by a small constraint
search: distinct golden triples get distinct target triples, and the golden triples' node ids must map
consistently and one-to-one onto target node ids (two golden triples sharing a subject id land on one
target subject). A candidate whose rendered string equals the golden string is tried first, so remapping
a graph onto itself is the identity. If no assignment satisfies the id constraints (a rebuilt graph may
share nodes the thesis graph did not), only distinctness is kept.

Unmapped entries stay in ``golden_triples`` as their original strings, so |G| (recall's denominator) equals
the thesis's; they are listed in ``unmapped_golden_triples``. The thesis's ``'None'`` placeholders are
unmappable by construction and are reported separately from real mapping failures.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field, replace
from typing import Any

from hublab.datasets.id_hints import IdHints
from hublab.datasets.kgqa_csv import MISSING_TRIPLE
from hublab.datasets.model import QAPair
from hublab.graph.base import PAPER_TYPE, KnowledgeGraph
from hublab.graph.model import ParsedTriple, Triple, TripleParseError, parse_triple_string
from hublab.graph.snapshot import paper_subgraph

SEARCH_BUDGET = 200_000

Key = tuple[str, str, str]


def _norm(s: str) -> str:
    return " ".join(s.split()).casefold()


def _key(t: Triple | ParsedTriple) -> Key:
    if isinstance(t, Triple):
        return (t.subject.text, t.predicate, t.object.text)
    return (t.subject_label, t.predicate, t.object_label)


def _nkey(k: Key) -> Key:
    return (_norm(k[0]), _norm(k[1]), _norm(k[2]))


@dataclass
class _Index:
    exact: dict[Key, list[Triple]] = field(default_factory=lambda: defaultdict(list))
    norm: dict[Key, list[Triple]] = field(default_factory=lambda: defaultdict(list))

    def add(self, t: Triple) -> None:
        k = _key(t)
        self.exact[k].append(t)
        self.norm[_nkey(k)].append(t)


@dataclass
class RemapStats:
    """Per-dataset mapping counts; ``rate`` excludes the thesis's ``'None'`` placeholders."""

    dataset: str
    graph: str
    questions: int = 0
    total: int = 0
    placeholders: int = 0
    mapped: int = 0
    exact: int = 0
    normalized: int = 0
    outside_source_papers: int = 0
    relaxed_questions: int = 0
    in_hinted_paper: int = 0
    topic_remapped: int = 0
    unmapped: list[dict[str, Any]] = field(default_factory=list)
    topic_unmapped: list[dict[str, Any]] = field(default_factory=list)
    missing_dois: list[dict[str, Any]] = field(default_factory=list)

    @property
    def mappable(self) -> int:
        return self.total - self.placeholders

    @property
    def rate(self) -> float:
        return self.mapped / self.mappable if self.mappable else 1.0

    @property
    def rate_all(self) -> float:
        return self.mapped / self.total if self.total else 1.0

    def to_dict(self) -> dict[str, Any]:
        return {
            "dataset": self.dataset,
            "graph": self.graph,
            "questions": self.questions,
            "golden_total": self.total,
            "thesis_placeholders": self.placeholders,
            "mapped": self.mapped,
            "mapping_rate": round(self.rate, 6),
            "mapping_rate_incl_placeholders": round(self.rate_all, 6),
            "exact_label_matches": self.exact,
            "normalized_label_matches": self.normalized,
            "matched_in_hinted_paper": self.in_hinted_paper,
            "matched_outside_source_papers": self.outside_source_papers,
            "questions_with_relaxed_id_constraints": self.relaxed_questions,
            "topic_entities_remapped": self.topic_remapped,
            "unmapped": self.unmapped,
            "topic_unmapped": self.topic_unmapped,
            "missing_dois": self.missing_dois,
        }


class Remapper:
    """Maps golden triple strings of another graph onto ``kg`` by labels and structure."""

    def __init__(self, kg: KnowledgeGraph) -> None:
        self.kg = kg
        self.out_edges: dict[str, list[Triple]] = defaultdict(list)
        self.global_index = _Index()
        self.dois: dict[str, list[str]] = defaultdict(list)
        for t in kg.triples():
            self.out_edges[t.subject.uid].append(t)
            self.global_index.add(t)
            if t.predicate == "doi" and PAPER_TYPE in t.subject.types:
                self.dois[t.object.text.strip().lower()].append(t.subject.uid)
        self._papers: dict[str, _Index] = {}

    # ---------------- lookup ----------------
    def papers_for(self, dois: list[str]) -> tuple[list[str], list[str]]:
        """Paper ids for DOIs (source order, unique) and the DOIs not found."""
        found: dict[str, None] = {}
        missing = []
        for d in dois:
            ids = self.dois.get(d.strip().lower())
            if not ids:
                missing.append(d)
            for pid in ids or ():
                found.setdefault(pid)
        return list(found), missing

    def _paper_index(self, pid: str) -> _Index:
        if pid not in self._papers:
            idx = _Index()
            for t in paper_subgraph(self.out_edges, pid):
                idx.add(t)
            self._papers[pid] = idx
        return self._papers[pid]

    def candidates(
        self, g: ParsedTriple, papers: list[str], hinted: list[str] | None = None
    ) -> list[tuple[Triple, str]]:
        """Label-equal triples for ``g``, best first, each with how it was found: exact labels before
        whitespace/case-normalised ones; within that, the hinted paper before the other source papers; the whole
        graph only when the source papers have none."""
        k = _key(g)
        nk = _nkey(k)
        hinted = hinted or []
        scopes = [
            [("paper", self._paper_index(p)) for p in hinted]
            + [("sources", self._paper_index(p)) for p in papers if p not in hinted],
            [("global", self.global_index)],
        ]
        for scope in scopes:
            for mode in ("exact", "normalized"):
                out: dict[str, tuple[Triple, str]] = {}
                for how, idx in scope:
                    for t in (idx.exact.get(k) if mode == "exact" else idx.norm.get(nk)) or ():
                        out.setdefault(t.render(), (t, f"{mode}-{how}"))
                if out:
                    return list(out.values())
        return []

    # ---------------- assignment ----------------
    @staticmethod
    def _solve(
        items: list[tuple[ParsedTriple, list[Triple]]], *, strict: bool
    ) -> list[Triple | None] | None:
        """Backtracking: distinct targets; with ``strict``, a consistent one-to-one node id mapping."""
        order = sorted(range(len(items)), key=lambda i: len(items[i][1]))
        chosen: list[Triple | None] = [None] * len(items)
        used: set[str] = set()
        fwd: dict[str, str] = {}
        rev: dict[str, str] = {}
        steps = 0

        def ok_ids(pairs: list[tuple[str, str]]) -> bool:
            local_f: dict[str, str] = {}
            local_r: dict[str, str] = {}
            for a, b in pairs:
                fa = fwd.get(a, local_f.get(a))
                rb = rev.get(b, local_r.get(b))
                if fa is not None and fa != b:
                    return False
                if rb is not None and rb != a:
                    return False
                local_f[a] = b
                local_r[b] = a
            return True

        def rec(pos: int) -> bool:
            nonlocal steps
            if pos == len(order):
                return True
            i = order[pos]
            g, cands = items[i]
            for c in cands:
                steps += 1
                if steps > SEARCH_BUDGET:
                    return False
                r = c.render()
                if r in used:
                    continue
                pairs = [(g.subject_id, c.subject.uid), (g.object_id, c.object.uid)]
                if strict and not ok_ids(pairs):
                    continue
                added = []
                if strict:
                    for a, b in pairs:
                        if a not in fwd:
                            fwd[a] = b
                            rev[b] = a
                            added.append(a)
                used.add(r)
                chosen[i] = c
                if rec(pos + 1):
                    return True
                used.discard(r)
                chosen[i] = None
                for a in added:
                    rev.pop(fwd.pop(a), None)
            return False

        return chosen if rec(0) else None

    @staticmethod
    def _greedy(items: list[tuple[ParsedTriple, list[Triple]]]) -> list[Triple | None]:
        used: set[str] = set()
        out: list[Triple | None] = []
        for _g, cands in items:
            pick = next((c for c in cands if c.render() not in used), None)
            if pick is not None:
                used.add(pick.render())
            out.append(pick)
        return out

    # ---------------- per question ----------------
    def remap_pair(self, pair: QAPair, stats: RemapStats, hints: IdHints | None = None) -> QAPair:
        """Remap one question; ``hints`` (see :class:`IdHints`) narrow a golden triple's candidates to the paper
        its thesis id belongs to, when that paper is one of the question's source papers."""
        papers, missing = self.papers_for(pair.source_ids)
        sources = {d.strip().lower() for d in pair.source_ids}
        if missing:
            stats.missing_dois.append({"row": pair.row, "uid": pair.uid, "dois": missing})
        stats.questions += 1
        stats.total += len(pair.golden_triples)

        unique: list[str] = list(dict.fromkeys(pair.golden_triples))
        items: list[tuple[ParsedTriple, list[Triple]]] = []
        item_of: dict[str, int] = {}
        how_of: dict[tuple[str, str], str] = {}
        reasons: dict[str, str] = {}
        for g in unique:
            if g == MISSING_TRIPLE:
                reasons[g] = "thesis placeholder 'None' (conversion failure in the thesis data)"
                continue
            try:
                parsed = parse_triple_string(g)
            except TripleParseError as exc:
                reasons[g] = f"not a triple string: {exc}"
                continue
            doi = hints.doi_for(parsed.subject_id) if hints is not None else None
            hinted = self.papers_for([doi])[0] if doi and doi.strip().lower() in sources else []
            found = self.candidates(parsed, papers, hinted)
            if not found:
                reasons[g] = "no triple with these labels in the source papers or the graph"
                continue
            for t, how in found:
                how_of[(g, t.render())] = how
            cands = [t for t, _ in found]
            identical = [c for c in cands if c.render() == g]
            cands = identical + [c for c in cands if c.render() != g]
            item_of[g] = len(items)
            items.append((parsed, cands))

        chosen = self._solve(items, strict=True)
        if chosen is None:
            stats.relaxed_questions += 1
            chosen = self._solve(items, strict=False) or self._greedy(items)

        mapped: dict[str, str] = {}
        for g, i in item_of.items():
            c = chosen[i]
            if c is None:
                reasons[g] = "no distinct target left (more golden triples than label-equal candidates)"
            else:
                mapped[g] = c.render()

        new_golden: list[str] = []
        unmapped: list[str] = []
        for g in pair.golden_triples:
            if g in mapped:
                new_golden.append(mapped[g])
                stats.mapped += 1
                how = how_of[(g, mapped[g])]
                stats.exact += how.startswith("exact")
                stats.normalized += how.startswith("normalized")
                stats.outside_source_papers += how.endswith("global")
                stats.in_hinted_paper += how.endswith("paper")
            else:
                new_golden.append(g)
                unmapped.append(g)
                if g == MISSING_TRIPLE:
                    stats.placeholders += 1
                stats.unmapped.append({"row": pair.row, "uid": pair.uid, "triple": g, "reason": reasons[g]})

        topic_id = self.remap_topic(pair, papers, stats)
        return replace(
            pair,
            golden_triples=new_golden,
            original_golden_triples=list(pair.golden_triples),
            unmapped_golden_triples=unmapped,
            topic_entity_id=topic_id,
        )

    def remap_topic(self, pair: QAPair, papers: list[str], stats: RemapStats) -> str | None:
        """The topic entity's id in ``kg``: kept if present with the same label, else found by label."""
        tid, label = pair.topic_entity_id, pair.topic_entity_value
        if tid is None:
            return None
        ent = self.kg.entity(tid)
        if ent is not None and (label is None or ent.text == label):
            return tid
        matches = [p for p in papers if (e := self.kg.entity(p)) is not None and e.text == label]
        if not matches and label is not None:
            matches = [e.uid for e in self.kg.entities() if e.text == label and e.types]
        if len(matches) == 1:
            stats.topic_remapped += 1
            return matches[0]
        stats.topic_unmapped.append({"row": pair.row, "uid": pair.uid, "topic": tid, "label": label,
                                     "candidates": matches[:5]})
        return tid


def remap_pairs(
    pairs: list[QAPair],
    kg: KnowledgeGraph,
    *,
    dataset: str,
    graph: str,
    hints: IdHints | None = None,
) -> tuple[list[QAPair], RemapStats]:
    """Remap every question of a dataset onto ``kg``; returns the new pairs and the mapping statistics."""
    remapper = Remapper(kg)
    stats = RemapStats(dataset=dataset, graph=graph)
    return [remapper.remap_pair(p, stats, hints) for p in pairs], stats
