"""The same KnowledgeGraph API over a remote SPARQL endpoint (SPARQL 1.1 protocol over HTTP), served here
by a small local endpoint holding the GV3 export, as Fuseki or Virtuoso would."""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, HTTPServer
from urllib.parse import parse_qs, urlparse

import pytest

from hublab.graph.rdf import RdfKnowledgeGraph


@pytest.fixture(scope="module")
def endpoint(gv3_orkg_graph):
    graph = gv3_orkg_graph.graph

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *a):
            pass

        def _answer(self, query: str) -> None:
            body = graph.query(query).serialize(format="json")
            self.send_response(200)
            self.send_header("Content-Type", "application/sparql-results+json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self):  # noqa: N802
            self._answer(parse_qs(urlparse(self.path).query)["query"][0])

        def do_POST(self):  # noqa: N802
            data = self.rfile.read(int(self.headers["Content-Length"])).decode()
            ctype = self.headers.get("Content-Type", "")
            self._answer(data if "sparql-query" in ctype else parse_qs(data)["query"][0])

    srv = HTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{srv.server_port}/sparql"
    srv.shutdown()


def test_remote_graph_answers_like_the_local_one(endpoint, gv3_orkg_graph):
    remote = RdfKnowledgeGraph.from_sparql_endpoint(endpoint)
    local = gv3_orkg_graph
    assert remote.entity("R872741") == local.entity("R872741")
    assert {t.render() for t in remote.outgoing("R872741")} == {t.render() for t in local.outgoing("R872741")}
    assert {t.render() for t in remote.incoming("R820814")} == {t.render() for t in local.incoming("R820814")}
    assert remote.paper_of("L1529102").uid == "R872741"
    assert remote.entity("R0") is None
