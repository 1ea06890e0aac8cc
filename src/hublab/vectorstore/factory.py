"""Build a vector store from the ``vector_store`` section of a pipeline config."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hublab.errors import InputError
from hublab.vectorstore.base import VectorStore

_KEYS = {"uri", "token_env", "backend", "exact", "exact_max_vectors", "index", "timeout_s", "mirror_cache"}


def build_vector_store(cfg: dict[str, Any] | None, default_path: Path) -> VectorStore:
    """``uri: null`` → a Milvus Lite file at ``default_path``; ``uri: http://host:19530`` → a server.
    ``exact: auto`` with ``exact_max_vectors: N`` chooses by size: a Lite collection of up to N vectors is searched
    through the exact in-memory mirror, a larger one natively (docs/scale.md). ``index``: the server's vector index
    (``index_spec``: ``{type: HNSW, M: 16, efConstruction: 200, ef: 64}``, IVF_FLAT, FLAT; default AUTOINDEX);
    ``timeout_s``: the bound on every server call, retries included (default 60). ``mirror_cache`` (default true):
    a Lite file inside the project keeps its collections' exact mirrors in ``.cache/mirrors`` between runs
    (:mod:`hublab.vectorstore.mirror_cache`)."""
    cfg = dict(cfg or {})
    unknown = set(cfg) - _KEYS
    if unknown:
        raise InputError(f"unknown vector_store keys {sorted(unknown)}; expected {sorted(_KEYS)}",
                         field="vector_store")
    if cfg.get("backend", "milvus") != "milvus":
        raise InputError("only the 'milvus' backend is supported", field="vector_store.backend")
    from hublab.vectorstore.index_spec import parse_index
    from hublab.vectorstore.milvus import MilvusVectorStore
    from hublab.vectorstore.milvus_client import token_from_env

    index = parse_index(cfg.get("index"))
    timeout = cfg.get("timeout_s", 60.0)
    if timeout is not None and (isinstance(timeout, bool) or not isinstance(timeout, int | float) or timeout <= 0):
        raise InputError(f"vector_store.timeout_s must be a positive number of seconds or null, got {timeout!r}",
                         field="vector_store.timeout_s")

    uri = cfg.get("uri") or str(default_path)
    limit = cfg.get("exact_max_vectors")
    if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 0):
        raise InputError(f"vector_store.exact_max_vectors must be a non-negative integer or null, got {limit!r}",
                         field="vector_store.exact_max_vectors")
    return MilvusVectorStore(uri, token=token_from_env(cfg.get("token_env")), exact=str(cfg.get("exact", "auto")),
                             exact_max_vectors=limit, index=index, timeout_s=timeout,
                             mirror_cache_dir=_mirror_cache_dir(uri) if cfg.get("mirror_cache", True) else None)


def _mirror_cache_dir(uri: str) -> Path | None:
    """``<project>/.cache/mirrors`` for a Lite file inside the project (its indices under ``models/``); None for
    a server and for a file elsewhere (a temporary or foreign index leaves nothing behind in the project)."""
    if not uri.endswith(".db"):
        return None
    from hublab.config import project_root

    root = project_root()
    try:
        Path(uri).resolve().relative_to(root)
    except ValueError:
        return None
    return root / ".cache" / "mirrors"
