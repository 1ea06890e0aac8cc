"""Reading an RDF file of any of the common formats into an rdflib graph, chosen by the file's suffix.

The file is read as a stream (gzip decompressed on the fly, bounded by :class:`~hublab.limits.ReadLimits`) through
a reader that counts bytes, so a large file shows a progress bar while rdflib parses it; N-Quads are flattened into
one graph (the graph names dropped). Parsing is offline and bounded (:mod:`hublab.graph.parsers`). A file that does
not parse or passes a bound is one located error (file, line where known).
"""

from __future__ import annotations

import gzip
import io
import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from rdflib import Dataset, Graph

from hublab.errors import InputError
from hublab.graph import fast_lines
from hublab.graph.ill_typed import counted
from hublab.graph.parsers import GUARDED_FORMATS, CappedReader, ReadRefused, parse_nquads, parse_ntriples
from hublab.graph.vocabulary import plain_graph
from hublab.limits import ReadLimits

#: suffix (after an optional ``.gz``) → rdflib parser
RDF_FORMATS: dict[str, str] = {
    ".ttl": "turtle", ".turtle": "turtle", ".n3": "n3",
    ".nt": "nt", ".ntriples": "nt",
    ".nq": "nquads", ".nquads": "nquads",
    ".rdf": "xml", ".xml": "xml", ".owl": "xml",
    ".jsonld": "json-ld", ".json-ld": "json-ld",
    ".trig": "trig",
}
_QUAD_FORMATS = {"nquads", "trig"}
#: rdflib's parser of these fills a graph through named-graph bookkeeping (a context-aware store)
_CONTEXT_FORMATS = {"json-ld"}
#: files at least this large get a progress bar (when progress is on)
_PROGRESS_MIN_BYTES = 4 * 1024 * 1024


def rdf_format(path: Path) -> str | None:
    """The rdflib format of ``path`` by its suffix (``.gz`` looked through), or None."""
    name = path.name.lower()
    if name.endswith(".gz"):
        name = name[:-3]
    return RDF_FORMATS.get(Path(name).suffix)


def is_rdf_file(arg: str) -> bool:
    return rdf_format(Path(arg)) is not None


class _CountingReader(io.RawIOBase):
    """A binary stream that reports the bytes read of the underlying (compressed) file to a callback."""

    def __init__(self, raw, on_read) -> None:
        self._raw = raw
        self._on_read = on_read

    def readable(self) -> bool:
        return True

    def readinto(self, b) -> int:
        data = self._raw.read(len(b))
        n = len(data)
        b[:n] = data
        self._on_read()
        return n


def _checked_format(path: Path) -> str:
    fmt = rdf_format(path)
    if fmt is None:
        known = ", ".join(sorted(RDF_FORMATS))
        raise InputError(f"unknown RDF file type; expected one of {known} (optionally .gz), or an ORKG export .json",
                         file=str(path), field="--graph")
    if not path.is_file():
        raise InputError("graph file not found" if not path.exists() else "expected a file", file=str(path),
                         field="--graph")
    return fmt


def read_rdf(path: Path, *, progress: bool = False, limits: ReadLimits | None = None) -> Graph:
    """The triples of an RDF file as an rdflib graph (see the module docstring)."""
    limits = limits or ReadLimits()
    fmt = _checked_format(path)
    if fmt in ("nt", "nquads"):
        try:
            return _read(path, fmt, limits, progress=progress, fast=True)
        except fast_lines.NotFast:
            pass  # rdflib's reader gives this file's terms as written, or its located error
    return _read(path, fmt, limits, progress=progress, fast=False)


def stream_rdf(path: Path, *, progress: bool = False, limits: ReadLimits | None = None,
               oxigraph: bool = False) -> Iterator[tuple]:
    """The statements of an N-Triples or N-Quads file one at a time, as :func:`read_rdf` would read them (a statement
    in two named graphs comes twice), without holding the file in memory; ``oxigraph``: as Oxigraph's quads
    (:func:`hublab.graph.fast_lines.iter_quads`), not rdflib's terms.

    Raises:
        fast_lines.NotFast: the file is not N-Triples or N-Quads, or needs rdflib's reader: read it with
            :func:`read_rdf` (statements may have been given already).
        InputError: the file is refused by a read limit.
    """
    limits = limits or ReadLimits()
    fmt = _checked_format(path)
    if fmt not in ("nt", "nquads"):
        raise fast_lines.NotFast(f"{fmt} is read whole")
    with _opened(path, limits, progress) as (source, capped), counted(str(path)):
        try:
            read = fast_lines.iter_quads if oxigraph else fast_lines.iter_fast
            yield from read(source, quads=fmt == "nquads", max_line_chars=limits.max_line_chars)
        except fast_lines.NotFast:
            raise
        except Exception as exc:  # noqa: BLE001 - Oxigraph's syntax or read error: rdflib's reader says it
            _raise_refused(path, capped)
            raise fast_lines.NotFast(f"{type(exc).__name__}: {exc}") from None


def _raise_refused(path: Path, capped: CappedReader | None) -> None:
    """The read limit's located error, when a limit stopped the read (a parser may wrap it in its own)."""
    if capped is not None and capped.refused is not None:
        raise InputError(str(capped.refused), file=str(path), field="--graph") from None


@contextmanager
def _opened(path: Path, limits: ReadLimits, progress: bool) -> Iterator[tuple[io.BufferedIOBase, CappedReader | None]]:
    """The file as a bounded, counting, buffered stream (gzip decompressed), with its progress bar while open."""
    size = path.stat().st_size
    bar = None
    if progress and size >= _PROGRESS_MIN_BYTES:
        from hublab.progress import bytes_bar

        bar = bytes_bar(f"reading {path.name}", size)
    raw = path.open("rb")
    try:
        def on_read() -> None:
            if bar is not None:
                bar.update(raw.tell())

        counting = _CountingReader(raw, on_read)
        if path.name.lower().endswith(".gz"):  # gzip reads the file in small blocks: raw.tell() is what it consumed
            capped = CappedReader(gzip.GzipFile(fileobj=counting), raw.tell, limits)
            yield io.BufferedReader(capped, 1 << 20), capped
        else:
            yield io.BufferedReader(counting, 1 << 20), None
    finally:
        raw.close()
        if bar is not None:
            bar.close()


def _read(path: Path, fmt: str, limits: ReadLimits, *, progress: bool, fast: bool) -> Graph:
    """The file through the bounded, counting stream into rdflib's parser, or (``fast``, N-Triples and N-Quads) into
    Oxigraph's (:mod:`hublab.graph.fast_lines`), which raises :class:`~hublab.graph.fast_lines.NotFast` for any file
    it does not read exactly as rdflib does, its own parse errors included."""
    if fast:
        flat = plain_graph()
        with _opened(path, limits, progress) as (source, capped), counted(str(path)):
            try:
                fast_lines.read_fast(source, flat, quads=fmt == "nquads", max_line_chars=limits.max_line_chars)
            except fast_lines.NotFast:
                raise
            except Exception as exc:  # noqa: BLE001 - Oxigraph's syntax or read error: rdflib's reader says it
                _raise_refused(path, capped)
                raise fast_lines.NotFast(f"{type(exc).__name__}: {exc}") from None
        return flat
    capped: CappedReader | None = None
    try:
        with _opened(path, limits, progress) as (source, capped):
            target = Dataset() if fmt in _QUAD_FORMATS else Graph() if fmt in _CONTEXT_FORMATS else plain_graph()
            with counted(str(path)):  # ill-typed literals: one warning line, not a traceback each
                if fmt in ("nt", "nquads"):
                    text = io.TextIOWrapper(source, encoding="utf-8", newline="")
                    if fmt == "nt":
                        parse_ntriples(text, target, max_line_chars=limits.max_line_chars)
                    else:
                        parse_nquads(text, target, max_line_chars=limits.max_line_chars)
                else:
                    target.parse(source=source, format=GUARDED_FORMATS.get(fmt, fmt))  # type: ignore[arg-type]
    except InputError:
        raise
    except ReadRefused as exc:
        raise InputError(_refusal(fmt, exc), file=str(path), line=exc.line, field="--graph") from None
    except Exception as exc:  # noqa: BLE001 - rdflib's parsers raise many kinds; each means the file is not valid
        _raise_refused(path, capped)
        raise InputError(f"not valid {fmt}: {_parser_message(exc)}", file=str(path), field="--graph") from None
    if fmt in _QUAD_FORMATS:
        flat = plain_graph()
        for s, p, o, _ in target.quads((None, None, None, None)):  # type: ignore[union-attr]
            flat.add((s, p, o))
        return flat
    return target


def _refusal(fmt: str, exc: ReadRefused) -> str:
    """A bound's message as it stands; a parse error found by HubLab's own readers as rdflib's would read."""
    return f"not valid {fmt}: {_parser_message(exc)}" if exc.parse_error else str(exc)


def _parser_message(exc: BaseException) -> str:
    """rdflib's message, on one line and bounded (its Turtle errors quote whole lines of input)."""
    text = " ".join(str(exc).split())
    m = re.search(r"line (\d+)", text)
    where = f" (line {m.group(1)})" if m and "line" not in text[:40] else ""
    return (text[:300] + " …" if len(text) > 300 else text) + where
