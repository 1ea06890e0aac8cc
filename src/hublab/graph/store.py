"""A graph kept on disk: :class:`StoreKnowledgeGraph`, the same nodes, triples and orders as the in-memory backend,
read by key from a model built once per file content (and label/type settings), with bounded memory.

A store is a folder under the project cache (``<cache>/graph-stores/<digest>``, the digest of the file's bytes and
the settings that shape the model, so a changed file or setting never gets an old answer): ``model.sqlite`` holds
HubLab's model (:mod:`hublab.graph.store_build`), keyed by HubLab id, which for a graph outside ORKG's mapping is a
hash that no RDF store can look up; SPARQL (:meth:`StoreKnowledgeGraph.sparql`) goes to an Oxigraph store
(``pyoxigraph``) bulk-loaded from the file on first use. N-Triples and N-Quads (gzipped or not) are read as a stream;
any other format, or a file with blank nodes (whose ids depend on the whole graph), is read into memory once to build
the store, then released.
"""

from __future__ import annotations

import gzip
import os
import shutil
import sqlite3
import threading
import uuid
from collections.abc import Callable, Iterator, Sequence
from functools import lru_cache
from itertools import chain
from pathlib import Path

import numpy as np
from rdflib import Graph, URIRef
from rdflib.util import from_n3

from hublab.graph.base import KnowledgeGraph
from hublab.graph.edges import EdgeTable
from hublab.graph.model import Knowledge, Triple
from hublab.graph.store_build import TYPE_SEP, BlankNodeFound, IdClash, build_model, oxigraph_rows
from hublab.graph.vocabulary import LITERAL_CLASS, ORKG_PREDICATE, Vocabulary, node_uid, skolemise
from hublab.limits import ReadLimits

MODEL_FILE = "model.sqlite"
_ROW = """SELECT ns.uid, ns.label, ns.types, pr.label, pr.pid, no.uid, no.label, no.types FROM edge e
          JOIN node ns ON ns.ord = e.s JOIN pred pr ON pr.id = e.p JOIN node no ON no.ord = e.o"""
_ROW_ORD = _ROW.replace(" FROM edge e", ", e.ord FROM edge e", 1)
#: nodes whose adjacency lists are kept in memory (a retriever walks the same hubs over and over)
_CACHED_NODES = 1 << 16
#: whether a ``node`` row is a literal, as ``Knowledge.is_literal`` tells one: an id starting with L, or the Literal
#: type among its types (``_IS_LITERAL_ARGS`` fill its placeholders)
_IS_LITERAL = "(uid GLOB 'L*' OR instr(? || types || ?, ?) > 0)"
_IS_LITERAL_ARGS = (TYPE_SEP, TYPE_SEP, f"{TYPE_SEP}{LITERAL_CLASS}{TYPE_SEP}")


@lru_cache(maxsize=1 << 18)
def _knowledge(uid: str, label: str, types: str) -> Knowledge:
    """A node as the model row gives it; one object per recent node, since a hub's node recurs in many triples."""
    return Knowledge(uid, label, tuple(types.split(TYPE_SEP)) if types else ())


def _triple(row: tuple) -> Triple:
    return Triple(_knowledge(row[0], row[1], row[2]), row[3], _knowledge(row[5], row[6], row[7]), row[4])


class StoreKnowledgeGraph(KnowledgeGraph):
    """KnowledgeGraph over a built store folder (:func:`open_store` builds or reuses one)."""

    random_access = True

    def __init__(self, folder: Path, *, name: str = "graph", source: Path | None = None,
                 vocabulary: Vocabulary | None = None,
                 sparql: Callable[[str], list[dict[str, str]]] | None = None) -> None:
        self.folder = Path(folder)
        self.name = name
        self.source = source
        self._sparql = sparql
        self.vocabulary = vocabulary or Vocabulary()
        self._local = threading.local()
        self._ox = None
        self._ox_lock = threading.Lock()
        self.outgoing_cached = lru_cache(_CACHED_NODES)(self._adjacent_of("s"))
        self.incoming_cached = lru_cache(_CACHED_NODES)(self._adjacent_of("o"))

    # ---------------- connection (one per thread and process: sqlite connections do not cross either) -------------
    def _db(self) -> sqlite3.Connection:
        con = getattr(self._local, "con", None)
        if con is None or self._local.pid != os.getpid():
            con = sqlite3.connect(f"file:{self.folder / MODEL_FILE}?mode=ro", uri=True, check_same_thread=False)
            con.execute("PRAGMA query_only=1")
            self._local.con, self._local.pid = con, os.getpid()
        return con

    def __getstate__(self) -> dict:
        state = dict(self.__dict__)
        for key in ("_local", "_ox", "_ox_lock", "outgoing_cached", "incoming_cached"):
            state.pop(key)
        return state

    def __setstate__(self, state: dict) -> None:
        self.__init__(state["folder"], name=state["name"], source=state["source"],  # type: ignore[misc]
                      vocabulary=state["vocabulary"], sparql=state["_sparql"])

    # ---------------- KnowledgeGraph API ----------------
    def entity(self, uid: str) -> Knowledge | None:
        row = self._db().execute("SELECT uid, label, types FROM node WHERE uid = ?", (uid,)).fetchone()
        return _knowledge(*row) if row else None

    def _adjacent_of(self, end: str):
        query = f"{_ROW} WHERE e.{end} = (SELECT ord FROM node WHERE uid = ?) ORDER BY e.ord"

        def adjacent(uid: str) -> tuple[Triple, ...]:
            return tuple(map(_triple, self._db().execute(query, (uid,))))

        return adjacent

    def outgoing(self, uid: str) -> list[Triple]:
        return list(self.outgoing_cached(uid))

    def incoming(self, uid: str) -> list[Triple]:
        return list(self.incoming_cached(uid))

    def entities_by_type(self, type_name: str) -> list[Knowledge]:
        rows = self._db().execute("""SELECT n.uid, n.label, n.types FROM member m JOIN node n ON n.ord = m.node
                                     WHERE m.type = ? ORDER BY m.node""", (type_name,))
        return [_knowledge(*r) for r in rows]

    def triples(self) -> Iterator[Triple]:
        for row in self._db().execute(f"{_ROW} ORDER BY e.ord"):
            yield _triple(row)

    def triples_at(self, positions: Sequence[int]) -> list[Triple]:
        # edge.ord is a triple's position + 1 (rowids from 1, in triples() order). Positions close together (a
        # corpus page) are read as one range of edges, scattered ones by key, in chunks under SQLite's variable limit
        if not len(positions):
            return []
        wanted = sorted({int(p) + 1 for p in positions})
        found: dict[int, Triple] = {}
        con = self._db()
        if wanted[-1] - wanted[0] < 4 * len(wanted) + 64:
            rows = con.execute(f"{_ROW_ORD} WHERE e.ord BETWEEN ? AND ?", (wanted[0], wanted[-1]))
            found = {r[8]: _triple(r) for r in rows}
        else:
            for i in range(0, len(wanted), 500):
                chunk = wanted[i : i + 500]
                rows = con.execute(f"{_ROW_ORD} WHERE e.ord IN ({','.join('?' * len(chunk))})", chunk)
                found.update((r[8], _triple(r)) for r in rows)
        try:
            return [found[int(p) + 1] for p in positions]
        except KeyError as exc:
            raise IndexError(f"no triple at position {exc.args[0] - 1}") from None

    def entities(self) -> Iterator[Knowledge]:
        for row in self._db().execute("SELECT uid, label, types FROM node ORDER BY ord"):
            yield _knowledge(*row)

    def type_counts(self) -> dict[str, tuple[int, int]]:
        rows = self._db().execute("""SELECT m.type, count(*), sum((SELECT count(*) FROM edge WHERE edge.s = m.node))
                                     FROM member m WHERE m.type <> ? GROUP BY m.type""", (LITERAL_CLASS,))
        return {t: (n, out) for t, n, out in rows}

    def edge_table(self) -> EdgeTable:
        # node numbers are the model's node.ord, predicate numbers its pred.id: three integers a triple, read from the
        # edge table in its order; ids only for the nodes a report names
        con = self._db()
        n = int(con.execute("SELECT coalesce(max(ord), -1) + 1 FROM node").fetchone()[0])
        present, literal, labelled = (np.zeros(n, dtype=bool) for _ in range(3))
        uid_len = np.zeros(n, dtype=np.int32)
        rows = np.fromiter(chain.from_iterable(con.execute(
            f"SELECT ord, labelled, {_IS_LITERAL}, length(uid) FROM node", _IS_LITERAL_ARGS)),
            dtype=np.int64).reshape(-1, 4)
        present[rows[:, 0]] = True
        labelled[rows[:, 0]] = rows[:, 1] != 0
        literal[rows[:, 0]] = rows[:, 2] != 0
        uid_len[rows[:, 0]] = rows[:, 3]
        del rows
        edges = np.fromiter(chain.from_iterable(con.execute("SELECT s, p, o FROM edge ORDER BY ord")),
                            dtype=np.int32).reshape(-1, 3)
        labels = dict(con.execute("SELECT id, label FROM pred"))
        predicates = [labels.get(i, "") for i in range(max(labels, default=-1) + 1)]

        def uids_of(numbers: Sequence[int]) -> list[str]:
            found = {}
            for i in range(0, len(numbers), 500):
                chunk = [int(x) for x in numbers[i : i + 500]]
                found.update(con.execute(f"SELECT ord, uid FROM node WHERE ord IN ({','.join('?' * len(chunk))})",
                                         chunk))
            return [found[int(x)] for x in numbers]

        def numbers_of(ids: Sequence[str]) -> np.ndarray:
            found: dict[str, int] = {}
            for i in range(0, len(ids), 500):
                chunk = list(ids[i : i + 500])
                found.update(con.execute(f"SELECT uid, ord FROM node WHERE uid IN ({','.join('?' * len(chunk))})",
                                         chunk))
            return np.asarray([found.get(u, -1) for u in ids], dtype=np.int64)

        return EdgeTable(np.ascontiguousarray(edges[:, 0]), np.ascontiguousarray(edges[:, 1]),
                         np.ascontiguousarray(edges[:, 2]), predicates, present, literal, labelled, uid_len,
                         uids_of, numbers_of)

    def node_counts(self) -> tuple[int, int, int]:
        row = self._db().execute(f"""SELECT count(*), coalesce(sum(lit), 0), coalesce(sum(labelled * (1 - lit)), 0)
            FROM (SELECT labelled, {_IS_LITERAL} AS lit FROM node)""", _IS_LITERAL_ARGS).fetchone()
        return int(row[0]), int(row[1]), int(row[2])

    def __len__(self) -> int:
        return int(self._db().execute("SELECT v FROM meta WHERE k = 'triples'").fetchone()[0])

    def sparql(self, query: str) -> list[dict[str, str]]:
        """A SPARQL query on the file's statements as written (Oxigraph; named graphs seen as one), or on the endpoint
        the graph was read from: rows of {variable: value}."""
        if self._sparql is not None:
            return self._sparql(query)
        result = self._oxigraph().query(query, use_default_graph_as_union=True)
        names = [v.value for v in result.variables]
        return [{n: row[n].value for n in names if row[n] is not None} for row in result]  # type: ignore[union-attr]

    def _oxigraph(self):  # type: ignore[no-untyped-def]
        import pyoxigraph as ox

        with self._ox_lock:
            if self._ox is None:
                path = self.folder / "oxigraph"
                if not (path / "LOADED").exists():
                    if self.source is None:
                        raise RuntimeError(f"the store of graph {self.name!r} has no source file to query")
                    shutil.rmtree(path, ignore_errors=True)
                    _load_oxigraph(ox.Store(str(path)), self.source)
                    (path / "LOADED").touch()
                self._ox = ox.Store(str(path))
            return self._ox

    # ---------------- what the commands ask beyond the interface (as RdfKnowledgeGraph answers it) --------------
    def has_label(self, uid: str) -> bool:
        """Whether the node's label comes from a label predicate (not the IRI's local name)."""
        row = self._db().execute("SELECT labelled FROM node WHERE uid = ?", (uid,)).fetchone()
        return bool(row and row[0])

    def term_of(self, uid: str):  # type: ignore[no-untyped-def]
        """The RDF term (IRI or literal) behind a node id, or None."""
        row = self._db().execute("SELECT lit, key FROM node WHERE uid = ?", (uid,)).fetchone()
        if row is None:
            return None
        return from_n3(row[1]) if row[0] else URIRef(row[1])

    def predicate_iri_of(self, label: str) -> URIRef | None:
        """An IRI of a predicate with this label (the first in the graph's triple order)."""
        row = self._db().execute("""SELECT pr.iri FROM pred pr WHERE pr.label = ? ORDER BY
                                    (SELECT min(ord) FROM edge WHERE edge.p = pr.id) LIMIT 1""", (label,)).fetchone()
        return URIRef(row[0]) if row else None

    def statement(self, t: Triple) -> str:
        """The triple as an N-Triples statement (``<s> <p> <o> .``)."""
        piri = ORKG_PREDICATE[t.predicate_id] if t.predicate_id else self.predicate_iri_of(t.predicate)
        s, o = self.term_of(t.subject.uid), self.term_of(t.object.uid)
        return f"{s.n3()} {piri.n3()} {o.n3()} ."  # type: ignore[union-attr]

    def triple_for_statement(self, s, p, o) -> Triple | None:  # type: ignore[no-untyped-def]
        """The graph's triple for the RDF statement (s, p, o), or None when the graph lacks it."""
        su, ou = node_uid(s), node_uid(o)
        if self.term_of(su) != s or self.term_of(ou) != o:
            return None
        row = self._db().execute("SELECT label, pid FROM pred WHERE iri = ?", (str(p),)).fetchone()
        if row is None:
            return None
        for t in self.outgoing(su):
            if t.object.uid == ou and t.predicate == row[0] and (t.predicate_id or None) == row[1]:
                return t
        return None


def store_folder(cache: Path, digest: str) -> Path:
    """Where the store of a file with this content digest (and model settings) lives."""
    return cache / "graph-stores" / digest[:40]


def _load_oxigraph(store, source: Path) -> None:  # type: ignore[no-untyped-def]
    """Fill the Oxigraph store that answers SPARQL on ``source`` with the statements the model was built from: the
    file itself when Oxigraph reads its format (``.gz`` looked through) and it has no blank node; otherwise rdflib's
    reading with blank nodes skolemised, as the model has them."""
    import pyoxigraph as ox

    from hublab.graph.rdf_files import read_rdf

    gz = source.suffix.lower() == ".gz"
    ext = Path(source.stem if gz else source.name).suffix.lstrip(".").lower()
    fmt = ox.RdfFormat.from_extension(ext) if ext else None
    if fmt is not None:
        with (gzip.open if gz else open)(source, "rb") as fh:
            store.bulk_load(input=fh, format=fmt)
        blank = "ASK { { ?s ?p ?o FILTER(isBlank(?s) || isBlank(?o)) } UNION { GRAPH ?g { ?s ?p ?o "
        if not store.query(blank + "FILTER(isBlank(?s) || isBlank(?o)) } } }"):
            return
        store.clear()
    graph = skolemise(read_rdf(source))
    store.bulk_load(input=graph.serialize(format="nt", encoding="utf-8"), format=ox.RdfFormat.N_TRIPLES)


def open_store(path: Path, folder: Path, *, name: str, vocabulary: Vocabulary | None = None,
               limits: ReadLimits | None = None, progress: bool = False) -> StoreKnowledgeGraph:
    """The store of the RDF file ``path`` in ``folder``, built first when it is not there (atomically: a crash leaves
    no half store, and two processes building at once keep one).

    Raises:
        InputError: the file cannot be read (as :func:`hublab.graph.rdf_files.read_rdf` says).
        GraphError: two terms get the same id.
    """
    from hublab.graph import fast_lines
    from hublab.graph.rdf_files import read_rdf, stream_rdf

    vocab = vocabulary or Vocabulary()
    lim = limits or ReadLimits()

    def fill(db: Path) -> None:
        try:
            quads = stream_rdf(path, progress=progress, limits=lim, oxigraph=True)
            build_model(db, oxigraph_rows(quads, vocab), vocab, rows=True)
        except (fast_lines.NotFast, BlankNodeFound):
            db.unlink(missing_ok=True)
            build_model(db, iter(skolemise(read_rdf(path, progress=progress, limits=lim))), vocab)

    if not (folder / MODEL_FILE).exists():
        _build(fill, folder, name=name, what=path.name, progress=progress)
    return StoreKnowledgeGraph(folder, name=name, source=path, vocabulary=vocab)


def open_read_store(read: Callable[[], Graph], folder: Path, *, name: str, what: str,
                    vocabulary: Vocabulary | None = None, progress: bool = False,
                    sparql: Callable[[str], list[dict[str, str]]] | None = None) -> StoreKnowledgeGraph:
    """The store in ``folder`` of the graph ``read`` gives (a SPARQL endpoint's, read page by page), built first
    when it is not there, so that a graph already kept is not read again; ``sparql`` answers queries (the endpoint
    itself). ``folder`` must be keyed by the graph's content (an endpoint's fingerprint)."""
    vocab = vocabulary or Vocabulary()

    def fill(db: Path) -> None:
        build_model(db, iter(skolemise(read())), vocab)

    if not (folder / MODEL_FILE).exists():
        _build(fill, folder, name=name, what=what, progress=progress)
    return StoreKnowledgeGraph(folder, name=name, vocabulary=vocab, sparql=sparql)


def _build(fill: Callable[[Path], None], folder: Path, *, name: str, what: str, progress: bool) -> None:
    """``fill`` the model file in a new folder, then move it to ``folder`` (kept if another process was first)."""
    from hublab.graph.rdf import GraphError
    from hublab.progress import note

    folder.parent.mkdir(parents=True, exist_ok=True)
    tmp = folder.parent / f".{folder.name}.{uuid.uuid4().hex[:8]}.partial"
    tmp.mkdir()
    try:
        note(progress, f"keeping {what} in an on-disk store ({folder})")
        fill(tmp / MODEL_FILE)
        try:
            tmp.rename(folder)
        except OSError:  # another process built it first
            if not (folder / MODEL_FILE).exists():
                raise
    except IdClash as exc:
        uid, one, other = exc.args
        raise GraphError(f"two nodes of graph {name!r} get the same id {uid}: {one} and {other} "
                         "(a hash clash: rename one of them)") from None
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
