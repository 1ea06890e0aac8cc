"""Building a graph's on-disk model (:mod:`hublab.graph.store`) from a stream of its RDF statements, in bounded memory.

The statements are staged in SQLite and HubLab's model is worked out there, the same model the in-memory backend
(:meth:`hublab.graph.rdf.RdfKnowledgeGraph._build_index`) works out in Python: which terms are nodes, each node's id,
label and types, and the triples in the same order. SQLite sorts on disk, so memory does not grow with the graph,
and its BINARY collation compares UTF-8 bytes, which orders text as Python's ``str`` comparison does.

Orders (the retrievers' ties depend on them): nodes by their term (IRIs by their text, then literals by their
N-Triples form), triples by subject text, predicate IRI, then object as nodes are ordered.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Iterator
from functools import lru_cache
from pathlib import Path

from rdflib import Literal, URIRef

from hublab.graph.vocabulary import (
    LITERAL_CLASS,
    ORKG_PREDICATE,
    Vocabulary,
    fallback_label,
    literal_uid,
    local_name,
    node_uid,
    type_name,
)

#: a node's types are kept as one text, joined by this (a character no IRI or class name holds)
TYPE_SEP = "\x1f"
_BATCH = 50_000


class BlankNodeFound(Exception):
    """The stream holds a blank node: its id depends on its whole content (read it into memory and skolemise)."""


class IdClash(Exception):
    """Two terms of the graph get the same HubLab id: ``args`` are the id and both terms."""


def _staged_rows(statements: Iterable[tuple], vocab: Vocabulary) -> Iterator[tuple]:
    """Each statement as a staging row: (subject, predicate, object key, is literal, literal text, language, kind),
    kind 0 a triple, 1 a label statement (its rank), 2 a type statement (its class name in the text column)."""
    ranks = {str(p): i for i, p in enumerate(vocab.label_predicates)}
    types = {str(p) for p in vocab.type_predicates}
    for s, p, o in statements:
        if not isinstance(s, URIRef) or not isinstance(o, URIRef | Literal):
            raise BlankNodeFound
        ps = str(p)
        if ps in types:
            yield (str(s), ps, _key(o), isinstance(o, Literal), type_name(o), None, 2)
            continue
        rank = ranks.get(ps)
        if isinstance(o, Literal):
            yield (str(s), ps, o.n3(), True, str(o), o.language, 0 if rank is None else 1)
        else:
            yield (str(s), ps, str(o), False, None, None, 0 if rank is None else 1)


_XSD_STRING = "http://www.w3.org/2001/XMLSchema#string"


def plain_n3(value: str, language: str | None) -> str:
    """rdflib's N-Triples form of a plain or language-tagged literal (``Literal(value, lang=language).n3()``)."""
    if "\n" in value:
        return Literal(value, lang=language).n3()
    text = '"' + value.replace("\\", "\\\\").replace('"', '\\"').replace("\r", "\\r") + '"'
    return text + "@" + language if language else text


@lru_cache(maxsize=1 << 16)
def _typed(value: str, datatype: str) -> tuple[str, str]:
    """(N-Triples form, text) of a typed literal as rdflib gives them (it may normalise the value: ``01`` → ``1``)."""
    lit = Literal(value, datatype=URIRef(datatype))
    return lit.n3(), str(lit)


def oxigraph_rows(quads: Iterable, vocab: Vocabulary) -> Iterator[tuple]:
    """:func:`_staged_rows` of Oxigraph's quads (:func:`hublab.graph.fast_lines.iter_quads`): the terms rdflib would
    read (``fast_lines.iter_fast``), without making them.

    Raises:
        BlankNodeFound: a blank node.
        fast_lines.NotFast: a term rdflib's reader must read (a base direction, a quoted triple).
    """
    import pyoxigraph as ox

    from hublab.graph.fast_lines import NotFast

    ranks = {str(p): i for i, p in enumerate(vocab.label_predicates)}
    types = {str(p) for p in vocab.type_predicates}
    named, literal = ox.NamedNode, ox.Literal
    for q in quads:
        s, o = q.subject, q.object
        if type(s) is not named:
            raise BlankNodeFound
        ps = q.predicate.value
        kind = type(o)
        if kind is named:
            key, lit, val, lang = o.value, False, None, None
        elif kind is literal:
            if o.direction is not None:
                raise NotFast("a literal with a base direction")
            lit, lang, dt = True, o.language, o.datatype.value
            if lang or dt == _XSD_STRING:
                key, val = plain_n3(o.value, lang), o.value
            else:
                key, val = _typed(o.value, dt)
        elif kind is ox.BlankNode:
            raise BlankNodeFound
        else:
            raise NotFast(f"a {kind.__name__} (a quoted triple)")
        if ps in types:
            yield (s.value, ps, key, lit, type_name(Literal(val) if lit else URIRef(key)), None, 2)
            continue
        rank = ranks.get(ps)
        yield (s.value, ps, key, lit, val, lang, 0 if rank is None else 1)


def _key(term) -> str:
    return term.n3() if isinstance(term, Literal) else str(term)


_SCHEMA = """
CREATE TABLE node(ord INTEGER PRIMARY KEY, uid TEXT NOT NULL UNIQUE, lit INTEGER NOT NULL, key TEXT NOT NULL,
                  label TEXT NOT NULL, types TEXT NOT NULL, labelled INTEGER NOT NULL);
CREATE TABLE pred(id INTEGER PRIMARY KEY, iri TEXT NOT NULL UNIQUE, label TEXT NOT NULL, pid TEXT);
CREATE TABLE edge(ord INTEGER PRIMARY KEY, s INTEGER NOT NULL, p INTEGER NOT NULL, o INTEGER NOT NULL);
CREATE TABLE member(type TEXT NOT NULL, node INTEGER NOT NULL, PRIMARY KEY (type, node)) WITHOUT ROWID;
CREATE TABLE meta(k TEXT PRIMARY KEY, v TEXT) WITHOUT ROWID;
"""


def build_model(db: Path, statements: Iterable[tuple], vocab: Vocabulary, *, rows: bool = False,
                on_stage=None) -> None:
    """Write the model of ``statements`` (rdflib terms, blank nodes already skolemised; ``rows``: staging rows as
    :func:`oxigraph_rows` gives them) to a new SQLite file ``db``.

    Raises:
        BlankNodeFound: a statement holds a blank node (``db`` is then incomplete: remove it).
        IdClash: two terms get the same id (a hash clash).
    """
    con = sqlite3.connect(db, isolation_level=None)
    try:
        con.executescript("PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF; PRAGMA temp_store=FILE;"
                          "PRAGMA cache_size=-262144;" + _SCHEMA)
        con.execute("CREATE TABLE st(s TEXT, p INTEGER, o TEXT, lit INTEGER, val TEXT, lang TEXT, kind INTEGER)")
        con.execute("BEGIN")
        staged = iter(statements) if rows else _staged_rows(statements, vocab)
        predicates: dict[str, int] = {}  # a predicate's IRI -> its number in the staging (a graph has few)

        def batches() -> Iterator[list[tuple]]:
            while batch := [(r[0], predicates.setdefault(r[1], len(predicates)), *r[2:])
                            for _, r in zip(range(_BATCH), staged, strict=False)]:
                yield batch

        for batch in batches():
            con.executemany("INSERT INTO st VALUES (?,?,?,?,?,?,?)", batch)
            if on_stage is not None:
                on_stage(len(batch))
        con.execute("CREATE TEMP TABLE sp(n INTEGER PRIMARY KEY, iri TEXT UNIQUE)")
        con.executemany("INSERT INTO sp VALUES (?,?)", [(n, iri) for iri, n in predicates.items()])
        con.execute("COMMIT")
        _derive(con, vocab)
    finally:
        con.close()


def _derive(con: sqlite3.Connection, vocab: Vocabulary) -> None:
    """The model from the staged statements (see the module docstring), then the staging dropped."""
    ranks = {str(p): i for i, p in enumerate(vocab.label_predicates)}
    con.execute("BEGIN")
    con.execute("CREATE TEMP TABLE lp(n INTEGER PRIMARY KEY, rank INTEGER)")
    con.executemany("INSERT INTO lp SELECT n, ? FROM sp WHERE iri = ?", [(r, iri) for iri, r in ranks.items()])
    # a term's label: of its literal values by the first label predicate it has, untagged or English first, then the
    # smallest text (RdfKnowledgeGraph._label_rank)
    con.execute("""CREATE TEMP TABLE lab AS SELECT s, val FROM (
        SELECT st.s, st.val, ROW_NUMBER() OVER (PARTITION BY st.s ORDER BY lp.rank,
               (st.lang IS NOT NULL AND st.lang <> 'en'), st.val) AS n
        FROM st JOIN lp ON lp.n = st.p WHERE st.kind = 1 AND st.lit) WHERE n = 1""")
    con.execute("CREATE UNIQUE INDEX temp.lab_s ON lab(s)")
    con.execute("CREATE TEMP TABLE typ AS SELECT DISTINCT s, val AS name FROM st WHERE kind = 2")
    con.execute("CREATE INDEX temp.typ_s ON typ(s)")
    # the nodes: every end of a triple, and every labelled or typed term that is neither a predicate nor a class
    con.execute("""CREATE TEMP TABLE nodes AS
        SELECT 0 AS lit, s AS key, NULL AS val FROM st WHERE kind = 0
        UNION SELECT lit, o, val FROM st WHERE kind = 0
        UNION SELECT 0, s, NULL FROM (SELECT s FROM lab UNION SELECT s FROM typ)
              WHERE s NOT IN (SELECT iri FROM sp) AND s NOT IN (SELECT o FROM st WHERE kind = 2 AND NOT lit)""")
    rows = con.execute("""SELECT n.lit, n.key, n.val, lab.val, (SELECT group_concat(name, char(31)) FROM typ
                          WHERE typ.s = n.key) FROM nodes n LEFT JOIN lab ON lab.s = n.key AND NOT n.lit
                          ORDER BY n.lit, n.key""")
    ord_ = 0
    batch: list[tuple] = []
    members: list[tuple] = []
    insert = "INSERT INTO node VALUES (?,?,?,?,?,?,?)"
    for lit, key, val, label, names in rows:
        if lit:
            uid, text, kinds, labelled = literal_uid(key), val, (LITERAL_CLASS,), 0
        else:
            term = URIRef(key)
            kinds = tuple(sorted(set(names.split(TYPE_SEP)))) if names else ()
            uid, labelled = node_uid(term), label is not None
            text = label if labelled else fallback_label(term, kinds)
        batch.append((ord_, uid, lit, key, text, TYPE_SEP.join(kinds), labelled))
        members.extend((k, ord_) for k in kinds)
        ord_ += 1
        if len(batch) >= _BATCH:
            _insert_nodes(con, insert, batch, members)
    _insert_nodes(con, insert, batch, members)
    con.execute("CREATE UNIQUE INDEX node_key ON node(lit, key)")
    preds = con.execute("""SELECT sp.n, sp.iri, lab.val FROM sp LEFT JOIN lab ON lab.s = sp.iri
                           WHERE sp.n IN (SELECT DISTINCT p FROM st WHERE kind = 0) ORDER BY sp.iri""").fetchall()
    pfx = str(ORKG_PREDICATE)
    con.execute("CREATE TEMP TABLE pn(n INTEGER PRIMARY KEY, id INTEGER)")  # staging number -> predicate id
    for i, (n, p, label) in enumerate(preds, 1):  # ids in the order of the predicates' IRIs
        con.execute("INSERT INTO pred VALUES (?,?,?,?)",
                    (i, p, label if label is not None else local_name(p), p[len(pfx):] if p.startswith(pfx) else None))
        con.execute("INSERT INTO pn VALUES (?,?)", (n, i))
    con.execute("""INSERT INTO edge(s, p, o) SELECT DISTINCT ns.ord, pr.id, no.ord FROM st
                   JOIN node ns ON ns.lit = 0 AND ns.key = st.s JOIN pn ON pn.n = st.p JOIN pred pr ON pr.id = pn.id
                   JOIN node no ON no.lit = st.lit AND no.key = st.o WHERE st.kind = 0
                   ORDER BY ns.ord, pr.id, no.ord""")
    con.execute("DROP TABLE st")
    con.execute("CREATE INDEX edge_s ON edge(s)")
    con.execute("CREATE INDEX edge_o ON edge(o)")
    con.execute("CREATE INDEX pred_label ON pred(label)")
    con.execute("INSERT INTO meta VALUES ('triples', (SELECT count(*) FROM edge))")
    con.execute("COMMIT")
    con.execute("VACUUM")


def _insert_nodes(con: sqlite3.Connection, insert: str, batch: list[tuple], members: list[tuple]) -> None:
    try:
        con.executemany(insert, batch)
    except sqlite3.IntegrityError:
        _raise_clash(con, batch)
        raise
    con.executemany("INSERT INTO member VALUES (?,?)", members)
    batch.clear()
    members.clear()


def _raise_clash(con: sqlite3.Connection, batch: list[tuple]) -> None:
    seen: dict[str, str] = {}
    for _o, uid, _l, key, *_ in batch:
        if uid in seen:
            raise IdClash(uid, seen[uid], key)
        seen[uid] = key
        known = con.execute("SELECT key FROM node WHERE uid = ?", (uid,)).fetchone()
        if known is not None:
            raise IdClash(uid, known[0], key)
