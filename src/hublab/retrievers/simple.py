"""Trivial retrievers to exercise the runner: ``fixed`` (contexts from a file) and ``vector``
(brute-force cosine top-k over every triple string of the graph)."""

from __future__ import annotations

import ast
import csv
import json
from pathlib import Path
from typing import Any

import numpy as np

from hublab.errors import InputError
from hublab.retrievers.base import Context, Resources, RetrievalResult, Retriever
from hublab.retrievers.registry import register


@register("fixed")
class FixedRetriever(Retriever):
    """Returns, per question text, the contexts stored in a predictions CSV (thesis layout) or a JSON
    ``{question: [triple strings]}`` file. Useful to re-score the thesis's own outputs through the runner."""

    def __init__(self, resources: Resources, *, path: str, **params: Any) -> None:
        super().__init__(resources, path=path, **params)
        p = Path(path)
        if not p.exists():
            raise InputError("fixed contexts file not found", file=str(p), field="retriever.params.path")
        self.by_question: dict[str, list[str]] = {}
        if p.suffix == ".json":
            self.by_question = {str(k): list(v) for k, v in json.loads(p.read_text()).items()}
        else:
            csv.field_size_limit(1 << 30)
            with p.open(newline="", encoding="utf-8") as fh:
                for i, row in enumerate(csv.DictReader(fh), start=1):
                    try:
                        self.by_question[row["question"]] = list(ast.literal_eval(row["retrieved_context"]))
                    except (KeyError, ValueError, SyntaxError) as exc:
                        raise InputError(f"unparseable: {exc}", file=str(p), row=i, field="retrieved_context") from exc

    def retrieve(self, question, topic_entity_id=None, topic_entity_value=None) -> RetrievalResult:
        ctx = self.by_question.get(question)
        if ctx is None:
            return RetrievalResult(reason="question not in the fixed contexts file")
        return RetrievalResult([Context(text=c) for c in ctx])


@register("vector")
class VectorRetriever(Retriever):
    """Dense triple retrieval without a vector database (numpy over all triples)."""

    def __init__(self, resources: Resources, *, top_k: int = 50, **params: Any) -> None:
        super().__init__(resources, top_k=top_k, **params)
        self.top_k = top_k
        self._triples = None
        self._matrix: np.ndarray | None = None

    def index(self, *, progress: bool = True) -> dict[str, Any]:
        self._triples = list(self.resources.graph.triples())
        texts = [t.render() for t in self._triples]
        self._matrix = self.resources.embedder.embed(texts) if texts else np.zeros((0, 1), np.float32)
        return {"triples": len(texts)}

    def retrieve(self, question, topic_entity_id=None, topic_entity_value=None) -> RetrievalResult:
        if self._matrix is None:
            self.index(progress=False)
        if not self._triples:
            return RetrievalResult(reason="empty graph")
        q = self.resources.embedder.embed([question])[0]
        scores = self._matrix @ q
        top = np.argsort(-scores)[: self.top_k]
        return RetrievalResult([Context(self._triples[i].render(), self._triples[i], float(scores[i])) for i in top])
