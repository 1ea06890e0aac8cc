"""What a study computed and what it reused: dense index builds (a corpus's collection inserted, or an identical
one found, :mod:`hublab.vectorstore.corpora`) and texts embedded (sent to the model, or found in the embedding
cache). Read from process-wide tallies before and after a worker's trials, so a trial that ran in this process is
counted and nothing else."""

from __future__ import annotations

from hublab.embedding.cache import TEXTS
from hublab.retrievers.components.dense_index import BUILDS


def snapshot() -> dict[str, int]:
    return {"index_builds": BUILDS["built"], "index_reused": BUILDS["reused"],
            "texts_embedded": TEXTS["embedded"], "texts_cached": TEXTS["cached"]}


def since(before: dict[str, int]) -> dict[str, int]:
    now = snapshot()
    return {k: now[k] - before.get(k, 0) for k in now}


def line(counts: dict[str, int]) -> str:
    """One line for the terminal and the reports."""
    if not counts:
        return "reuse: not measured"
    return (f"dense index builds: {counts.get('index_builds', 0)} made, {counts.get('index_reused', 0)} reused; "
            f"texts embedded: {counts.get('texts_embedded', 0)}, from the cache: {counts.get('texts_cached', 0)}")
