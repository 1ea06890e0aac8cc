"""N-Triples and N-Quads are read by Oxigraph's parser (hublab.graph.fast_lines) only where the result is rdflib's,
term for term: on the committed graphs, and on files holding what Oxigraph would write differently."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest
from rdflib import Dataset, Graph, URIRef

from hublab.errors import InputError
from hublab.graph import fast_lines
from hublab.graph.rdf import RdfKnowledgeGraph
from hublab.graph.rdf_files import _read, read_rdf
from hublab.graph.vocabulary import skolemise
from hublab.limits import ReadLimits

ROOT = Path(__file__).resolve().parents[2]

TRICKY = """<http://a/s> <http://a/p> "caf\\u00e9 \\"q\\" \\t \\U0001F600" .
<http://a/s\\u0041> <http://a/p> "1.0E3"^^<http://www.w3.org/2001/XMLSchema#double> .
<http://a/s> <http://a/p> "  12 "^^<http://www.w3.org/2001/XMLSchema#integer> .
<http://a/s> <http://a/p> "abc"^^<http://www.w3.org/2001/XMLSchema#integer> .
<http://a/s> <http://a/p> "z"@en-gb .
# a comment line
_:b1 <http://a/p> "in a blank node" .
<http://a/s> <http://a/q> _:b1 .
<http://a/s> <http://www.w3.org/2000/01/rdf-schema#label> "S" .
"""


def _calls(monkeypatch) -> list[str]:
    """What each fast read ended in: "fast", or the NotFast reason."""
    seen: list[str] = []
    real = fast_lines.read_fast

    def spy(*args, **kw):
        try:
            real(*args, **kw)
        except fast_lines.NotFast as exc:
            seen.append(str(exc))
            raise
        seen.append("fast")

    monkeypatch.setattr(fast_lines, "read_fast", spy)
    return seen


def _slow(path: Path, fmt: str) -> Graph:
    return _read(path, fmt, ReadLimits(), progress=False, fast=False)


def _same(a: Graph, b: Graph) -> bool:
    return set(skolemise(a)) == set(skolemise(b))


def _as_nt(src: Path, out: Path) -> Path:
    g = Graph()
    g.parse(src)
    g.serialize(out, format="nt", encoding="utf-8")
    return out


@pytest.mark.parametrize("src", ["gv3", "examples/graphs/catalogue/graph.ttl", "examples/graphs/events/graph.jsonld"])
def test_a_committed_graph_reads_fast_as_rdflib_reads_it(src: str, tmp_path: Path, monkeypatch, gv3_export: Path):
    """The graph as HubLab models it (every entity and triple, in order) is the same through either reader: the GV3
    export in HubLab's ORKG mapping, and two example graphs of other shapes."""
    if src == "gv3":
        nt = tmp_path / "g.nt"
        RdfKnowledgeGraph.load(gv3_export).graph.serialize(nt, format="nt", encoding="utf-8")
    else:
        nt = _as_nt(ROOT / src, tmp_path / "g.nt")
    seen = _calls(monkeypatch)
    fast = read_rdf(nt)
    assert seen == ["fast"]
    slow = _slow(nt, "nt")
    assert _same(fast, slow)
    a, b = RdfKnowledgeGraph(fast, name="g"), RdfKnowledgeGraph(slow, name="g")
    assert list(a.entities()) == list(b.entities())
    assert list(a.triples()) == list(b.triples())


def test_escapes_numbers_ill_typed_literals_and_blank_nodes_read_the_same(tmp_path: Path, monkeypatch):
    nt = tmp_path / "tricky.nt"
    nt.write_text(TRICKY, encoding="utf-8")
    seen = _calls(monkeypatch)
    fast = read_rdf(nt)
    assert seen == ["fast"]
    assert _same(fast, _slow(nt, "nt"))
    assert (URIRef("http://a/sA"), None, None) in fast  # \u escapes in an IRI are decoded by both


@pytest.mark.parametrize("line", [
    '<http://a/s> <http://a/p> "x"^^<http://www.w3.org/2001/XMLSchema#string> .',
    '<http://a/s> <http://a/p> "y"@EN-GB .',
])
def test_a_literal_oxigraph_would_rewrite_is_read_by_rdflib(line: str, tmp_path: Path, monkeypatch):
    """Oxigraph lower-cases language tags and drops an explicit xsd:string; rdflib keeps both, and a literal's id
    comes from its written form: such a file goes to rdflib's reader, and the terms are as written."""
    nt = tmp_path / "g.nt"
    nt.write_text(TRICKY + line + "\n", encoding="utf-8")
    seen = _calls(monkeypatch)
    got = read_rdf(nt)
    assert len(seen) == 1 and seen[0] != "fast"
    assert _same(got, _slow(nt, "nt"))
    assert any(o.n3() in line for o in got.objects())


def test_gzipped_n_quads_read_fast_as_one_graph(tmp_path: Path, monkeypatch):
    ds = Dataset()
    base = Graph()
    base.parse(ROOT / "examples/graphs/catalogue/graph.ttl")
    named = ds.graph(URIRef("https://example.org/named"))
    for t in base:
        named.add(t)
    nq = tmp_path / "g.nq.gz"
    nq.write_bytes(gzip.compress(ds.serialize(format="nquads", encoding="utf-8")))
    seen = _calls(monkeypatch)
    fast = read_rdf(nq)
    assert seen == ["fast"]
    assert _same(fast, base)
    assert _same(fast, _slow(nq, "nquads"))


def test_a_long_line_is_judged_by_rdflibs_reader_in_characters(tmp_path: Path, monkeypatch):
    """The bound is in characters: a line of more bytes than that but fewer characters is read (by rdflib's reader,
    which counts characters); a line over it is refused, naming its line, as before."""
    limits = ReadLimits(max_line_mb=0.001)  # 1,048 characters
    nt = tmp_path / "g.nt"
    nt.write_text(TRICKY + f'<http://a/s> <http://a/p> "{"é" * 800}" .\n', encoding="utf-8")  # 1,600+ bytes
    seen = _calls(monkeypatch)
    got = read_rdf(nt, limits=limits)
    assert len(seen) == 1 and "line" in seen[0]
    assert _same(got, _slow(nt, "nt"))
    nt.write_text(TRICKY + f'<http://a/s> <http://a/p> "{"e" * 2000}" .\n', encoding="utf-8")
    with pytest.raises(InputError) as err:
        read_rdf(nt, limits=limits)
    assert "longer than" in str(err.value) and err.value.line == TRICKY.count("\n") + 1


def test_a_file_oxigraph_refuses_gets_rdflibs_located_error(tmp_path: Path):
    nt = tmp_path / "bad.nt"
    nt.write_text(TRICKY + "<http://a/s> <http://a/p> .\n", encoding="utf-8")
    with pytest.raises(InputError) as err:
        read_rdf(nt)
    assert err.value.line == TRICKY.count("\n") + 1 and "not valid nt" in str(err.value)
