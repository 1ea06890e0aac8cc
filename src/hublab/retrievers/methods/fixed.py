"""``fixed``: contexts read from a file, per question text — re-scores the thesis's own outputs (or any
other system's) through the runner."""

from __future__ import annotations

import ast
import csv
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hublab.errors import InputError
from hublab.retrievers.base import Context, Resources, RetrievalResult, Retriever


@dataclass(frozen=True)
class FixedParams:
    """The ``fixed`` method's parameters.

    Args:
        path: the predictions file.
    """

    path: str


class FixedRetriever(Retriever):
    """Returns the contexts stored for the question in a predictions CSV (thesis layout: ``question``,
    ``retrieved_context``) or a JSON ``{question: [triple strings]}`` file; parameters: :class:`FixedParams`."""

    params_type = FixedParams

    def __init__(self, resources: Resources, **params: Any) -> None:
        super().__init__(resources, **params)
        p = Path(self.config.path)
        if not p.exists():
            raise InputError("fixed contexts file not found", file=str(p), field="retriever.params.path")
        self.by_question: dict[str, list[str]] = {}
        if p.suffix == ".json":
            try:
                data = json.loads(p.read_text(encoding="utf-8"))
            except (json.JSONDecodeError, UnicodeDecodeError) as exc:
                raise InputError(f"not a JSON object of question -> contexts: {exc}", file=str(p)) from None
            self.by_question = {str(k): list(v) for k, v in data.items()}
            return
        csv.field_size_limit(1 << 30)
        with p.open(newline="", encoding="utf-8", errors="strict") as fh:
            try:
                for i, row in enumerate(csv.DictReader(fh), start=1):
                    try:
                        self.by_question[row["question"]] = list(ast.literal_eval(row["retrieved_context"]))
                    except (KeyError, ValueError, SyntaxError) as exc:
                        raise InputError(f"unparseable: {exc}", file=str(p), row=i, field="retrieved_context") from exc
            except UnicodeDecodeError as exc:
                raise InputError(f"not UTF-8 text ({exc.reason} at byte {exc.start})", file=str(p)) from None

    def _retrieve(self, question, topic_entity_id, topic_entity_value) -> RetrievalResult:
        ctx = self.by_question.get(question)
        if ctx is None:
            return RetrievalResult(reason="question not in the fixed contexts file")
        return RetrievalResult([Context(text=c) for c in ctx])
