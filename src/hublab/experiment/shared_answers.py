"""Answers shared by the runs of one process that put the same question to the same LLM-free configuration.

A comparison's cross-validation runs every method's study once per fold, each fold's on its own selection file: the
folds share most of their questions, and every study of a method starts with the same trials (the default, then the
seeded sampler's first draws), so most of its answers were already given in the fold before, by the same process.
An LLM-free retriever answers a question the same way every time, so such an answer is taken as it was recorded, under
this run's key for the question (its position here). A study's pruner and objective see the same values either way.

Only where a caller asks for it (:attr:`RunRequest.share_answers`: a study's trials), never for a pipeline that calls
an LLM, never for an answer that ended in an error, and never across graphs, configurations or question contents:
the key is the configuration's hash with the graph's content digest, the rank cut-off and the question's every
field but its source row. A shared answer keeps the runtime it was measured with; the run's tag
``hublab.answers_shared`` counts them.
"""

from __future__ import annotations

import copy
import dataclasses
import json
from typing import Any

from hublab.datasets.model import QAPair

#: answers kept per process: a method's five folds of twenty trials over ~30 questions are ~3,000; past this the
#: memory is emptied and filled again
MAX_ANSWERS = 20_000

_ANSWERS: dict[tuple[str, int, str], dict[str, Any]] = {}


def share_key(run_key: str, k: int, p: QAPair) -> tuple[str, int, str]:
    """What an answer is shared by: ``run_key`` (the configuration's hash with the graph's content digest), the
    cut-off and the question's content (every field but the row it was read from)."""
    fields = {f.name: getattr(p, f.name) for f in dataclasses.fields(p) if f.name != "row"}
    return run_key, k, json.dumps(fields, sort_keys=True, default=str)


def recall(key: tuple[str, int, str], record_key: str) -> dict[str, Any] | None:
    """The answer given before under ``key``, as this run's record ``record_key``, or None."""
    known = _ANSWERS.get(key)
    return None if known is None else {**copy.deepcopy(known), "key": record_key}  # a run may add to its records


def keep(key: tuple[str, int, str], record: dict[str, Any]) -> None:
    """Remember an answer for later runs of this process (not one that ended in an error: a rerun tries again)."""
    if record.get("error"):
        return
    if len(_ANSWERS) >= MAX_ANSWERS:
        _ANSWERS.clear()
    _ANSWERS[key] = copy.deepcopy(record)


def forget() -> None:
    """Drop every kept answer (tests)."""
    _ANSWERS.clear()
