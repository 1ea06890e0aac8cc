"""rdflib's parsers, bounded and offline: what reading a hostile or careless graph file may cost.

- N-Triples and N-Quads: rdflib's reader re-scans and re-joins its whole buffer for every 2 KB of a line, so a
  4 MB literal took minutes; these readers are linear in a line's length and refuse a line longer than
  ``user_graphs.limits.max_line_mb`` naming its line number.
- RDF/XML: a DTD entity that refers to other entities (a "billion laughs"), a parameter or an external entity is
  refused before any expansion; rdflib joins a literal's text piece by piece (quadratic in the number of pieces,
  one per entity reference), which is done linearly here.
- JSON-LD: rdflib fetches every ``@context`` given as a URL (any address, ``file://`` too, no deadline); HubLab
  reads graphs offline, so such a file is refused naming the context, unless ``HUBLAB_ALLOW_REMOTE_CONTEXTS=1``.
- A stream that counts what it expands to (a ``.gz`` file), stopping at :class:`~hublab.limits.ReadLimits`.
"""

from __future__ import annotations

import io
import json
import os
import re
from collections.abc import Callable, Iterator
from typing import IO, Any
from xml.sax import expatreader, handler

from rdflib import Graph
from rdflib.parser import InputSource, Parser, PythonInputSource
from rdflib.plugin import register
from rdflib.plugins.parsers.jsonld import JsonLDParser
from rdflib.plugins.parsers.nquads import NQuadsParser
from rdflib.plugins.parsers.ntriples import NTGraphSink, W3CNTriplesParser
from rdflib.plugins.parsers.rdfxml import ErrorHandler, RDFXMLHandler, RDFXMLParser

from hublab.limits import ReadLimits

#: the environment variable that lets a JSON-LD file's remote ``@context`` be fetched
ALLOW_CONTEXTS_ENV = "HUBLAB_ALLOW_REMOTE_CONTEXTS"
#: an RDF/XML entity's replacement text may be this long (namespace abbreviations are far shorter)
MAX_ENTITY_CHARS = 1024
_CHUNK = 1 << 16
_EOL = re.compile(r"\r\n?|\n")


class ReadRefused(Exception):
    """A bound of this module was reached, or a line does not parse; ``line`` is where, when known. Raised through
    rdflib's parsers, which let it pass (they catch their own errors only)."""

    def __init__(self, message: str, line: int | None = None, *, parse_error: bool = False) -> None:
        super().__init__(message)
        self.line = line
        self.parse_error = parse_error  #: the input does not parse (else: a bound was reached)


class _LinearLines:
    """``readline`` for rdflib's N-Triples family: each character is looked at once, and a line is bounded."""

    file: Any
    buffer: str | None
    max_line_chars: int = ReadLimits().max_line_chars
    lineno: int = 0
    _pos: int = 0

    def readline(self) -> str | None:
        parts: list[str] = []
        size = 0
        buf = self.buffer or ""
        pos = self._pos if buf else 0  # where the unread part of ``buf`` starts (slicing it per line is quadratic)
        while True:
            m = _EOL.search(buf, pos)
            if m and not (m.group() == "\r" and m.end() == len(buf)):  # "\r" last: a "\r\n" may span two reads
                line = buf[pos:m.start()]
                if parts:
                    line = "".join(parts) + line
                self.buffer, self._pos = buf, m.end()
                self.lineno += 1
                self._check(size + m.start() - pos)
                return line
            more = self.file.read(_CHUNK)
            if not more:
                line = "".join(parts) + buf[pos:]
                self.buffer, self._pos = "", 0
                if not line.strip():
                    return None
                self.lineno += 1
                self._check(len(line))
                return line
            keep = 1 if buf.endswith("\r") else 0
            parts.append(buf[pos:len(buf) - keep])
            size += len(buf) - keep - pos
            buf, pos = buf[len(buf) - keep:] + more, 0
            self._check(size, ending=False)

    def _check(self, chars: int, *, ending: bool = True) -> None:
        if chars > self.max_line_chars:
            n = self.lineno + (0 if ending else 1)
            raise ReadRefused(f"the line is longer than {self.max_line_chars / (1 << 20):g} MB (raise params.yaml: "
                              "user_graphs.limits.max_line_mb if such a literal is meant)", line=n)


class LinearNTriplesParser(_LinearLines, W3CNTriplesParser):
    """rdflib's N-Triples parser with a linear, bounded line reader; parse errors name their line."""

    def parse(self, f, bnode_context=None, skolemize: bool = False):  # type: ignore[no-untyped-def]
        try:
            return super().parse(f, bnode_context=bnode_context, skolemize=skolemize)
        except ReadRefused:
            raise
        except Exception as exc:
            raise ReadRefused(str(exc), line=self.lineno, parse_error=True) from None


class LinearNQuadsParser(_LinearLines, NQuadsParser):
    """rdflib's N-Quads parser with the same line reader."""

    def parse(self, inputsource, sink, bnode_context=None, skolemize: bool = False, **kwargs: Any):  # type: ignore[no-untyped-def, override]
        try:
            return super().parse(inputsource, sink, bnode_context=bnode_context, skolemize=skolemize, **kwargs)
        except ReadRefused:
            raise
        except Exception as exc:
            raise ReadRefused(str(exc), line=self.lineno, parse_error=True) from None


def parse_ntriples(text: IO[str], graph: Graph, *, bnode_context: dict | None = None,
                   max_line_chars: int | None = None) -> None:
    """Every triple of an N-Triples text stream into ``graph``."""
    p = LinearNTriplesParser(NTGraphSink(graph))
    if max_line_chars is not None:
        p.max_line_chars = max_line_chars
    p.parse(text, bnode_context=bnode_context)


def parse_nquads(text: IO[str], dataset: Graph, *, max_line_chars: int | None = None) -> None:
    """Every quad of an N-Quads text stream into ``dataset`` (a context-aware graph)."""
    p = LinearNQuadsParser()
    if max_line_chars is not None:
        p.max_line_chars = max_line_chars
    src = InputSource()
    src.setCharacterStream(text)
    p.parse(src, dataset)


# ---------------- RDF/XML ----------------
class _GuardedExpat(expatreader.ExpatParser):
    """The SAX reader with every DTD entity declaration looked at before it can be used."""

    def reset(self) -> None:
        super().reset()
        self._parser.EntityDeclHandler = self._entity_decl  # type: ignore[attr-defined]

    def _entity_decl(self, name: str, is_parameter: bool, value: str | None, base: str | None,
                     system_id: str | None, public_id: str | None, notation: str | None) -> None:
        if is_parameter:
            why = "a parameter entity"
        elif value is None:
            why = f"an external entity ({system_id or public_id})"
        elif "&" in value or "%" in value:
            why = "an entity that refers to other entities (an entity-expansion bomb?)"
        elif len(value) > MAX_ENTITY_CHARS:
            why = f"an entity longer than {MAX_ENTITY_CHARS} characters"
        else:
            return
        line = self._parser.CurrentLineNumber  # type: ignore[attr-defined]
        raise ReadRefused(f"the DTD declares {why}, {name!r}: HubLab reads only short entities that "
                          "abbreviate text (e.g. a namespace IRI)", line=line)


class _LinearRDFXMLHandler(RDFXMLHandler):
    """rdflib's handler, a literal's text pieces joined once at its end instead of one concatenation each."""

    def property_element_char(self, data: str) -> None:
        current = self.current
        if current.data is not None:
            if isinstance(current.data, list):
                current.data.append(data)
            else:
                current.data = [current.data, data]

    def property_element_end(self, name, qname) -> None:  # type: ignore[no-untyped-def]
        if isinstance(self.current.data, list):
            self.current.data = "".join(self.current.data)
        super().property_element_end(name, qname)


class GuardedRDFXMLParser(RDFXMLParser):
    """rdflib's RDF/XML parser over :class:`_GuardedExpat` and :class:`_LinearRDFXMLHandler`."""

    def parse(self, source: InputSource, sink: Graph, **args: Any) -> None:
        parser = _GuardedExpat()
        parser.start_namespace_decl("xml", "http://www.w3.org/XML/1998/namespace")
        parser.setFeature(handler.feature_namespaces, 1)
        parser.setFeature(handler.feature_external_ges, 0)
        rdfxml = _LinearRDFXMLHandler(sink)
        rdfxml.setDocumentLocator(source)  # type: ignore[arg-type] - as rdflib does: the source gives the base IRI
        if args.get("preserve_bnode_ids") is not None:
            rdfxml.preserve_bnode_ids = args["preserve_bnode_ids"]
        parser.setContentHandler(rdfxml)
        parser.setErrorHandler(ErrorHandler())
        self._parser = parser
        parser.parse(source)


# ---------------- JSON-LD ----------------
def remote_contexts(doc: Any) -> Iterator[str]:
    """Every ``@context`` (or ``@import``) given by reference in a JSON-LD document, at any depth: each would be
    fetched by rdflib."""
    stack = [doc]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            for key, value in node.items():
                if key in ("@context", "@import"):
                    for v in value if isinstance(value, list) else [value]:
                        if isinstance(v, str):
                            yield v
                stack.append(value)
        elif isinstance(node, list):
            stack.extend(node)


def contexts_allowed() -> bool:
    return os.environ.get(ALLOW_CONTEXTS_ENV, "").strip().lower() in ("1", "true", "yes")


class OfflineJsonLDParser(JsonLDParser):
    """rdflib's JSON-LD parser that refuses a document naming a context by reference (see the module docstring)."""

    def parse(self, source: InputSource, sink: Graph, **kwargs: Any) -> None:  # type: ignore[override]
        stream = source.getCharacterStream() or source.getByteStream()
        try:
            doc = json.load(stream)  # type: ignore[arg-type]
        except ValueError as exc:
            raise ReadRefused(f"not JSON: {exc}", parse_error=True) from None
        if not contexts_allowed():
            for ref in remote_contexts(doc):
                raise ReadRefused(f"its JSON-LD @context {ref!r} would be fetched (from the network or another "
                                  "file), and HubLab reads graphs offline: put the context in the file, or set "
                                  f"{ALLOW_CONTEXTS_ENV}=1 to let it be fetched")
        inner = PythonInputSource(doc, source.getSystemId())
        inner.setPublicId(source.getPublicId())  # type: ignore[arg-type]
        super().parse(inner, sink, **kwargs)


register("hublab-xml", Parser, __name__, "GuardedRDFXMLParser")
register("hublab-json-ld", Parser, __name__, "OfflineJsonLDParser")
#: rdflib's format name → the bounded parser's (formats absent here are read by rdflib's own)
GUARDED_FORMATS = {"xml": "hublab-xml", "json-ld": "hublab-json-ld"}


class CappedReader(io.RawIOBase):
    """A decompressing stream's bytes, counted: past the limits it raises :class:`ReadRefused` (and keeps it in
    ``refused``, in case a parser wraps it). ``compressed`` says how many compressed bytes were read so far."""

    def __init__(self, inner: IO[bytes], compressed: Callable[[], int], limits: ReadLimits) -> None:
        self._inner = inner
        self._compressed = compressed
        self._limits = limits
        self.expanded = 0
        self.refused: ReadRefused | None = None

    def readable(self) -> bool:
        return True

    def readinto(self, b) -> int:  # type: ignore[no-untyped-def]
        if self.refused is not None:
            raise self.refused
        data = self._inner.read(len(b))
        n = len(data)
        b[:n] = data
        self.expanded += n
        why = self._limits.expansion_problem(self.expanded, self._compressed())
        if why:
            self.refused = ReadRefused(f"decompressed, it {why}")
            raise self.refused
        return n
