"""4StepFocus step 1: the triplet plan (LLM prompt and schema, parsing, rule-based constants) and the
constant linker used in step 2."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from difflib import get_close_matches
from typing import Any

from hublab.graph.model import Knowledge

_CAPS_RE = re.compile(r"\b([A-Z][\w\-]*(?:\s+(?:(?:of|for|and|the|on|in|de)\s+)*[A-Z][\w\-]*)*)")
_STOP_LABELS = frozenset({"which", "where", "there", "their", "these", "those", "about", "papers", "paper",
                          "publications", "publication", "false", "true", "other", "among", "between"})
_VAR_RE = re.compile(r"^\|?\?\s*(\w+)\|?$|^\|(x\d+)\|$")
_FLOAT_RE = re.compile(r"[-+]?\d*\.?\d+")

TRIPLET_SCHEMA = {
    "type": "object",
    "properties": {
        "triplets": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "head": {"type": "string"},
                    "head_type": {"type": "string"},
                    "relation": {"type": "string"},
                    "tail": {"type": "string"},
                    "tail_type": {"type": "string"},
                },
                "required": ["head", "relation", "tail"],
            },
        },
        "target": {"type": "string"},
        "properties": {"type": "string"},
    },
    "required": ["triplets", "target"],
}

TRIPLET_PROMPT = """Rewrite the question as triplets (head, relation, tail) to be looked up in a knowledge graph.
Each head or tail is either a constant (an exact entity name taken from the question) or a variable for an
unknown entity, written ?1, ?2, ... Use ?1 for the entity the question asks for; reuse a variable for the
same unknown. Give every end a type from the node types when you can. Use only relations from the list.
Put requirements no triplet can express (adjectives, years, topics) into "properties".

Node types: {node_types}
Relations: {edge_types}

Question: ---
{question}
---
Answer with JSON: {{"triplets": [{{"head": ..., "head_type": ..., "relation": ..., "tail": ..., "tail_type": ...}}],
"target": "?1", "properties": "..."}}"""

RERANK_PROMPT = """You judge whether a knowledge-base entry satisfies a query.
Query: {question}
Entry:
{doc}
Give a score between 0.0 and 1.0: 0.0 if no requirement of the query is met, 1.0 if there is explicit strong
evidence that every requirement is met, values in between for partial or weak evidence.
Answer with the number only."""


@dataclass(frozen=True)
class Term:
    name: str
    type: str | None = None
    is_var: bool = False


@dataclass(frozen=True)
class Triplet:
    head: Term
    relation: str | None
    tail: Term


@dataclass
class Plan:
    triplets: list[Triplet]
    target: str
    properties: str = ""
    source: str = "rules"


@dataclass
class Trace:
    plan: Plan | None = None
    links: dict[str, list[str]] = field(default_factory=dict)
    unlinked: list[str] = field(default_factory=list)
    rounds: list[dict[str, int]] = field(default_factory=list)
    filtered: int = 0
    backfilled: int = 0
    reranked: int = 0
    notes: list[str] = field(default_factory=list)


def _var_name(text: str) -> str | None:
    m = _VAR_RE.match(text.strip())
    return (m.group(1) or m.group(2)) if m else None


def parse_plan(data: dict[str, Any]) -> Plan:
    """LLM JSON → Plan. Raises ValueError when no usable triplet is there."""
    trips: list[Triplet] = []
    for item in data.get("triplets") or []:
        if not isinstance(item, dict):
            continue
        ends: list[Term] = []
        for side in ("head", "tail"):
            raw = str(item.get(side) or "").strip().strip("'\"")
            if not raw:
                break
            ty = item.get(f"{side}_type")
            ty = str(ty).strip() if ty else None
            var = _var_name(raw)
            ends.append(Term(var, ty, True) if var else Term(raw, ty, False))
        if len(ends) != 2:
            continue
        rel = str(item.get("relation") or "").strip() or None
        trips.append(Triplet(ends[0], rel, ends[1]))
    if not trips:
        raise ValueError("LLM returned no usable triplet")
    target = _var_name(str(data.get("target") or "?1")) or "1"
    return Plan(trips, target, str(data.get("properties") or ""), "llm")


class Linker:
    """Constant → node ids: exact/difflib (cut-off 0.95) over lower-cased labels, then embedding top-1."""

    def __init__(self, entities: list[Knowledge], cutoff: float) -> None:
        self.cutoff = cutoff
        self.by_label: dict[str, list[Knowledge]] = {}
        for e in entities:
            self.by_label.setdefault(e.text.strip().lower(), []).append(e)
        self.labels = list(self.by_label)

    def link(self, name: str, type_name: str | None) -> list[str]:
        key = name.strip().lower()
        hits = self.by_label.get(key)
        if not hits:
            close = get_close_matches(key, self.labels, n=1, cutoff=self.cutoff)
            hits = self.by_label.get(close[0]) if close else None
        if not hits:
            return []
        typed = [e for e in hits if type_name and type_name in e.types]
        return [e.uid for e in (typed or hits)]
