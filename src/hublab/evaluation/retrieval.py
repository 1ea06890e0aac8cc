"""Retrieval metrics exactly as the thesis's reference implementation computes them (§2.6, §8.4;
spec framework.md §7; readings confirmed on the published per-question values, docs/metrics.md).

Two families of matching, as in the reference:
* set metrics (precision, recall, F1, F2, EM) compare exact strings;
* rank metrics (Hits@k, MAP@k, MRR@k) walk the ranked *triple strings* and count a golden item as found
  at rank i when it is a case-insensitive substring of the i-th retrieved triple.

Entity level: the golden items are the subject and object entities (``id:label``) of the golden triples.
Set metrics use the deduplicated entities of the retrieved triples (in order); rank metrics still walk
the retrieved triple strings. Per question, P/R/F1/F2 are rounded to 2 decimals and Hits/MAP/MRR/EM to 3,
as the reference values are.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

from hublab.evaluation.names import at_k, count, full
from hublab.graph.model import TripleParseError, parse_triple_string

P_DIGITS = 2  # precision / recall / F1 / F2
R_DIGITS = 3  # hits / map / mrr / exact match


def entities_of(triples: Iterable[str]) -> list[str]:
    """Subject and object entities (``id:label``) of triple strings, deduplicated, in order.

    Strings that are not triples (e.g. the thesis's ``'None'`` placeholder) are kept as one item so they
    still count in |G| (as in the reference)."""
    out: list[str] = []
    seen: set[str] = set()
    for t in triples:
        try:
            p = parse_triple_string(t)
            items = [f"{p.subject_id}:{p.subject_label}", f"{p.object_id}:{p.object_label}"]
        except TripleParseError:
            items = [t]
        for e in items:
            if e not in seen:
                seen.add(e)
                out.append(e)
    return out


def _prf(retrieved: list[str], golden: list[str]) -> dict[str, float]:
    r, g = set(retrieved), set(golden)
    if not g:
        v = 1.0 if not r else 0.0
        return {"precision": v, "recall": v, "f1": v, "f2": v}
    if not r:
        return {"precision": 0.0, "recall": 0.0, "f1": 0.0, "f2": 0.0}
    tp = len(r & g)
    p, rc = tp / len(r), tp / len(g)
    f1 = 2 * p * rc / (p + rc) if p + rc else 0.0
    f2 = 5 * p * rc / (4 * p + rc) if p + rc else 0.0
    return {"precision": round(p, P_DIGITS), "recall": round(rc, P_DIGITS), "f1": round(f1, P_DIGITS),
            "f2": round(f2, P_DIGITS)}


def _exact_match(retrieved: list[str], golden: list[str], k: int | None) -> float:
    """EM@k: share of the top-k retrieved items equal to a golden item (Precision@k with exact match)."""
    if not golden:
        return 1.0 if not retrieved else 0.0
    top = retrieved if k is None else retrieved[:k]
    if not top:
        return 0.0
    g = set(golden)
    return round(sum(1 for r in top if r in g) / len(top), R_DIGITS)


def _found_ranks(ranked: list[str], golden: list[str], k: int) -> list[tuple[int, str]]:
    """(rank, golden item) for each golden item the first time a top-k triple contains it."""
    found: list[tuple[int, str]] = []
    remaining = list(dict.fromkeys(golden))
    low = [(g, g.lower()) for g in remaining]
    for i, r in enumerate(ranked[:k], start=1):
        rl = r.lower()
        for g, gl in low:
            if gl in rl and all(g != f for _, f in found):
                found.append((i, g))
    return found


def _hits(ranked: list[str], golden: list[str], k: int) -> float:
    """Fractional Hits@k: share of golden items contained in some top-k retrieved triple."""
    if not golden:
        return 1.0 if not ranked else 0.0
    return round(len(_found_ranks(ranked, golden, k)) / len(set(golden)), R_DIGITS)


def _entity_hits(entities: list[str], golden: list[str], k: int) -> float:
    if not golden:
        return 1.0 if not entities else 0.0
    g = set(golden)
    return round(len(g & set(entities[:k])) / len(g), R_DIGITS)


def _mrr(ranked: list[str], golden: list[str], k: int) -> float:
    if not golden:
        return 1.0 if not ranked else 0.0
    low = [g.lower() for g in golden]
    for i, r in enumerate(ranked[:k], start=1):
        rl = r.lower()
        if any(g in rl for g in low):
            return round(1.0 / i, R_DIGITS)
    return 0.0


def _map(ranked: list[str], golden: list[str], k: int) -> float:
    """MAP@k: walk ranks 1..k; a triple containing a not-yet-found golden item marks *one* such item found
    and adds (#found)/i; the sum is divided by min(|G|, k)."""
    if not golden:
        return 1.0 if not ranked else 0.0
    # When one triple contains several unfound golden items, one is marked: the first in golden order.
    # (The reference picks in hash order of a Python set, which is not reproducible; docs/metrics.md.)
    uniq = list(dict.fromkeys(golden))
    found: set[str] = set()
    total = 0.0
    for i, r in enumerate(ranked[:k], start=1):
        rl = r.lower()
        g = next((x for x in uniq if x not in found and x.lower() in rl), None)
        if g is not None:
            found.add(g)
            total += len(found) / i
    return round(total / min(len(golden), k), R_DIGITS)


def retrieval_metrics(retrieved: list[str], golden: list[str], k: int = 10, *, stark: bool = False) -> dict[str, float]:
    """All per-question retrieval metrics (``hit_at_10_triples`` …, names from ``hublab.evaluation.names``); with
    ``stark=True`` also the STaRK family (``stark_hit_at_1`` …, exact triple match) for side-by-side reports."""
    out: dict[str, float] = {}
    levels = {"triples": (retrieved, golden), "entities": (entities_of(retrieved), entities_of(golden))}
    for level, (items, gold) in levels.items():
        # Hits@k: triples → golden triples contained in the top-k triples; entities → golden entities among
        # the first k retrieved entities (the reference drew those k from an unordered set; docs/metrics.md).
        out[at_k("hit", k, level)] = (_entity_hits(items, gold, k) if level == "entities"
                                      else _hits(retrieved, gold, k))
        out[at_k("map", k, level)] = _map(retrieved, gold, k)
        out[at_k("mrr", k, level)] = _mrr(retrieved, gold, k)
        top = entities_of(retrieved[:k]) if level == "entities" else retrieved[:k]
        for name, v in _prf(top, gold).items():
            out[at_k(name, k, level)] = v
        for name, v in _prf(items, gold).items():
            out[full(name, level)] = v
        # EM@k at entity level = exact-match share over the entities of the top-k *triples* (reference).
        out[at_k("exact_match", k, level)] = (_exact_match(top, gold, None) if level == "entities"
                                              else _exact_match(items, gold, k))
        out[full("exact_match", level)] = _exact_match(items, gold, None)
    if stark:
        from hublab.evaluation.stark import stark_metrics

        out.update(stark_metrics(retrieved, [g for g in golden if g]))
    return out


def aggregate(rows: list[dict[str, float | None]]) -> dict[str, float]:
    """Macro mean per metric over questions. None/NaN values are skipped *explicitly*: the mean is over the
    questions that have a value, and ``n_<metric>`` reports that count whenever some were skipped."""
    names: list[str] = []
    for r in rows:
        for k in r:
            if k not in names:
                names.append(k)
    out: dict[str, float] = {}
    for name in names:
        vals = [r.get(name) for r in rows]
        ok = [float(v) for v in vals if isinstance(v, int | float) and not isinstance(v, bool)
              and math.isfinite(float(v))]
        if len(ok) != len(vals):
            out[count(name)] = float(len(ok))
        if ok:
            out[name] = sum(ok) / len(ok)
    return out
