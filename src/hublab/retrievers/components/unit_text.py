"""How a retrieval unit is written down: the text a dense or lexical method embeds or tokenises for a
triple, and the context added to it.

Both are declared, tunable parameters of every unit-based method (DiFaR, VSS, BM25, hybrid, 4StepFocus's triple
ranking), so the equal-budget comparison lets each method choose its representation as it chooses its other
knobs. The defaults are the thesis reference implementation's: the id-bearing canonical string
``(R1:label, predicate, R2:label)`` and no context. What each choice writes:

- ``triple_text: ids``    ``(R12:Paper A, venue, R34:ICSA)`` (the canonical string, ``Triple.render``)
- ``triple_text: labels`` ``Paper A | venue | ICSA`` (labels only: ids are noise to an embedder and a tokenizer)
- ``context: paper``      `` | paper: <title>`` appended: the title of the paper the unit belongs to, found by
  walking incoming edges up from the triple's subject (then its object) to a ``Paper`` node; nothing is appended
  where no paper is found
- ``context: none``       nothing appended

A unit's *key* stays the canonical string (or node id), so results and metrics are unchanged in form; only what is
matched against the question differs. Collections of non-default texts get their own name (:func:`text_tag`), so
two representations never share (or thrash) one stored index.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from hublab.graph.base import KnowledgeGraph
from hublab.graph.model import Knowledge, Triple

TripleText = Literal["ids", "labels"]
UnitContext = Literal["none", "paper"]
DEFAULT_TRIPLE_TEXT: TripleText = "ids"
DEFAULT_CONTEXT: UnitContext = "none"


@dataclass(frozen=True)
class UnitTextParams:
    """The representation parameters every unit-based method inherits into its ``params_type``.

    Args:
        triple_text: how a triple unit is written: ``ids`` (the canonical ``(R1:label, predicate, R2:label)``, the
            thesis reference implementation's) or ``labels`` (``label | predicate | label``).
        context: ``paper`` appends the title of the paper a unit belongs to; ``none`` nothing.
    """

    triple_text: TripleText = DEFAULT_TRIPLE_TEXT
    context: UnitContext = DEFAULT_CONTEXT


def triple_text(t: Triple, form: str = DEFAULT_TRIPLE_TEXT) -> str:
    """A triple as the method sees it: the canonical id-bearing string, or its three labels."""
    if form == "labels":
        return f"{t.subject.text} | {t.predicate} | {t.object.text}"
    return t.render()


def with_context(text: str, context: str, paper: Knowledge | None) -> str:
    """``text`` with the paper's title appended when ``context`` is ``paper`` and the unit has a paper."""
    if context == "paper" and paper is not None and paper.text:
        return f"{text} | paper: {paper.text}"
    return text


def text_tag(form: str, context: str) -> str:
    """The collection-name suffix of a representation: empty for the defaults (existing indices keep their names),
    else e.g. ``labels_paper``."""
    return "" if (form, context) == (DEFAULT_TRIPLE_TEXT, DEFAULT_CONTEXT) else f"{form}_{context}"


def collection_prefix(base: str, form: str, context: str) -> str:
    """``base`` for the default representation (existing collections keep their names), else ``base_<tag>``."""
    return "_".join(p for p in (base, text_tag(form, context)) if p)


class PaperOf:
    """The paper a node or triple belongs to (``KnowledgeGraph.paper_of``), memoised per node: a corpus asks for
    the same subjects many times."""

    def __init__(self, graph: KnowledgeGraph) -> None:
        self.graph = graph
        self._memo: dict[str, Knowledge | None] = {}

    def node(self, uid: str) -> Knowledge | None:
        if uid not in self._memo:
            self._memo[uid] = self.graph.paper_of(uid)
        return self._memo[uid]

    def triple(self, t: Triple) -> Knowledge | None:
        return self.node(t.subject.uid) or self.node(t.object.uid)


def unit_text(t: Triple, form: str, context: str, papers: PaperOf | None, paper: Knowledge | None = None) -> str:
    """The full text of a triple unit: its verbalisation plus its context (``paper`` when the caller knows it, as
    DiFaR does from the paper subgraph it walked; otherwise looked up only when the context needs it)."""
    text = triple_text(t, form)
    if context == "none":
        return text
    if paper is None and papers is not None:
        paper = papers.triple(t)
    return with_context(text, context, paper)
