"""A graph behind a SPARQL 1.1 endpoint (Oxigraph, Fuseki, Virtuoso, GraphDB, …), read over HTTP.

The graph is read in pages of ``page_size`` triples (``CONSTRUCT`` over a ``LIMIT``/``OFFSET`` sub-select, answered
as N-Triples, blank-node labels kept across pages) into the in-memory model every retriever uses, so a run over the
endpoint gives exactly the results of a run over the same triples in a file, and a question costs no query at all.
Every request has a connect and a read deadline and a bounded number of retries; a failure is one line naming the
endpoint (its credentials masked) and what went wrong. The fingerprint (triple count and two order-independent
sums over the MD5 of every triple, computed by the endpoint) keys indices and runs, so a changed graph is never
searched with an index built for the old one; reading checks that the count it read matches.
"""

from __future__ import annotations

import hashlib
import math
import time
from dataclasses import dataclass

from rdflib import Graph

from hublab.errors import HubLabError
from hublab.redact import register_url, scrub, url_secrets


class EndpointError(HubLabError):
    """A SPARQL endpoint that cannot be read (down, slow, refusing, or answering errors)."""


@dataclass(frozen=True)
class EndpointSettings:
    """How patient HubLab is with an endpoint (``params.yaml: graphs.endpoint``)."""

    connect_timeout_s: float = 5.0
    read_timeout_s: float = 120.0
    retries: int = 2
    page_size: int = 100_000

    @classmethod
    def from_params(cls, section: dict | None) -> EndpointSettings:
        sec = dict(section or {})
        known = {k: sec[k] for k in ("connect_timeout_s", "read_timeout_s", "retries", "page_size") if k in sec}
        return cls(**known)


def is_endpoint(arg: str) -> bool:
    return arg.lower().startswith(("http://", "https://"))


def shown(url: str) -> str:
    """The URL as it may be printed or stored: credentials masked (the one masking door, ``hublab.redact.scrub``)."""
    return scrub(url)


# COALESCE: DATATYPE(?o) is unbound for an IRI object, and an unbound argument would make the whole CONCAT unbound
_FINGERPRINT = """SELECT (COUNT(*) AS ?n) (SUM(STRLEN(REPLACE(?h, "[0-7]", ""))) AS ?a)
  (SUM(STRLEN(REPLACE(?h, "[02468ace]", ""))) AS ?b)
WHERE { ?s ?p ?o BIND(MD5(CONCAT(STR(?s), " ", STR(?p), " ", STR(?o), " ", COALESCE(STR(DATATYPE(?o)), ""),
  COALESCE(LANG(?o), ""))) AS ?h) }"""

_PAGE = "CONSTRUCT {{ ?s ?p ?o }} WHERE {{ {{ SELECT ?s ?p ?o WHERE {{ ?s ?p ?o }} LIMIT {limit} OFFSET {offset} }} }}"


class SparqlEndpoint:
    """One endpoint URL with its deadlines; ``select`` and ``construct`` with bounded retries."""

    def __init__(self, url: str, settings: EndpointSettings | None = None) -> None:
        self.url = url
        register_url(url)  # its password (and the Basic token built from it) is masked wherever it turns up
        self.settings = settings or EndpointSettings()
        register_url(url)  # its password (and the Basic token built from it) is masked wherever it turns up
        self.requests = 0

    @property
    def shown(self) -> str:
        return shown(self.url)

    def _post(self, query: str, accept: str) -> bytes:
        import requests

        st = self.settings
        last = "no answer"
        for attempt in range(st.retries + 1):
            if attempt:
                time.sleep(min(4.0, 0.5 * 2 ** (attempt - 1)))
            self.requests += 1
            try:
                resp = requests.post(self.url, data={"query": query}, headers={"Accept": accept},
                                     timeout=(st.connect_timeout_s, st.read_timeout_s))
            except requests.exceptions.ConnectTimeout:
                last = f"no connection within {st.connect_timeout_s:g} s"
                continue
            except requests.exceptions.ReadTimeout:
                last = f"no answer within {st.read_timeout_s:g} s"
                continue
            except requests.exceptions.ConnectionError as exc:
                last = f"cannot connect ({scrub(_reason(exc), own=url_secrets(self.url))})"
                continue
            except requests.exceptions.RequestException as exc:
                said = scrub(_reason(exc), own=url_secrets(self.url))
                raise EndpointError(f"SPARQL endpoint {self.shown}: {said}") from None
            if resp.status_code >= 500 or resp.status_code == 429:
                last = f"HTTP {resp.status_code}"
                continue
            if resp.status_code != 200:
                body = " ".join(resp.text.split())[:200]
                raise EndpointError(f"SPARQL endpoint {self.shown}: HTTP {resp.status_code} "
                                    f"({scrub(body, own=url_secrets(self.url)) or scrub(resp.reason or '')})")
            return resp.content
        raise EndpointError(f"SPARQL endpoint {self.shown}: {last} after {st.retries + 1} tries (is it running, and "
                            "is this its query URL?)")

    def select(self, query: str) -> list[dict[str, str]]:
        import json

        body = self._post(query, "application/sparql-results+json")
        try:
            data = json.loads(body)
            return [{k: v["value"] for k, v in row.items()} for row in data["results"]["bindings"]]
        except (ValueError, KeyError, TypeError, AttributeError, RecursionError) as exc:  # a list where a dict belongs
            raise EndpointError(f"SPARQL endpoint {self.shown}: not a SPARQL JSON result "
                                f"({scrub(' '.join(str(exc).split()))[:160]})") from None

    def fingerprint(self) -> tuple[int, str]:
        """(triple count, digest of the endpoint's content) from one aggregate query."""
        rows = self.select(_FINGERPRINT)
        if not rows or "n" not in rows[0]:
            raise EndpointError(f"SPARQL endpoint {self.shown}: the fingerprint query returned no count")
        row = rows[0]
        count = _count(row["n"], self.shown)
        digest = hashlib.sha256(f"{count} {row.get('a', 0)} {row.get('b', 0)}".encode()).hexdigest()
        return count, digest

    def read(self, *, expected: int | None = None, progress: bool = False) -> Graph:
        """Every triple, page by page (see the module docstring)."""
        graph = Graph()
        bnodes: dict = {}
        page = self.settings.page_size
        offset = 0
        from hublab.progress import build_bar

        with build_bar(progress and bool(expected), f"reading {self.shown}", expected or 0,
                       unit="triples") as advance:
            while True:
                body = self._post(_PAGE.format(limit=page, offset=offset), "application/n-triples")
                before = len(graph)
                try:
                    graph.parse(data=body.decode("utf-8"), format="nt", bnode_context=bnodes)
                except Exception as exc:  # noqa: BLE001 - the parser's errors are many; all mean a bad answer
                    raise EndpointError(f"SPARQL endpoint {self.shown}: its N-Triples answer does not parse "
                                        f"({' '.join(str(exc).split())[:200]})") from None
                got = body.count(b"\n")
                advance(len(graph) - before)
                offset += page
                if got < page:
                    break
        if expected is not None and len(graph) != expected:
            raise EndpointError(f"SPARQL endpoint {self.shown}: read {len(graph)} distinct triples where it counts "
                                f"{expected} (did the graph change while it was read, or does it hold duplicates "
                                "across named graphs?)")
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
