"""Training pairs: one (question, positive text) example, its paper key, the held-out split by paper and the
deterministic cap. Plain data: no graph or retriever code, so training on pairs made elsewhere (the GPU benchmark,
``bench/bench_gpu.py run`` on a machine with torch and sentence-transformers only) imports nothing else."""

from __future__ import annotations

import random
import re
from dataclasses import dataclass


@dataclass(frozen=True)
class TrainPair:
    """One (question, positive text) example; ``paper`` is the split key (normalised title)."""

    question: str
    positive: str
    paper: str
    kind: str
    graph: str


def paper_key(title: str) -> str:
    return re.sub(r"\s+", " ", re.sub(r"[^a-z0-9 ]", " ", title.lower())).strip()


def split_by_paper(pairs: list[TrainPair], *, val_fraction: float = 0.15, seed: int = 0,
                   ) -> tuple[list[TrainPair], list[TrainPair]]:
    """(train, validation): whole papers (by normalised title, across graphs) are held out."""
    papers = sorted({p.paper for p in pairs})
    random.Random(seed).shuffle(papers)
    n_val = max(1, round(len(papers) * val_fraction)) if val_fraction > 0 and len(papers) > 1 else 0
    held = set(papers[:n_val])
    return [p for p in pairs if p.paper not in held], [p for p in pairs if p.paper in held]


def cap(pairs: list[TrainPair], n: int | None, seed: int) -> list[TrainPair]:
    """A deterministic sample of at most ``n`` pairs (all when ``n`` is None or larger), in shuffled order."""
    out = list(pairs)
    random.Random(seed).shuffle(out)
    return out if not n or n >= len(out) else out[:n]
