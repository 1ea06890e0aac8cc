"""A SPARQL endpoint in a thread on 127.0.0.1 over an rdflib graph, with knobs to misbehave as a careless or hostile
server does: ignore LIMIT/OFFSET, change the graph while it is read, send a gzip bomb, trickle, never answer."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs

from rdflib import Graph

#: what a test may do to an answer: (query, handler) -> True when it answered itself
Hook = Callable[[str, BaseHTTPRequestHandler], bool]


class FakeEndpoint:
    """``url`` answers SELECT (JSON) and CONSTRUCT (N-Triples) over ``graph``; ``hook`` may answer instead;
    ``queries`` lists every query received. Use as a context manager (the server stops at its end)."""

    def __init__(self, graph: Graph, hook: Hook | None = None) -> None:
        self.graph = graph
        self.hook = hook
        self.queries: list[str] = []
        self.stop = threading.Event()  #: set at the end: trickling hooks give up
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *a):
                pass

            def do_POST(self):  # noqa: N802
                data = self.rfile.read(int(self.headers["Content-Length"])).decode()
                query = parse_qs(data)["query"][0]
                fake.queries.append(query)
                if fake.hook is not None and fake.hook(query, self):
                    return
                self.answer(fake.answer(query), "application/n-triples" if "CONSTRUCT" in query else
                            "application/sparql-results+json")

            def answer(self, body: bytes, ctype: str, headers: dict | None = None) -> None:
                self.send_response(200)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(body)))
                for k, v in (headers or {}).items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(body)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_port}/query"

    def answer(self, query: str) -> bytes:
        # pages in a stable order (rdflib's own follows its hash sets, which an edit reshuffles)
        query = query.replace("WHERE { ?s ?p ?o } LIMIT", "WHERE { ?s ?p ?o } ORDER BY ?s ?p ?o LIMIT")
        result = self.graph.query(query)
        if "CONSTRUCT" in query:
            return result.graph.serialize(format="nt", encoding="utf-8")  # type: ignore[union-attr]
        return result.serialize(format="json")  # type: ignore[return-value]

    def __enter__(self) -> FakeEndpoint:
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop.set()
        self.server.shutdown()
        self.server.server_close()


def trickle(handler: BaseHTTPRequestHandler, stop: threading.Event, every_s: float = 0.2) -> None:
    """Headers, then a byte every ``every_s`` until ``stop`` (or the client hangs up)."""
    handler.send_response(200)
    handler.send_header("Content-Type", "application/n-triples")
    handler.end_headers()
    try:
        while not stop.wait(every_s):
            handler.wfile.write(b" ")
            handler.wfile.flush()
    except OSError:
        pass


def small_graph(n: int = 40) -> Graph:
    g = Graph()
    g.parse(data="".join(f'<https://ex.org/s{i}> <http://www.w3.org/2000/01/rdf-schema#label> "item {i}" .\n'
                         for i in range(n)), format="nt")
    return g


def within(seconds: float, fn: Callable[[], object]) -> tuple[bool, object]:
    """(finished in time, its result or exception): a hang on today's code fails the test instead of the suite."""
    box: dict = {}

    def run() -> None:
        try:
            box["value"] = fn()
        except BaseException as exc:  # noqa: BLE001
            box["value"] = exc

    t = threading.Thread(target=run, daemon=True)
    start = time.monotonic()
    t.start()
    t.join(seconds)
    return (not t.is_alive(), box.get("value", TimeoutError(f"still running after {time.monotonic() - start:.0f} s")))
