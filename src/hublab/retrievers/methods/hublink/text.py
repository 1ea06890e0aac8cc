"""Deterministic verbalisation (the LLM-free PATHTOTEXT) and texts embedded per vector level."""

from __future__ import annotations

from typing import Any

from hublab.errors import ServiceUnavailable
from hublab.graph.model import Triple
from hublab.llm.base import LLM, LLMResponse


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


def ask(llm: LLM, prompt: str, **kw: Any) -> LLMResponse:
    """``llm.complete`` that never raises: an exception from the backend becomes ``LLMResponse.error``, so the
    step falls back to its LLM-free form and is reported like any other failed call; an endpoint found down
    (``ServiceUnavailable``) stops the run or build instead."""
    try:
        return llm.complete(prompt, **kw)
    except ServiceUnavailable:
        raise  # the endpoint is down: the run or build stops, not this step
    except Exception as exc:  # noqa: BLE001 - any backend failure degrades the step, never the retrieval
        return LLMResponse("", error=f"{type(exc).__name__}: {exc}")
