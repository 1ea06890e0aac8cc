"""A BM25 index (rank-bm25's Okapi scores, held as postings arrays) over retrieval units, and the base of the lexical
methods (``bm25``, ``hybrid``).

Tokenisation drops :data:`~hublab.retrievers.components.question_text.STOPWORDS`: BM25's idf already
down-weights them, but question words dominate short triple texts.
"""

from __future__ import annotations

import math
from array import array
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Annotated, Any, Literal

import numpy as np
from pydantic import Field

from hublab.retrievers.base import Resources, RetrievalResult, Retriever
from hublab.retrievers.components.question_text import content_tokens
from hublab.retrievers.components.results import assemble
from hublab.retrievers.components.unit_text import DEFAULT_CONTEXT, DEFAULT_TRIPLE_TEXT, UnitTextParams
from hublab.retrievers.components.units import Unit, answer_types, graph_node_units, graph_triple_units

tokenize = content_tokens


def resolve_units(resources: Resources, kind: str, *, add_rel: bool, types: list[str] | None,
                  triple_text: str = DEFAULT_TRIPLE_TEXT, context: str = DEFAULT_CONTEXT) -> Sequence[Unit]:
    """``auto`` = node documents on a graph that answers with nodes (STaRK SKB), triples on ORKG; written as
    ``triple_text`` and ``context`` say (:mod:`~hublab.retrievers.components.unit_text`)."""
    g = resources.graph
    if kind == "auto":
        kind = "nodes" if g.answers_with_nodes else "triples"
    if kind == "nodes":
        return graph_node_units(g, types=types, add_rel=add_rel, context=context)
    return graph_triple_units(g, triple_text=triple_text, context=context)


#: rank-bm25's Okapi defaults (Robertson & Zaragoza's usual k1 in [1.2, 2.0], b = 0.75); its idf floor is
#: ``EPSILON`` times the average idf, for words in over half the documents
DEFAULT_K1, DEFAULT_B, EPSILON = 1.5, 0.75, 0.25
#: a query reading more postings than 1/this of the corpus sums its scores in one slot per document, fewer in an
#: array of the documents they name (``BM25Index._scores``). GV1 ×58 (480,298 units, the 170 GV1 questions, p50 /
#: p95): summing per named document always 41 / 176 ms, per corpus document always 4.3 / 9.0 ms, switching at 1/64
#: 4.1 / 7.2 ms. Rankings identical throughout
_DENSE_SHARE = 64
#: postings weighed at a time by ``BM25Index._posting_weights``
_WEIGHT_SLICE = 1 << 20


class BM25Index:
    """Okapi BM25 over unit texts, as rank-bm25's ``BM25Okapi`` scores it, held as postings arrays.

    ``k1`` (term-frequency saturation) and ``b`` (length normalisation) are the method's two real knobs. The scores
    are rank-bm25's to the bit: the same idf (its floor included, summed in the same word order) and the same
    per-document float operations in the same order; a document without a query word adds exactly 0. What differs
    is the layout: one array of (word, document, weight) postings sorted by word instead of rank-bm25's dict per
    document, each weight the posting's term-frequency factor computed at build, and a query touches only its words'
    postings and sorts only the documents that scored (not a score per unit, sorted whole), so its cost follows the
    postings it reads, not the corpus size.
    ``tests/retrievers/test_bm25_index.py`` holds it to rank-bm25 itself."""

    def __init__(self, units: Sequence[Unit], *, k1: float = DEFAULT_K1, b: float = DEFAULT_B) -> None:
        self.units = units
        self.k1, self.b = float(k1), float(b)
        words: dict[str, int] = {}  # word -> id, in order of first occurrence (rank-bm25's idf summing order)
        # 4 bytes a number (Python ints in lists were ~36), kept so (numpy widens them exactly where a score is
        # computed); the units are read once, as they come: a corpus kept on disk is never held whole
        post_word, post_doc, post_tf, lengths = array("i"), array("i"), array("I"), array("I")
        for i, unit in enumerate(units):
            tokens = tokenize(unit.text) or ["_"]
            lengths.append(len(tokens))
            counts: dict[str, int] = {}
            for w in tokens:
                counts[w] = counts.get(w, 0) + 1
            for w, tf in counts.items():
                post_word.append(words.setdefault(w, len(words)))
                post_doc.append(i)
                post_tf.append(tf)
        self.corpus_size = len(units)
        self._doc_len = np.frombuffer(lengths, dtype=np.uint32)
        word_ids = np.frombuffer(post_word, dtype=np.int32)
        order = np.argsort(word_ids, kind="stable")  # each word's postings together, documents ascending
        self._docs = np.frombuffer(post_doc, dtype=np.int32)[order]
        tfs = np.frombuffer(post_tf, dtype=np.uint32)[order]
        df = np.bincount(word_ids, minlength=len(words))
        del word_ids, order, post_word, post_doc, post_tf  # the unsorted postings
        self._start = np.concatenate(([0], np.cumsum(df)))
        self._word = words
        self.avgdl = int(self._doc_len.sum()) / self.corpus_size if units else 0.0
        self._weights = self._posting_weights(tfs)
        self.idf = self._idf(df.tolist())

    def _posting_weights(self, tfs: np.ndarray) -> np.ndarray:
        """Each posting's term-frequency factor ``tf (k1 + 1) / (tf + k1 (1 - b + b dl / avgdl))``, which depends
        on the posting alone: computed once here, a query is left to multiply it by its word's idf and sum. The same
        float operations in the same order as rank-bm25's, so the scores are its own; 8 bytes a posting (the count's
        4 are not kept), made a slice at a time so the build's memory does not peak at several arrays the size of
        the postings."""
        k1, b = self.k1, self.b
        out = np.empty(len(tfs))
        for i in range(0, len(tfs), _WEIGHT_SLICE):
            tf = tfs[i : i + _WEIGHT_SLICE]
            dl = self._doc_len[self._docs[i : i + _WEIGHT_SLICE]]
            out[i : i + _WEIGHT_SLICE] = tf * (k1 + 1) / (tf + k1 * (1 - b + b * dl / self.avgdl))
        return out

    def _idf(self, df: list[int]) -> list[float]:
        """rank-bm25's ``BM25Okapi._calc_idf``: log((N - n + 0.5) / (n + 0.5)) as a difference of logs, negative
        values raised to ``EPSILON`` times the average (summed word by word in first-occurrence order)."""
        n = self.corpus_size
        idf = [math.log(n - f + 0.5) - math.log(f + 0.5) for f in df]
        if not idf:
            return idf
        total = 0.0
        for v in idf:  # left to right, as rank-bm25 sums (``sum`` compensates rounding from Python 3.12 on)
            total += v
        eps = EPSILON * (total / len(idf))
        return [eps if v < 0 else v for v in idf]

    def _parts(self, tokens: list[str]) -> list[tuple[int, slice]]:
        """(word, postings) of each query word the corpus has, in the query's order (a repeated word twice)."""
        out = []
        for q in tokens:
            w = self._word.get(q)
            if w is not None:
                out.append((w, slice(int(self._start[w]), int(self._start[w + 1]))))
        return out

    def _gain(self, w: int, sl: slice) -> np.ndarray:
        return (self.idf[w] or 0) * self._weights[sl]

    def _scores(self, tokens: list[str], k: int | None = None) -> tuple[np.ndarray, np.ndarray]:
        """(documents, scores), documents ascending: the documents that contain a query word (or, past the sparse
        case, those that score above 0), or, given ``k``, a subset sure to hold the ``k`` best and their ties; every
        other document scores less, or at most 0.

        Each document's score is summed word by word in the query's order whichever way; what changes with the
        postings a query reads is where the sums are kept. Few postings: in an array of the documents they name
        (sorting them costs P log P). Postings past a share of the corpus (a common word on a large graph): one slot
        per document, which costs a pass over the corpus but no sort, and only the documents at or above
        :meth:`_floor` are returned."""
        parts = self._parts(tokens)
        if not parts:
            return np.empty(0, dtype=np.int64), np.empty(0)
        if sum(sl.stop - sl.start for _w, sl in parts) < self.corpus_size / _DENSE_SHARE:
            docs = np.unique(np.concatenate([self._docs[sl] for _w, sl in parts]))
            score = np.zeros(len(docs))
            for w, sl in parts:
                score[np.searchsorted(docs, self._docs[sl])] += self._gain(w, sl)
            return docs, score
        dense = np.zeros(self.corpus_size)
        for w, sl in parts:  # a word's postings name each document once; their indices widened once, not twice
            dense[self._docs[sl].astype(np.intp)] += self._gain(w, sl)
        floor = self._floor(dense, parts, k)
        docs = np.flatnonzero(dense >= floor) if floor > 0 else np.flatnonzero(dense > 0)
        return docs, dense[docs]

    def _floor(self, dense: np.ndarray, parts: list[tuple[int, slice]], k: int | None) -> float:
        """A score the ``k`` best documents all reach: the ``k``-th best among the documents of the query's rarest
        word that has ``k`` of them (any ``k`` distinct documents' ``k``-th best is at most the corpus's, and a
        word's postings name each document once), or 0 without ``k`` or such a word. Only the documents at or above
        it are then gathered and sorted, where a common-word query on a large corpus scores millions above 0 (GV1
        at 10^7: up to 1.9 M)."""
        sizes = [(sl.stop - sl.start, i) for i, (_w, sl) in enumerate(parts)]
        enough = [(size, i) for size, i in sizes if k is not None and size >= k]
        if k is None or not enough:
            return 0.0
        sample = dense[self._docs[parts[min(enough)[1]][1]]]
        return float(np.partition(sample, len(sample) - k)[len(sample) - k])

    def search(self, query: str, k: int) -> list[tuple[Unit, float]]:
        """The ``k`` best units with a positive score, best first; ties in the order of the units."""
        tokens = tokenize(query)
        if not self.units or not tokens or k <= 0:
            return []
        docs, score = self._scores(tokens, k)
        keep = score > 0
        docs, score = docs[keep], score[keep]
        if len(docs) > k:  # only the k best are sorted (the k-th score's ties all kept, then cut in unit order)
            kth = np.partition(score, len(score) - k)[len(score) - k]
            keep = score >= kth
            docs, score = docs[keep], score[keep]
        order = np.lexsort((docs, -score))[:k]
        return [(self.units[int(docs[i])], float(score[i])) for i in order]


@dataclass(frozen=True)
class LexicalParams(UnitTextParams):
    """The parameters of the lexical methods (``bm25``; ``hybrid`` adds its own), plus ``triple_text`` and ``context``
    (:class:`~hublab.retrievers.components.unit_text.UnitTextParams`).

    Args:
        units: ``auto`` (nodes on a STaRK SKB, triples on ORKG), ``nodes`` or ``triples``.
        add_rel: node documents include the node's relations (STaRK ``get_doc_info(add_rel)``).
        candidate_types: node types to rank (default: the graph's candidate set).
        n_results: contexts returned per question.
        k1: BM25 term-frequency saturation (rank-bm25 default 1.5).
        b: BM25 document-length normalisation, 0 (none) to 1 (full); default 0.75.
    """

    units: Literal["auto", "nodes", "triples"] = "auto"
    add_rel: bool = True
    candidate_types: list[str] | None = None
    n_results: Annotated[int, Field(ge=1)] = 20
    k1: Annotated[float, Field(ge=0.0)] = DEFAULT_K1
    b: Annotated[float, Field(ge=0.0, le=1.0)] = DEFAULT_B


class LexicalRetriever(Retriever):
    """Shared corpus and BM25 index of the lexical methods; parameters: :class:`LexicalParams`."""

    params_type = LexicalParams

    def __init__(self, resources: Resources, **params: Any) -> None:
        super().__init__(resources, **params)
        self.types = answer_types(resources.graph, self.config.candidate_types)
        self._units: list[Unit] | None = None
        self._bm25: BM25Index | None = None

    @property
    def units(self) -> list[Unit]:
        if self._units is None:
            c = self.config
            self._units = resolve_units(self.resources, c.units, add_rel=c.add_rel, types=self.types,
                                        triple_text=c.triple_text, context=c.context)
        return self._units

    @property
    def bm25(self) -> BM25Index:
        if self._bm25 is None:
            self._bm25 = BM25Index(self.units, k1=float(self.config.k1), b=float(self.config.b))
        return self._bm25

    def _result(self, ranked: list[tuple[Unit, float]], what: str) -> RetrievalResult:
        group = "nodes" if ranked and ranked[0][0].triple is None else "triples"
        contexts = assemble(self.resources.graph, {group: ranked}, self.config.n_results,
                            nodes_out=self.resources.graph.answers_with_nodes)
        return RetrievalResult(contexts=contexts, reason=None if contexts else f"{what} matched nothing")


