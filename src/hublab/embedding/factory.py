"""Build an embedder from the ``embedder`` section of a pipeline config."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hublab.embedding.base import Embedder
from hublab.errors import InputError

_KEYS = {"model", "device", "batch_size", "cache", "backend"}


def build_embedder(cfg: dict[str, Any] | None = None, cache_dir: Path | None = None) -> Embedder:
    cfg = dict(cfg or {})
    unknown = set(cfg) - _KEYS
    if unknown:
        raise InputError(f"unknown embedder keys {sorted(unknown)}; expected {sorted(_KEYS)}", field="embedder")
    backend = cfg.get("backend", "sentence-transformers")
    if backend not in ("sentence-transformers", "st"):
        raise InputError(f"unsupported embedder backend {backend!r} (offline: sentence-transformers)",
                         field="embedder.backend")
    from hublab.embedding.sentence_transformer import SentenceTransformerEmbedder

    emb: Embedder = SentenceTransformerEmbedder(
        cfg.get("model") or "all-MiniLM-L6-v2", device=cfg.get("device", "auto"),
        batch_size=int(cfg.get("batch_size", 64)),
    )
    if cfg.get("cache", True) and cache_dir is not None:
        from hublab.embedding.cache import CachedEmbedder

        emb = CachedEmbedder(emb, cache_dir)
    return emb


def embedder_identity(cfg: dict[str, Any] | None) -> str | None:
    """The content identity (``st-<hash>``) of a configured non-bundled model, None for the bundled default (its
    name is its identity) or a model that cannot be resolved here (building the embedder reports that)."""
    from hublab.embedding.sentence_transformer import is_default_model, model_identity, resolve_model_path
    from hublab.errors import HubLabError

    model = (cfg or {}).get("model")
    if is_default_model(model):
        return None
    try:
        return model_identity(resolve_model_path(str(model)))
    except (HubLabError, OSError):
        return None
