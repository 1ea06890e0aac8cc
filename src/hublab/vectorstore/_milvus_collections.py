"""How a :class:`~hublab.vectorstore.milvus.MilvusVectorStore` creates and indexes its collections: a Lite file's
(FLAT when only the exact mirror searches it), a server's (the store's index, key columns, Session consistency), and
a server collection whose index differs from the store's, re-indexed in place."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from hublab.errors import InputError
from hublab.vectorstore.index_spec import IndexSpec

if TYPE_CHECKING:
    from hublab.vectorstore.milvus import MilvusVectorStore

#: Key columns (``ensure_collection(keys=…)``) on a server: VARCHAR of at most this many characters, with this
#: scalar index (MARISA trie: exact and ``in`` lookups; Milvus 2.3 and later).
KEY_MAX_LEN = 512
KEY_INDEX = "Trie"
#: The store's logger: a re-indexing warning is the store's, whichever module says it.
_LOG = logging.getLogger("hublab.vectorstore.milvus")


def create_lite_collection(store: MilvusVectorStore, name: str, dim: int, metric: str) -> None:
    """A Lite file's collection. Searched only through the exact mirror (``exact: auto``/``always`` without
    ``exact_max_vectors``), it gets a FLAT index: with quick setup's AUTOINDEX the Lite engine builds a FAISS HNSW
    index per segment in a background thread after every flush, an index no search here uses, and that build
    (with FAISS's OpenMP threads) went on burning both cores into the first questions after an in-process index
    build (``bench/bench_hublink.py``: CPU time per question above wall time). A collection that may be
    searched natively keeps quick setup's AUTOINDEX."""
    client = store.client
    if not (store.use_mirror and store.exact_max_vectors is None):
        client.create_collection(name, dimension=dim, metric_type=metric, auto_id=True, enable_dynamic_field=True)
        return
    from pymilvus import DataType

    schema = client.create_schema(auto_id=True, enable_dynamic_field=True)
    schema.add_field("id", DataType.INT64, is_primary=True)
    schema.add_field("vector", DataType.FLOAT_VECTOR, dim=dim)
    params = client.prepare_index_params()
    params.add_index("vector", index_type="FLAT", metric_type=metric)
    client.create_collection(name, schema=schema, index_params=params)
    client.load_collection(name)
    store._loaded.add(name)


def index_params(store: MilvusVectorStore, metric: str, keys: tuple[str, ...] = ()):
    """The store's vector index for ``metric``, and a ``KEY_INDEX`` index per key column."""
    params = store.client.prepare_index_params()
    params.add_index("vector", index_type=store.index.type, metric_type=metric, params=dict(store.index.build))
    for key in keys:
        params.add_index(key, index_type=KEY_INDEX)
    return params


def ensure_server_collection(store: MilvusVectorStore, name: str, dim: int, metric: str,
                             keys: tuple[str, ...] = ()) -> None:
    """Create ``name`` with the store's index and Session consistency, or re-index an existing collection whose
    index differs. ``keys``: VARCHAR columns with a ``KEY_INDEX`` index instead of dynamic (JSON) fields: a
    filter on a dynamic field parses every row's JSON per search (measured on 2.3.5, 262,000 rows, FLAT: 68 ms
    per ``hub_root == …`` search, a VARCHAR column 49 ms, with the index 23 ms; docs/scale-out.md). A collection
    created before keeps its dynamic fields (filters give the same rows, only slower).
    Session: a search sees every insert this client made before it (pymilvus's quick setup uses
    Bounded, whose searches may miss the last seconds' inserts); Strong would also see other clients' inserts
    but waits for the server's next time tick on every search (measured on 2.3.5: 244 ms per search vs. 18 ms
    Session, 14 ms Bounded; HubLink makes dozens of searches per question)."""
    from pymilvus import DataType

    client, t = store.client, store.timeout
    if not client.has_collection(name, timeout=t):
        schema = client.create_schema(auto_id=True, enable_dynamic_field=True)
        schema.add_field("id", DataType.INT64, is_primary=True)
        schema.add_field("vector", DataType.FLOAT_VECTOR, dim=dim)
        for key in keys:
            schema.add_field(key, DataType.VARCHAR, max_length=KEY_MAX_LEN)
        try:
            client.create_collection(name, schema=schema, index_params=index_params(store, metric, keys),
                                     consistency_level="Session", timeout=t)
        except Exception as exc:
            if "index" not in str(getattr(exc, "message", exc)).lower():
                raise  # not a refused index (a lost server, ...): the store's _server_call names the URI
            # Milvus 2.3.5 creates the collection before it refuses the index: do not leave it without one
            if client.has_collection(name, timeout=t):
                client.drop_collection(name, timeout=t)
            raise InputError(f"the Milvus server at {store.uri} refused a {store.index.type} index "
                             f"{store.index.as_dict()}: {getattr(exc, 'message', exc)}",
                             field="vector_store.index") from None
        client.load_collection(name, timeout=t)
        store._loaded.add(name)
        return
    reconcile_index(store, name, metric)


def reconcile_index(store: MilvusVectorStore, name: str, metric: str | None) -> None:
    """Rebuild ``name``'s vector index in place when it differs from ``vector_store.index`` (the vectors stay;
    a pipeline that changes only the index needs no new embeddings). Checked when a collection is ensured and
    when it is first loaded in this process (an index built earlier, then searched with other settings)."""
    if store.lite:  # the Lite engine behind a URI keeps its own index
        return
    client, t = store.client, store.timeout
    # pymilvus answers None for a collection without an index; anything else that fails is the server's error
    have = store._server_call(client.describe_index, name, "vector", timeout=t,
                              doing=f"checking the index of {name}") or {}
    metric = metric or str(have.get("metric_type") or "COSINE").upper()
    if not index_matches(store.index, have, metric):
        _LOG.warning("%s on %s: index %s differs from vector_store.index %s: re-indexing in place", name,
                     store.uri, have.get("index_type"), store.index.as_dict())
        if have:
            client.release_collection(name, timeout=t)
            client.drop_index(name, str(have.get("index_name") or "vector"), timeout=t)
        client.create_index(name, index_params(store, metric), timeout=t)
        client.load_collection(name, timeout=t)
        store._loaded.add(name)


def index_matches(index: IndexSpec, desc: dict[str, Any], metric: str) -> bool:
    """Whether a collection's index (``describe_index``) is ``index`` with ``metric``."""
    if not desc:
        return False
    if str(desc.get("index_type", "")).upper() != index.type:
        return False
    if str(desc.get("metric_type", metric)).upper() != metric:
        return False
    return all(str(desc.get(k)) == str(v) for k, v in index.build.items())
