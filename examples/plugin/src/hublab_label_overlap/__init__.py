"""``label_overlap``: triples ranked by how many question words their labels share (a lexical example method)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Annotated

from pydantic import Field

from hublab.retrievers import Context, RetrievalResult, Retriever, content_tokens


@dataclass(frozen=True)
class LabelOverlapParams:
    """The method's parameters (a pipeline's ``retriever.params``).

    Args:
        n_results: triples returned per question.
        min_overlap: shared content words a triple needs to be returned.
    """

    n_results: Annotated[int, Field(ge=1)] = 20
    min_overlap: Annotated[int, Field(ge=1)] = 1


class LabelOverlapRetriever(Retriever):
    """Ranks every triple by word overlap between the question and the triple's labels."""

    # the plugin's own pipeline (an absolute path): `hublab report compare` and `hublab tune-all` run it
    default_pipeline = str(Path(__file__).with_name("label_overlap.yaml"))
    compare_group = 1  # listed with the IR baselines
    params_type = LabelOverlapParams

    def _retrieve(self, question, topic_entity_id, topic_entity_value) -> RetrievalResult:
        words = set(content_tokens(question))
        if not words:
            return RetrievalResult(reason="question has no content words")
        scored = []
        for t in self.resources.graph.triples():
            overlap = len(words & set(content_tokens(f"{t.subject.text} {t.predicate} {t.object.text}")))
            if overlap >= self.config.min_overlap:
                scored.append((overlap, t.render(), t))
        scored.sort(key=lambda x: (-x[0], x[1]))  # deterministic: ties by triple text
        contexts = [Context(text, t, float(s)) for s, text, t in scored[: self.config.n_results]]
        return RetrievalResult(contexts, reason=None if contexts else "no triple shares a question word")
