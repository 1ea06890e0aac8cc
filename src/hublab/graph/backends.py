"""The one door through which a graph is opened, however it is given: one backend per way of giving it.

As xarray's backends do for files, each backend answers "can I open this?" (:meth:`GraphBackend.guess_can_open`:
from the argument and the project's settings alone, reading no graph) and "open it": :meth:`GraphBackend.resolve`
gives the content-keyed :class:`~hublab.graph.source.GraphSource` (indices and run identities use its name and
digest), :meth:`GraphBackend.open` reads the graph with the settings it needs (label and type predicates, endpoint
deadlines, read limits). :func:`guess_backend` asks the backends of :func:`backends` in order and the first to claim
the argument opens it: a built-in name, a name declared in ``params.yaml: user_graphs.graphs``, a SPARQL endpoint URL,
an RDF file path, an in-memory ``rdflib.Graph`` (the Python API's). Every command, the pipeline's resources and the
Python API go through :func:`resolve_graph`, :func:`load_source` and :func:`open_graph`; :func:`is_url` is the one
test of "is this a URL".
"""

from __future__ import annotations

import difflib
import hashlib
import re
from abc import ABC, abstractmethod
from dataclasses import replace
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

from rdflib import Graph

from hublab.config import Settings
from hublab.errors import InputError
from hublab.graph.endpoint import SparqlEndpoint
from hublab.graph.rdf_files import RDF_FORMATS, rdf_format
from hublab.graph.source import (
    GraphSource,
    declared_graphs,
    endpoint_settings,
    file_digest,
    model_key,
    model_kind,
    read_limits,
    store_settings,
    vocabulary,
)

if TYPE_CHECKING:
    from hublab.graph.base import KnowledgeGraph
    from hublab.graph.rdf import RdfKnowledgeGraph


#: an endpoint's size in MB, for ``user_graphs.store.above_mb``, is taken as its triples at this many bytes each (an
#: N-Triples line of a typical graph)
NT_BYTES_PER_TRIPLE = 120


def is_url(text: object) -> bool:
    """Whether ``text`` names a SPARQL endpoint (``http://…`` or ``https://…``, any case) rather than a file or name."""
    return isinstance(text, str) and text.lower().startswith(("http://", "https://"))


def _slug(text: str, limit: int = 40) -> str:
    return (re.sub(r"[^A-Za-z0-9_]+", "_", text).strip("_") or "graph")[:limit]


def _with_model(digest: str, model: str) -> str:
    return hashlib.sha256(f"{digest}\nmodel {model}".encode()).hexdigest() if model else digest


class GraphBackend(ABC):
    """One way a graph is given: whether an argument is one, what it resolves to, and how it is read."""

    #: the :attr:`GraphSource.kind` values this backend reads (:func:`load_source` picks the backend by them)
    kinds: ClassVar[tuple[str, ...]] = ()

    @abstractmethod
    def guess_can_open(self, arg: object, st: Settings) -> bool:
        """Whether ``arg`` is given this way (cheap: reads no graph)."""

    @abstractmethod
    def resolve(self, arg: object, st: Settings) -> GraphSource:
        """``arg`` as the :class:`GraphSource` runs and indices key on."""

    def open(self, src: GraphSource, st: Settings, *, progress: bool = False) -> KnowledgeGraph:
        """The graph behind ``src`` (one of :attr:`kinds`)."""
        raise NotImplementedError(f"{type(self).__name__} resolves to another backend's graph")


class BuiltinGraph(GraphBackend):
    """One of the thesis's graphs by name (``gv1`` … ``gv4``, ``gv3_orkg``): a DVC output of the project."""

    kinds = ("builtin",)

    def guess_can_open(self, arg: object, st: Settings) -> bool:
        return isinstance(arg, str) and arg in st.graph_names()

    def resolve(self, arg: object, st: Settings) -> GraphSource:
        name = str(arg)
        path = st.graph_file(name)
        return GraphSource(name, "builtin", str(path), name, file_digest(path) if path.exists() else "missing")

    def open(self, src: GraphSource, st: Settings, *, progress: bool = False) -> KnowledgeGraph:
        from hublab.graph.rdf import RdfKnowledgeGraph

        path = Path(src.location)
        if not path.exists():
            raise InputError(f"graph {src.name!r} not built yet (run `dvc repro` or `hublab data graphs` / "
                             "`hublab data snapshot`)", file=str(path))
        return _open_file(path, src, st, progress=progress) or RdfKnowledgeGraph.load(path, name=src.name)


def _open_file(path: Path, src: GraphSource, st: Settings, *, progress: bool) -> KnowledgeGraph | None:
    """The file's on-disk store when ``params.yaml: user_graphs.store`` puts it on disk, else None (read it into
    memory). An ORKG export ``.json`` is always read into memory: its order is the export's, not the RDF mapping's."""
    mode, above_mb = store_settings(st)
    if path.suffix == ".json" or mode == "memory" or (mode == "auto" and path.stat().st_size < above_mb * 1e6):
        return None
    from hublab.graph.store import open_store, store_folder

    return open_store(path, store_folder(st.cache_dir(), src.digest), name=src.name, vocabulary=vocabulary(st),
                      limits=read_limits(st), progress=progress)


class RdfFileGraph(GraphBackend):
    """A path to an RDF file (by suffix, gzipped too) or an ORKG export ``.json``; named ``<stem>-<12 hex>``."""

    kinds = ("file", "declared")

    def guess_can_open(self, arg: object, st: Settings) -> bool:
        if not isinstance(arg, str) or is_url(arg):
            return False
        path = Path(arg)
        return rdf_format(path) is not None or path.suffix == ".json" or "/" in arg or path.exists()

    def resolve(self, arg: object, st: Settings, *, base: Path | None = None) -> GraphSource:
        """``base``: the folder a relative path is relative to (the working folder unless given)."""
        loc = str(arg)
        path = Path(loc)
        if not path.is_absolute():
            path = (Path.cwd() if base is None else base) / path
        if not path.exists():
            raise InputError("graph file not found", file=loc, field="--graph")
        if not path.is_file():
            raise InputError("expected an RDF file, got a directory", file=loc, field="--graph")
        if rdf_format(path) is None and path.suffix != ".json":
            raise InputError(f"unknown graph file type {path.suffix!r}; expected one of "
                             f"{', '.join(sorted(RDF_FORMATS))} (optionally .gz) or an ORKG export .json", file=loc,
                             field="--graph")
        model = model_key(st)
        digest = _with_model(file_digest(path), model)
        return GraphSource(loc, "file", str(path.resolve()), f"{_slug(path.name.split('.')[0])}-{digest[:12]}",
                           digest, model=model, model_kind=model_kind(vocabulary(st)))

    def open(self, src: GraphSource, st: Settings, *, progress: bool = False) -> KnowledgeGraph:
        from hublab.graph.rdf import RdfKnowledgeGraph

        return _open_file(Path(src.location), src, st, progress=progress) or RdfKnowledgeGraph.load(
            src.location, name=src.name, vocabulary=vocabulary(st), progress=progress, limits=read_limits(st))


class SparqlEndpointGraph(GraphBackend):
    """A SPARQL 1.1 endpoint URL: read whole, checked against the fingerprint it had when resolved; named
    ``sparql-<12 hex of the fingerprint>``. The name, and so the index folders and run identities, follow the
    content, not the URL: the same graph served on another port or host reuses its indices and run checkpoints."""

    kinds = ("endpoint",)

    def guess_can_open(self, arg: object, st: Settings) -> bool:
        return is_url(arg)

    def resolve(self, arg: object, st: Settings) -> GraphSource:
        loc = str(arg)
        ep = SparqlEndpoint(loc, endpoint_settings(st))
        count, content = ep.fingerprint()
        model = model_key(st)
        digest = _with_model(hashlib.sha256(f"sparql endpoint\n{content}".encode()).hexdigest(), model)
        return GraphSource(loc, "endpoint", loc, f"sparql-{digest[:12]}", digest,
                           triples=count, fingerprint=(count, content), model=model,
                           model_kind=model_kind(vocabulary(st)))

    def open(self, src: GraphSource, st: Settings, *, progress: bool = False) -> KnowledgeGraph:
        """Read page by page; kept in the on-disk store when the store settings say so for its size (then read once:
        the store is keyed by the content fingerprint, so a later open only takes the fingerprint)."""
        from hublab.graph.ill_typed import counted
        from hublab.graph.rdf import RdfKnowledgeGraph

        ep = SparqlEndpoint(src.location, endpoint_settings(st))

        def read() -> Graph:
            with counted(ep.shown):
                return ep.read(fingerprint=src.fingerprint, expected=None if src.fingerprint else src.triples,
                               progress=progress, limits=read_limits(st))

        mode, above_mb = store_settings(st)
        if mode == "disk" or (mode == "auto" and (src.triples or 0) * NT_BYTES_PER_TRIPLE >= above_mb * 1e6):
            from hublab.graph.store import open_read_store, store_folder

            return open_read_store(read, store_folder(st.cache_dir(), src.digest), name=src.name, what=ep.shown,
                                   vocabulary=vocabulary(st), progress=progress, sparql=ep.select)
        return RdfKnowledgeGraph(read(), name=src.name, vocabulary=vocabulary(st))

    @staticmethod
    def live(url: str, *, name: str = "remote") -> RdfKnowledgeGraph:
        """The endpoint as a live store holding HubLab's RDF mapping: every lookup a SPARQL query, nothing read ahead
        (no in-memory index), so a graph larger than one machine's memory works behind the same interface."""
        from rdflib.plugins.stores.sparqlstore import SPARQLStore

        from hublab.graph.rdf import RdfKnowledgeGraph

        return RdfKnowledgeGraph(Graph(store=SPARQLStore(url)), name=name, index=False)


class DeclaredGraph(GraphBackend):
    """A name declared in ``params.yaml: user_graphs.graphs``: its file (relative to the project) or endpoint, with
    the hub types declared beside it."""

    kinds = ()  # resolves to a file ("declared") or an endpoint, which those backends read

    def guess_can_open(self, arg: object, st: Settings) -> bool:
        return isinstance(arg, str) and arg in declared_graphs(st)

    def resolve(self, arg: object, st: Settings) -> GraphSource:
        name = str(arg)
        spec = declared_graphs(st)[name]
        loc = spec["source"]
        inner = SparqlEndpointGraph().resolve(loc, st) if is_url(loc) else RdfFileGraph().resolve(loc, st,
                                                                                                   base=st.root)
        return replace(inner, arg=name, kind="declared" if inner.kind == "file" else "endpoint", name=name,
                       hub_types=tuple(spec["hub_types"]))


class InMemoryGraph(GraphBackend):
    """An ``rdflib.Graph`` handed to the Python API: written once to the project's cache as canonical N-Triples named
    by its content, then opened as that file (the same graph is the same file, name, index and runs)."""

    def guess_can_open(self, arg: object, st: Settings) -> bool:
        return isinstance(arg, Graph)

    def location(self, graph: Graph, st: Settings) -> str:
        """The cached N-Triples file of ``graph`` (written when absent): what ``--graph`` is given for it."""
        from rdflib.compare import to_canonical_graph  # blank nodes named by content: the same graph, the same text

        from hublab.atomic import write_text_atomic

        text = "".join(sorted(f"{line}\n" for line in to_canonical_graph(graph).serialize(format="nt").splitlines()
                              if line.strip()))
        path = st.cache_dir() / "graphs" / f"rdflib-{hashlib.sha256(text.encode()).hexdigest()[:12]}.nt"
        if not path.is_file():
            path.parent.mkdir(parents=True, exist_ok=True)
            write_text_atomic(path, text)
        return str(path)

    def resolve(self, arg: object, st: Settings) -> GraphSource:
        assert isinstance(arg, Graph)
        return RdfFileGraph().resolve(self.location(arg, st), st)


@cache
def backends() -> tuple[GraphBackend, ...]:
    """The backends in the order they are asked (the first to claim an argument opens it)."""
    return (BuiltinGraph(), DeclaredGraph(), SparqlEndpointGraph(), RdfFileGraph(), InMemoryGraph())


def guess_backend(arg: object, st: Settings) -> GraphBackend:
    """The backend that opens ``arg``.

    Raises:
        InputError: no backend claims it: one line naming what ``--graph`` accepts (and a close name, if one).
    """
    for backend in backends():
        if backend.guess_can_open(arg, st):
            return backend
    names = [*st.graph_names(), *declared_graphs(st)]
    close = difflib.get_close_matches(str(arg), names, n=1)
    hint = f"did you mean {close[0]!r}? " if close else ""
    raise InputError(f"unknown graph {arg!r}; {hint}valid: {', '.join(names)}, a path to an RDF file "
                     f"({', '.join(sorted(RDF_FORMATS))}, optionally .gz), or a SPARQL endpoint URL (http://…)",
                     field="--graph")


def backend_for(src: GraphSource) -> GraphBackend:
    """The backend that reads a resolved source (a kind none names is read as a file)."""
    return next((b for b in backends() if src.kind in b.kinds), RdfFileGraph())


def resolve_graph(arg: object, st: Settings) -> GraphSource:
    """``arg`` (a name, a path, a URL, an ``rdflib.Graph``) as a :class:`GraphSource`; an unknown name is one error
    listing what ``--graph`` accepts."""
    arg = arg if isinstance(arg, Graph) else str(arg)
    return guess_backend(arg, st).resolve(arg, st)


def load_source(src: GraphSource, st: Settings, *, progress: bool = False) -> KnowledgeGraph:
    """The graph behind ``src``: in memory (:class:`~hublab.graph.rdf.RdfKnowledgeGraph`) or, for a file the store
    settings put on disk, its on-disk store (:class:`~hublab.graph.store.StoreKnowledgeGraph`)."""
    return backend_for(src).open(src, st, progress=progress)


def open_graph(arg: object, st: Settings, *, progress: bool = False) -> KnowledgeGraph:
    """``arg`` resolved and read (uncached: ``hublab.pipeline.resources.load_graph`` keeps one per process)."""
    return load_source(resolve_graph(arg, st), st, progress=progress)


def open_file(path: str | Path) -> RdfKnowledgeGraph:
    """An RDF file or ORKG export by path, outside any project: the default label and type predicates and read
    limits, named after the file's stem."""
    from hublab.graph.rdf import RdfKnowledgeGraph

    return RdfKnowledgeGraph.load(path)
