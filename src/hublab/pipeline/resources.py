"""Build the resources a retriever needs (graph, embedder, LLM, vector store) for a pipeline + graph.

Loaded objects are cached per process, keyed by their config, so tuning trials and repeated runs share
one graph, one embedding model (on GPU when present) and one Milvus client.
"""

from __future__ import annotations

import json
import re
import threading
from pathlib import Path
from typing import Any

from hublab.config import Settings
from hublab.config import settings as load_settings
from hublab.graph.backends import is_url, load_source, resolve_graph
from hublab.graph.base import KnowledgeGraph
from hublab.graph.source import GraphSource, model_key, store_settings
from hublab.pipeline.config import PipelineConfig
from hublab.retrievers.base import Resources

_CACHE: dict[str, Any] = {}
_LOCK = threading.RLock()


def _key(kind: str, *parts: Any) -> str:
    return kind + ":" + json.dumps(parts, sort_keys=True, default=str)


def graph_source(name: str, st: Settings | None = None) -> GraphSource:
    """What ``--graph`` names (a built-in or declared name, an RDF file, a SPARQL endpoint), resolved once per process
    and argument (a file whose bytes changed, or other label predicates, resolve anew)."""
    st = st or load_settings()
    path = Path(name)
    stamp = None
    try:
        if not is_url(name) and path.is_file():
            stamp = (path.stat().st_size, path.stat().st_mtime_ns)
    except OSError:
        pass
    key = _key("source", str(st.root), name, stamp, model_key(st))
    with _LOCK:
        if key not in _CACHE:
            _CACHE[key] = resolve_graph(name, st)
        return _CACHE[key]


def load_graph(name: str, st: Settings | None = None, *, progress: bool = False) -> KnowledgeGraph:
    """The graph ``--graph`` names, loaded once per process and content (see :func:`graph_source`): the graph door
    (:mod:`hublab.graph.backends`) behind a cache."""
    st = st or load_settings()
    src = graph_source(name, st)
    with _LOCK:
        key = _key("graph", src.kind, src.location, src.digest, store_settings(st))  # kept in memory or on disk
        if key not in _CACHE:
            _CACHE[key] = load_source(src, st, progress=progress)
        return _CACHE[key]


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_]", "_", text)


def index_path(st: Settings, graph_name: str, retriever_type: str):
    """The graph's name is the source's (:func:`graph_source`): a file's or endpoint's carries its content hash.
    ``models/<graph>__<retriever>/index.db``: one folder per index (Milvus Lite file + manifests), the unit
    DVC versions as the ``index`` stage's output."""
    name = graph_source(graph_name, st).index_name
    return st.index_dir() / f"{_slug(name)}__{_slug(retriever_type)}" / "index.db"


def build_resources(cfg: PipelineConfig, graph_name: str, *, settings: Settings | None = None,
                    need_llm: bool = True) -> Resources:
    st = settings or load_settings()
    graph = load_graph(graph_name, st)
    src = graph_source(graph_name, st)
    cache_dir = st.cache_dir()
    with _LOCK:
        ekey = _key("emb", cfg.embedder, str(cache_dir))
        if ekey not in _CACHE:
            from hublab.embedding.factory import build_embedder

            _CACHE[ekey] = build_embedder(cfg.embedder, cache_dir=cache_dir)
        embedder = _CACHE[ekey]
        llm = None
        if need_llm:
            lkey = _key("llm", cfg.llm, str(cache_dir))
            if lkey not in _CACHE:
                from hublab.llm.factory import build_llm

                _CACHE[lkey] = build_llm(cfg.llm, cache_dir=cache_dir)
            llm = _CACHE[lkey]
        db_path = index_path(st, graph_name, cfg.retriever_type)
        vkey = _key("vs", cfg.vector_store, str(db_path))
        if vkey not in _CACHE:
            from hublab.vectorstore.factory import build_vector_store

            _CACHE[vkey] = build_vector_store(cfg.vector_store, db_path)
        store = _CACHE[vkey]
    index_name = _slug(f"{cfg.retriever_type}_{src.name}_{embedder.name}").lower()
    # the research field is the thesis's graphs' entry point; a user's graph has none (every hub is indexed)
    roots = st.section("graphs").get("research_field_id") if src.builtin else None
    return Resources(graph=graph, embedder=embedder, llm=llm, vector_store=store, index_name=index_name,
                     cache_dir=str(cache_dir), index_dir=str(db_path.parent), root_entity_ids=[roots] if roots else [])


def pipe_llm(cfg: PipelineConfig, pipe: str, settings: Settings | None = None):
    """The (cached) LLM object for a pipe that may override the pipeline's LLM."""
    st = settings or load_settings()
    llm_cfg = cfg.pipe_llm(pipe)
    with _LOCK:
        key = _key("llm", llm_cfg, str(st.cache_dir()))
        if key not in _CACHE:
            from hublab.llm.factory import build_llm

            _CACHE[key] = build_llm(llm_cfg, cache_dir=st.cache_dir())
        return _CACHE[key]
