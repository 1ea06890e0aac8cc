"""Graph files that would reach the network or expand without bound: a JSON-LD @context by URL (a server that never
answers, a file:// context), a .gz bomb, an RDF/XML entity bomb, a 4 MB N-Triples literal and a line past the cap.
Each is refused (or read) in bounded time with one error naming the file; nothing is fetched."""

from __future__ import annotations

import gzip
import json
import socket
import time
from pathlib import Path

import pytest
from rdflib import URIRef

from hublab.errors import InputError
from hublab.graph.rdf_files import read_rdf
from hublab.limits import ReadLimits
from support.sparql_fakes import within

EX = "https://ex.org/"


@pytest.fixture
def black_hole():
    """A URL on 127.0.0.1 that accepts connections and never answers."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(8)
    yield f"http://127.0.0.1:{sock.getsockname()[1]}/context.jsonld"
    sock.close()


def _jsonld(path: Path, context) -> Path:
    path.write_text(json.dumps({"@context": context, "@id": EX + "a", "name": "Ada"}))
    return path


def _refused(path: Path, **kw) -> InputError:
    start = time.monotonic()
    done, value = within(10, lambda: read_rdf(path, **kw))
    assert done, f"{path.name}: still reading after 10 s"
    assert time.monotonic() - start < 10
    assert isinstance(value, InputError), value
    assert str(path) in str(value) and "\n" not in str(value)
    return value


def test_a_jsonld_context_url_is_not_fetched(tmp_path, black_hole):
    err = _refused(_jsonld(tmp_path / "g.jsonld", black_hole))
    assert black_hole in str(err) and "HUBLAB_ALLOW_REMOTE_CONTEXTS=1" in str(err)


def test_a_file_context_is_not_read_unless_allowed(tmp_path, monkeypatch):
    (tmp_path / "ctx.jsonld").write_text(json.dumps({"@context": {"name": "https://schema.org/name"}}))
    scoped = {"@context": {"knows": {"@id": EX + "knows", "@context": (tmp_path / "ctx.jsonld").as_uri()}},
              "@id": EX + "a", "knows": {"@id": EX + "b", "name": "Bob"}}
    (tmp_path / "scoped.jsonld").write_text(json.dumps(scoped))
    for path in (_jsonld(tmp_path / "rel.jsonld", "ctx.jsonld"), tmp_path / "scoped.jsonld"):
        assert "ctx.jsonld" in str(_refused(path))
    monkeypatch.setenv("HUBLAB_ALLOW_REMOTE_CONTEXTS", "1")  # the user's explicit choice: then it is fetched
    g = read_rdf(tmp_path / "scoped.jsonld")
    assert (URIRef(EX + "b"), URIRef("https://schema.org/name"), None) in g


def test_an_inline_context_reads_as_before(tmp_path):
    g = read_rdf(_jsonld(tmp_path / "inline.jsonld", {"name": "https://schema.org/name"}))
    assert len(g) == 1


def test_a_gz_bomb_stops_at_the_expansion_ratio(tmp_path):
    bomb = tmp_path / "bomb.nt.gz"
    member = gzip.compress(b'<https://ex.org/s> <https://ex.org/p> "o" .\n' * 1_500_000, 9)  # ~66 MB each
    bomb.write_bytes(member * 128)  # ~8 GiB expanded
    err = _refused(bomb)
    assert "expands more than 100 times" in str(err) and "user_graphs.limits.max_expansion_ratio" in str(err)


def test_a_gz_file_past_the_size_cap_is_refused(tmp_path):
    path = tmp_path / "big.ttl.gz"
    path.write_bytes(gzip.compress("".join(f'<{EX}s{i}> <{EX}p> "{i * 7919}" .\n' for i in range(60_000)).encode()))
    err = _refused(path, limits=ReadLimits(max_expanded_mb=1))
    assert "expands past 1 MB" in str(err) and "user_graphs.limits.max_expanded_mb" in str(err)


def test_an_rdfxml_entity_bomb_is_refused_at_once(tmp_path):
    ents = '<!ENTITY lol0 "lollollollollollollollollollol">\n' + "".join(
        f'<!ENTITY lol{i} "{f"&lol{i - 1};" * 10}">\n' for i in range(1, 10))
    path = tmp_path / "lol.rdf"
    path.write_text(f'<?xml version="1.0"?>\n<!DOCTYPE rdf:RDF [\n{ents}]>\n'
                    '<rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#" xmlns:ex="https://ex.org/">\n'
                    '<rdf:Description rdf:about="https://ex.org/a"><ex:p>&lol9;</ex:p></rdf:Description>\n'
                    "</rdf:RDF>\n")
    err = _refused(path)
    assert "refers to other entities" in str(err) and "line 4" in str(err)


def test_rdfxml_with_namespace_entities_and_many_references_reads_quickly(tmp_path):
    path = tmp_path / "onto.owl"
    path.write_text('<?xml version="1.0"?>\n<!DOCTYPE rdf:RDF [ <!ENTITY ex "https://ex.org/"> ]>\n'
                    '<rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#" xmlns:ex="https://ex.org/">\n'
                    f'<rdf:Description rdf:about="&ex;a"><ex:p>{"&ex;" * 200_000}</ex:p></rdf:Description>\n'
                    "</rdf:RDF>\n")
    done, g = within(10, lambda: read_rdf(path))
    assert done and not isinstance(g, Exception), g
    (_, _, o), = list(g)
    assert len(str(o)) == 200_000 * len(EX)


def test_a_long_ntriples_line_is_read_in_linear_time_and_refused_past_the_cap(tmp_path):
    path = tmp_path / "long.nt"
    path.write_text(f'<{EX}s> <{EX}p> "ok" .\n<{EX}s> <{EX}q> "{"x" * 4_000_000}" .\n')
    start = time.monotonic()
    done, g = within(10, lambda: read_rdf(path))
    assert done and len(g) == 2 and time.monotonic() - start < 5  # type: ignore[arg-type]
    err = _refused(path, limits=ReadLimits(max_line_mb=1))
    assert err.line == 2 and "longer than 1 MB" in str(err) and "user_graphs.limits.max_line_mb" in str(err)
    bad = tmp_path / "bad.nt"
    bad.write_text(f'<{EX}s> <{EX}p> "ok" .\n\n<{EX}s> <{EX}p> oops .\n')
    assert "line 3" in str(_refused(bad))
