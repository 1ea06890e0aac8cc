"""N-Triples and N-Quads read by Oxigraph's parser (``pyoxigraph``, Rust) into rdflib terms: the same triples
rdflib's own reader gives, in a fraction of its time (parsing was two thirds of reading a large file).

Used only where the result is the same term for term. Oxigraph writes a language tag in lower case and reads
``"x"^^xsd:string`` as the plain literal ``"x"``; rdflib keeps both as written, and a literal node's id comes from
its written form. A file holding either, a line longer than the line bound, a base direction or a quoted triple is
read by rdflib's reader instead (:class:`NotFast`), as is any file Oxigraph does not accept: its error is then
rdflib's, located as before. The screening looks at the raw bytes as they stream past, once each.
"""

from __future__ import annotations

import io
import re
from collections.abc import Iterator
from typing import IO, Any

from rdflib import BNode, Graph, Literal, URIRef

_XSD_STRING = "http://www.w3.org/2001/XMLSchema#string"
#: written forms rdflib keeps and Oxigraph normalises: an explicit xsd:string datatype, an upper-case language tag
_NOT_SAME = re.compile(rb'XMLSchema#string>|"@[A-Za-z0-9-]*[A-Z]')
#: bytes of one chunk kept for the next, so that a form split between two reads is still seen
_OVERLAP = 64


class NotFast(Exception):
    """The file needs rdflib's reader (see the module docstring); ``why`` says which case."""


class _Screened(io.RawIOBase):
    """The file's bytes as they are, refusing (:class:`NotFast`) at the first form the fast reader cannot give as
    rdflib would, or at a line of more bytes than the bound's characters (it may still be within the bound in
    characters: rdflib's reader decides)."""

    def __init__(self, inner: IO[bytes], max_line_bytes: int) -> None:
        self._inner = inner
        self._max = max_line_bytes
        self._line = 0  # bytes of the line being read, so far
        self._tail = b""

    def readable(self) -> bool:
        return True

    def readinto(self, b: Any) -> int:
        data = self._inner.read(len(b))
        n = len(data)
        if not n:
            return 0
        b[:n] = data
        if _NOT_SAME.search(self._tail + data):
            raise NotFast("a literal written as rdflib keeps it (xsd:string, or an upper-case language tag)")
        self._tail = data[-_OVERLAP:]
        lines = data.split(b"\n")
        if len(lines) == 1:
            self._line += n
            longest = self._line
        else:
            longest = max(self._line + len(lines[0]), max(map(len, lines[1:-1]), default=0), len(lines[-1]))
            self._line = len(lines[-1])
        if longest > self._max:
            raise NotFast("a line over the line bound")
        return n


def read_fast(source: IO[bytes], graph: Graph, *, quads: bool, max_line_chars: int) -> None:
    """Every triple of an N-Triples (``quads=False``) or N-Quads stream into ``graph``, graph names dropped.

    Raises:
        NotFast: the file needs rdflib's reader; any other exception (Oxigraph's ``SyntaxError``, a read error) means
            the same, and ``graph`` is then partly filled: read again into a new one.
    """
    add = graph.add
    for statement in iter_fast(source, quads=quads, max_line_chars=max_line_chars):
        add(statement)


def iter_fast(source: IO[bytes], *, quads: bool, max_line_chars: int) -> Iterator[tuple[Any, Any, Any]]:
    """The statements of an N-Triples (``quads=False``) or N-Quads stream as rdflib terms, one at a time (graph
    names dropped, so a statement in two named graphs comes twice); raises as :func:`read_fast` does."""
    import pyoxigraph as ox

    iris: dict[str, URIRef] = {}
    named, blank, literal = ox.NamedNode, ox.BlankNode, ox.Literal

    def term(t: Any) -> Any:
        kind = type(t)
        if kind is named:
            v = t.value
            u = iris.get(v)
            if u is None:
                u = iris[v] = URIRef(v)
            return u
        if kind is blank:
            return BNode(t.value)
        if kind is literal:
            if t.direction is not None:
                raise NotFast("a literal with a base direction")
            if t.language:
                return Literal(t.value, lang=t.language)
            dt = t.datatype.value
            return Literal(t.value) if dt == _XSD_STRING else Literal(t.value, datatype=term(t.datatype))
        raise NotFast(f"a {kind.__name__} (a quoted triple)")

    for q in iter_quads(source, quads=quads, max_line_chars=max_line_chars):
        yield term(q.subject), term(q.predicate), term(q.object)


def iter_quads(source: IO[bytes], *, quads: bool, max_line_chars: int) -> Iterator[Any]:
    """The statements of an N-Triples or N-Quads stream as Oxigraph's quads, screened as the module docstring says
    (their literals are then the ones rdflib would read, less its normalisation of typed values); raises as
    :func:`read_fast` does."""
    import pyoxigraph as ox

    fmt = ox.RdfFormat.N_QUADS if quads else ox.RdfFormat.N_TRIPLES
    yield from ox.parse(input=io.BufferedReader(_Screened(source, max_line_chars), 1 << 20), format=fmt)
