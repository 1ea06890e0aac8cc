"""A graph behind a SPARQL 1.1 endpoint (Oxigraph, Fuseki, Virtuoso, GraphDB, …), read over HTTP.

The graph is read in pages of ``page_size`` triples (``CONSTRUCT`` over a ``LIMIT``/``OFFSET`` sub-select, answered
as N-Triples, blank-node labels kept across pages) into the in-memory model every retriever uses, so a run over the
endpoint gives exactly the results of a run over the same triples in a file, and a question costs no query at all.

Every request has a connect deadline, a deadline per read and one for the whole answer (a server sending a byte a
second passes every per-read deadline), a bounded number of retries, and a cap on the answer's decoded size (gzip
answers are decompressed here, counted); a "waiting for …" line says when an answer is slow. A failure is one line
naming the endpoint (its credentials masked) and what went wrong. The fingerprint (triple count and two
order-independent sums over the MD5 of every triple, computed by the endpoint) keys indices and runs, so a changed
graph is never searched with an index built for the old one. Paging stops with an error when the endpoint repeats a
page (it ignores ``LIMIT``/``OFFSET``) or sends more triples than it counts; after the read the fingerprint is taken
again, and a graph that changed while it was read is refused, never kept under the fingerprint taken before.
"""

from __future__ import annotations

import hashlib
import io
import math
import sys
import threading
import time
import zlib
from dataclasses import dataclass, fields

from rdflib import Graph

from hublab.errors import HubLabError
from hublab.limits import ReadLimits
from hublab.redact import register_url, scrub, url_secrets

_KEY = "params.yaml: user_graphs.endpoint"


class EndpointError(HubLabError):
    """A SPARQL endpoint that cannot be read (down, slow, refusing, or answering errors)."""


@dataclass(frozen=True)
class EndpointSettings:
    """How patient HubLab is with an endpoint (``params.yaml: user_graphs.endpoint``)."""

    connect_timeout_s: float = 5.0
    read_timeout_s: float = 120.0  #: no byte for this long: the answer is given up (and retried)
    answer_timeout_s: float = 600.0  #: a whole answer, headers to last byte, however it trickles in
    notice_after_s: float = 5.0  #: an answer slower than this prints one "waiting for …" line
    retries: int = 2
    page_size: int = 100_000
    max_answer_mb: float = 1024  #: one answer, decoded (gzip answers are decompressed and counted)
    max_expansion_ratio: float = ReadLimits().max_expansion_ratio

    @classmethod
    def from_params(cls, section: dict | None) -> EndpointSettings:
        sec = dict(section or {})
        known = {f.name: sec[f.name] for f in fields(cls) if sec.get(f.name) is not None}
        return cls(**known)


def shown(url: str) -> str:
    """The URL as it may be printed or stored: credentials masked (the one masking door, ``hublab.redact.scrub``)."""
    return scrub(url)


# COALESCE: DATATYPE(?o) is unbound for an IRI object, and an unbound argument would make the whole CONCAT unbound
_FINGERPRINT = """SELECT (COUNT(*) AS ?n) (SUM(STRLEN(REPLACE(?h, "[0-7]", ""))) AS ?a)
  (SUM(STRLEN(REPLACE(?h, "[02468ace]", ""))) AS ?b)
WHERE { ?s ?p ?o BIND(MD5(CONCAT(STR(?s), " ", STR(?p), " ", STR(?o), " ", COALESCE(STR(DATATYPE(?o)), ""),
  COALESCE(LANG(?o), ""))) AS ?h) }"""

_PAGE = "CONSTRUCT {{ ?s ?p ?o }} WHERE {{ {{ SELECT ?s ?p ?o WHERE {{ ?s ?p ?o }} LIMIT {limit} OFFSET {offset} }} }}"


class _Retry(Exception):
    """An attempt that may succeed when tried again (no connection, no byte in time, HTTP 5xx or 429)."""


class SparqlEndpoint:
    """One endpoint URL with its deadlines; ``select`` and ``read`` with bounded retries."""

    def __init__(self, url: str, settings: EndpointSettings | None = None) -> None:
        self.url = url
        register_url(url)  # its password (and the Basic token built from it) is masked wherever it turns up
        self.settings = settings or EndpointSettings()
        self.requests = 0

    @property
    def shown(self) -> str:
        return shown(self.url)

    def _fail(self, what: str) -> EndpointError:
        return EndpointError(f"SPARQL endpoint {self.shown}: {what}")

    def _post(self, query: str, accept: str, *, max_lines: int | None = None) -> bytes:
        st = self.settings
        last = "no answer"
        for attempt in range(st.retries + 1):
            if attempt:
                time.sleep(min(4.0, 0.5 * 2 ** (attempt - 1)))
            self.requests += 1
            try:
                return self._exchange(query, accept, max_lines)
            except _Retry as exc:
                last = str(exc)
        raise self._fail(f"{last} after {st.retries + 1} tries (is it running, and is this its query URL?)")

    def _exchange(self, query: str, accept: str, max_lines: int | None = None) -> bytes:
        """One request in a worker thread, waited for here until the whole-answer deadline: a blocking read cannot
        be bounded in total from inside (each byte restarts its deadline), and the wait here stays interruptible
        (Ctrl-C, SIGTERM end it at once)."""
        st = self.settings
        box: dict = {}
        done = threading.Event()
        cancel = threading.Event()

        def work() -> None:
            try:
                box["body"] = self._fetch(query, accept, cancel, box, max_lines)
            except BaseException as exc:  # noqa: BLE001 - handed to the waiting thread as it is
                box["error"] = exc
            finally:
                done.set()

        threading.Thread(target=work, name="hublab-sparql", daemon=True).start()
        try:
            if not done.wait(min(st.notice_after_s, st.answer_timeout_s)):
                print(f"waiting for SPARQL endpoint {self.shown} … (no complete answer after {st.notice_after_s:g} s; "
                      f"given up after {st.read_timeout_s:g} s without a byte or {st.answer_timeout_s:g} s in all: "
                      f"{_KEY}.read_timeout_s, answer_timeout_s)", file=sys.stderr, flush=True)
                if not done.wait(max(0.0, st.answer_timeout_s - st.notice_after_s)):
                    raise self._fail(f"no complete answer within {st.answer_timeout_s:g} s (raise "
                                     f"{_KEY}.answer_timeout_s for a slow endpoint)")
        finally:
            if not done.is_set():  # given up (deadline, signal): stop the worker's reads
                cancel.set()
                resp = box.get("resp")
                if resp is not None:
                    try:
                        resp.raw.shutdown()
                    except Exception:  # noqa: BLE001, S110 - closing a connection that may be gone already
                        pass
        if "error" in box:
            raise box["error"]
        return box["body"]

    def _fetch(self, query: str, accept: str, cancel: threading.Event, box: dict,
               max_lines: int | None = None) -> bytes:
        """The answer's body, decoded and bounded (runs in :meth:`_exchange`'s worker)."""
        import requests
        import urllib3

        st = self.settings
        try:
            resp = requests.post(self.url, data={"query": query},
                                 headers={"Accept": accept, "Accept-Encoding": "gzip, deflate"},
                                 timeout=(st.connect_timeout_s, st.read_timeout_s), stream=True)
        except requests.exceptions.ConnectTimeout:
            raise _Retry(f"no connection within {st.connect_timeout_s:g} s") from None
        except requests.exceptions.ReadTimeout:
            raise _Retry(f"no answer within {st.read_timeout_s:g} s") from None
        except requests.exceptions.ConnectionError as exc:
            raise _Retry(f"cannot connect ({scrub(_reason(exc), own=url_secrets(self.url))})") from None
        except requests.exceptions.RequestException as exc:
            raise self._fail(scrub(_reason(exc), own=url_secrets(self.url))) from None
        box["resp"] = resp
        with resp:
            if resp.status_code >= 500 or resp.status_code == 429:
                raise _Retry(f"HTTP {resp.status_code}")
            try:
                if resp.status_code != 200:
                    text = self._body(resp, cancel, cap=64 << 10, truncate=True).decode("utf-8", "replace")
                    body = " ".join(text.split())[:200]
                    said = scrub(body, own=url_secrets(self.url)) or scrub(resp.reason or "")
                    raise self._fail(f"HTTP {resp.status_code} ({said})")
                return self._body(resp, cancel, cap=int(st.max_answer_mb * (1 << 20)), max_lines=max_lines)
            except (requests.exceptions.RequestException, urllib3.exceptions.HTTPError) as exc:
                if "timed out" in str(exc).lower():
                    raise _Retry(f"no byte for {st.read_timeout_s:g} s within the answer") from None
                raise _Retry(f"the answer broke off ({scrub(_reason(exc), own=url_secrets(self.url))})") from None

    def _body(self, resp, cancel: threading.Event, *, cap: int, truncate: bool = False,  # type: ignore[no-untyped-def]
              max_lines: int | None = None) -> bytes:
        """The body decoded (identity, gzip or deflate) and counted: past ``cap`` decoded bytes, past ``max_lines``
        lines (a page's LIMIT), or expanding more than the ratio allows, it stops (``truncate``: keeps what came,
        for an error body)."""
        st = self.settings
        coding = (resp.headers.get("Content-Encoding") or "identity").strip().lower()
        if coding in ("gzip", "x-gzip", "deflate"):
            inflater = zlib.decompressobj(47 if coding != "deflate" else 15)
        elif coding in ("identity", ""):
            inflater = None
        else:
            raise self._fail(f"its answer is in the Content-Encoding {coding!r}, which HubLab did not ask for "
                             "(gzip, deflate or none)")
        limits = ReadLimits(max_expanded_mb=cap / (1 << 20), max_expansion_ratio=st.max_expansion_ratio)
        out = io.BytesIO()
        raw_bytes = 0
        lines = 0
        for chunk in resp.raw.stream(1 << 16, decode_content=False):
            if cancel.is_set():
                return b""
            raw_bytes += len(chunk)
            pieces = [chunk]
            if inflater is not None:
                try:
                    pieces = [inflater.decompress(chunk, cap + 1 - out.tell())]
                    while inflater.unconsumed_tail and out.tell() + len(pieces[-1]) <= cap:
                        pieces.append(inflater.decompress(inflater.unconsumed_tail, cap + 1 - out.tell()))
                except zlib.error as exc:
                    raise self._fail(f"its {coding} answer does not decompress ({exc})") from None
            for piece in pieces:
                out.write(piece)
                lines += piece.count(b"\n")
            if max_lines is not None and lines > max_lines + 1:  # one spare: a trailing blank line
                raise self._fail(f"it answered more than {max_lines} triples to LIMIT {max_lines}: it ignores LIMIT, "
                                 "so its pages cannot be read")
            why = limits.expansion_problem(out.tell(), raw_bytes if inflater is not None else out.tell(),
                                           cap_mb=cap / (1 << 20), cap_key=f"{_KEY}.max_answer_mb",
                                           ratio_key=f"{_KEY}.max_expansion_ratio")
            if why:
                if truncate:
                    return out.getvalue()[:cap]
                raise self._fail(f"its answer {why}")
        return out.getvalue()

    def select(self, query: str) -> list[dict[str, str]]:
        import json

        body = self._post(query, "application/sparql-results+json")
        try:
            data = json.loads(body)
            return [{k: v["value"] for k, v in row.items()} for row in data["results"]["bindings"]]
        except (ValueError, KeyError, TypeError, AttributeError, RecursionError) as exc:  # a list where a dict belongs
            raise self._fail(f"not a SPARQL JSON result ({scrub(' '.join(str(exc).split()))[:160]})") from None

    def fingerprint(self) -> tuple[int, str]:
        """(triple count, digest of the endpoint's content) from one aggregate query."""
        rows = self.select(_FINGERPRINT)
        if not rows or "n" not in rows[0]:
            raise self._fail("the fingerprint query returned no count")
        row = rows[0]
        count = _count(row["n"], self.shown)
        digest = hashlib.sha256(f"{count} {row.get('a', 0)} {row.get('b', 0)}".encode()).hexdigest()
        return count, digest

    def read(self, *, expected: int | None = None, fingerprint: tuple[int, str] | None = None,
             progress: bool = False, limits: ReadLimits | None = None) -> Graph:
        """Every triple, page by page (see the module docstring). ``fingerprint``: the one the graph is known by
        (taken now when not given); the graph read must still have it afterwards. ``expected``: the triple count
        alone (a caller that has no fingerprint)."""
        from hublab.graph.parsers import ReadRefused, parse_ntriples

        before = fingerprint or self.fingerprint()
        count = before[0] if expected is None else expected
        limits = limits or ReadLimits()
        graph = Graph()
        bnodes: dict = {}
        page = max(1, self.settings.page_size)  # LIMIT 0 answers nothing, forever
        offset = 0
        lines = 0
        last_page = b""
        from hublab.progress import build_bar

        with build_bar(progress and bool(count), f"reading {self.shown}", count or 0, unit="triples") as advance:
            while True:
                body = self._post(_PAGE.format(limit=page, offset=offset), "application/n-triples", max_lines=page)
                got = body.count(b"\n")
                if got and body == last_page:
                    raise self._fail(f"it answered OFFSET {offset} with the same triples as OFFSET {offset - page}: "
                                     "it ignores LIMIT/OFFSET, so paging would never end")
                if got > page:
                    raise self._fail(f"it answered {got} triples to LIMIT {page}: it ignores LIMIT, so its pages "
                                     "cannot be read")
                lines += got
                if lines > count:
                    raise self._fail(f"it sent more than the {count} triples it counts (at OFFSET {offset}): did the "
                                     "graph change while it was read, or does it ignore LIMIT/OFFSET?")
                before_len = len(graph)
                try:
                    parse_ntriples(io.StringIO(body.decode("utf-8"), newline=""), graph, bnode_context=bnodes,
                                   max_line_chars=limits.max_line_chars)
                except (ReadRefused, UnicodeDecodeError) as exc:
                    where = f"line {exc.line} of the page at OFFSET {offset}" if isinstance(exc, ReadRefused) \
                        and exc.line else f"the page at OFFSET {offset}"
                    what = "does not parse" if not isinstance(exc, ReadRefused) or exc.parse_error else "is refused"
                    raise self._fail(f"its N-Triples answer {what} ({where}: "
                                     f"{' '.join(str(exc).split())[:200]})") from None
                if got and len(graph) == before_len:
                    raise self._fail(f"its page at OFFSET {offset} held only triples already read: it ignores OFFSET "
                                     "(or holds every triple twice across named graphs), so paging would never end")
                advance(len(graph) - before_len)
                last_page = body
                offset += page
                if got < page:
                    break
        if len(graph) != count:
            raise self._fail(f"read {len(graph)} distinct triples where it counts {count} (did the graph change "
                             "while it was read, or does it hold duplicates across named graphs?)")
        after = self.fingerprint()
        if after != before:
            raise self._fail(f"its content changed while it was read (fingerprint {before[1][:12]} before, "
                             f"{after[1][:12]} after; {before[0]} then {after[0]} triples): nothing was kept; "
                             "rerun once the graph is stable")
        return graph


#: more triples than any endpoint holds: a larger count is a malformed answer, not a graph
MAX_TRIPLES = 10**15


def _count(value: object, where: str) -> int:
    """The fingerprint's triple count: a whole number from 0 to :data:`MAX_TRIPLES` (``"12"``, ``"12.0"``, ``"1.2E1"``),
    else one error naming the endpoint and the value (not ``ValueError``/``OverflowError`` from ``int(float(...))``)."""
    text = str(value).strip()
    try:
        number = float(text)
    except ValueError:
        number = math.nan
    if not math.isfinite(number) or not number.is_integer() or not 0 <= number <= MAX_TRIPLES:
        raise EndpointError(f"SPARQL endpoint {where}: the fingerprint query's count ?n is {scrub(text)[:40]!r}; "
                            f"expected a whole number of triples from 0 to {MAX_TRIPLES:.0e}")
    return int(number)


def _reason(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    for marker in ("Connection refused", "Name or service not known", "No route to host", "timed out"):
        if marker in text:
            return marker
    return text[:160]
