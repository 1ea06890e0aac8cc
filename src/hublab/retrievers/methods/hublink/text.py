"""Deterministic verbalisation (the LLM-free PATHTOTEXT) and texts embedded per vector level."""

from __future__ import annotations

from hublab.graph.model import Triple


def triple_text(t: Triple) -> str:
    """What the triple level embeds: labels only (ids carry no meaning for an embedding model)."""
    return f"{t.subject.text} {t.predicate} {t.object.text}"


def path_to_text(triples: tuple[Triple, ...] | list[Triple]) -> str:
    """Template path text: ``<root label>: <pred> <obj>; <pred> <obj> …`` (reads like a fact chain)."""
    if not triples:
        return ""
    parts = [f"{t.predicate} {t.object.text}" for t in triples]
    return f"{triples[0].subject.text}: " + "; ".join(parts)


def readable(t: Triple) -> str:
    """``(subject, predicate, object)`` with labels: how triples are shown to the LLM."""
    return f"({t.subject.text}, {t.predicate}, {t.object.text})"
