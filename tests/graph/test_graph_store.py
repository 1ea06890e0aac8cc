"""The on-disk graph store (``hublab.graph.store``): the same graph as the in-memory backend, node for node and triple
for triple in the same orders, kept once per file content and model settings."""

from __future__ import annotations

import gzip
import shutil
from pathlib import Path

import pytest
import yaml

from conftest import share_embedding_cache
from hublab.datasets.model import parse_statement
from hublab.graph import store_build
from hublab.graph.base import KnowledgeGraph
from hublab.graph.profile import TYPE_LIKE_NAMES, TypeCandidate, type_candidates
from hublab.graph.rdf import RdfKnowledgeGraph
from hublab.graph.shape import shape_report
from hublab.graph.store import StoreKnowledgeGraph, open_store
from hublab.graph.vocabulary import Vocabulary, local_name

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ["examples/graphs/catalogue/graph.ttl", "examples/graphs/concepts/graph.rdf",
            "examples/graphs/events/graph.jsonld", "examples/your-graph/graph.ttl"]


def _walked_type_candidates(kg: KnowledgeGraph) -> list[TypeCandidate]:
    """``type_candidates`` by walking the graph's triples (every candidate, not the top few): its oracle."""
    subjects: dict[str, set[str]] = {}
    objects: dict[str, set[str]] = {}
    for t in kg.triples():
        if not (t.subject.is_literal or t.object.is_literal):
            subjects.setdefault(t.predicate, set()).add(t.subject.uid)
            objects.setdefault(t.predicate, set()).add(t.object.uid)
    found = []
    for pred, subs in subjects.items():
        iri = str(kg.predicate_iri_of(pred) or pred)
        named = local_name(iri).casefold() in TYPE_LIKE_NAMES
        if named or (len(subs) >= 2 and 2 * len(objects[pred]) <= len(subs)):
            found.append(TypeCandidate(iri, len(subs), len(objects[pred]), named))
    return sorted(found, key=lambda c: (not c.named, -c.typed_nodes, c.predicate))


def _same_graph(mem: RdfKnowledgeGraph, st: StoreKnowledgeGraph) -> None:
    ents = list(mem.entities())
    assert ents == list(st.entities())
    assert list(mem.triples()) == list(st.triples())
    assert len(mem) == len(st)
    for e in ents:
        assert mem.outgoing(e.uid) == st.outgoing(e.uid), e
        assert mem.incoming(e.uid) == st.incoming(e.uid), e
        assert mem.entity(e.uid) == st.entity(e.uid)
        assert mem.has_label(e.uid) == st.has_label(e.uid), e
        assert mem.term_of(e.uid) == st.term_of(e.uid), e
    for ty in sorted({t for e in ents for t in e.types}):
        assert mem.entities_by_type(ty) == st.entities_by_type(ty), ty
    assert mem.type_counts() == st.type_counts() == KnowledgeGraph.type_counts(st)  # counted in SQL and by walking
    assert mem.node_counts() == st.node_counts() == KnowledgeGraph.node_counts(st)  # counted in SQL and by walking
    walked = _walked_type_candidates(mem)  # counted on either backend's edge table and by walking
    assert type_candidates(mem, top=10_000) == type_candidates(st, top=10_000) == walked
    for hub_types in (None, ["http://no.such/Type"]):  # measured on the store's tables and by walking
        assert shape_report(mem, hub_types).as_dict() == shape_report(st, hub_types).as_dict()
    for t in list(mem.triples())[:300]:
        assert mem.statement(t) == st.statement(t)
        if "\n" not in st.statement(t):  # a multi-line literal's form is Turtle's, not one N-Triples line
            assert st.triple_for_statement(*parse_statement(st.statement(t))) == t
    assert mem.predicate_iri_of(t.predicate) == st.predicate_iri_of(t.predicate)
    assert st.entity("R0") is None and st.outgoing("R0") == [] and st.entities_by_type("no such type") == []


@pytest.mark.parametrize("src", EXAMPLES)
def test_an_example_graph_in_the_store_is_the_in_memory_graph(src: str, tmp_path: Path):
    """Turtle, RDF/XML and JSON-LD (read whole, then kept on disk): every node, triple, order and lookup the same."""
    mem = RdfKnowledgeGraph.load(ROOT / src, name="g")
    _same_graph(mem, open_store(ROOT / src, tmp_path / "s", name="g"))


@pytest.mark.parametrize("suffix", [".ttl", ".nt", ".nt.gz", ".nq"])
def test_the_gv3_export_in_the_store_is_the_in_memory_graph(suffix: str, tmp_path: Path, gv3_orkg_graph):
    """The GV3 export in HubLab's ORKG mapping, as Turtle and as N-Triples/N-Quads read as a stream (gzipped too)."""
    nt = tmp_path / "g.nt"
    gv3_orkg_graph.graph.serialize(nt, format="nt", encoding="utf-8")
    path = tmp_path / f"g{suffix}"
    if suffix == ".ttl":
        gv3_orkg_graph.save(path)
    elif suffix == ".nt.gz":
        with nt.open("rb") as f, gzip.open(path, "wb") as g:
            shutil.copyfileobj(f, g)
    elif suffix == ".nq":  # every statement in a named graph, some in two: one graph, each statement once
        lines = nt.read_text(encoding="utf-8").splitlines()
        path.write_text("".join(f"{ln[:-1]} <http://g/{i % 2}> .\n" for i, ln in enumerate(lines))
                        + "".join(f"{ln[:-1]} <http://g/9> .\n" for ln in lines[:50]), encoding="utf-8")
    mem = RdfKnowledgeGraph.load(path, name="g")
    assert len(mem) == len(gv3_orkg_graph)
    _same_graph(mem, open_store(path, tmp_path / "s", name="g"))


def test_what_the_stream_cannot_give_as_rdflib_does_is_read_whole_and_still_the_same(tmp_path: Path, monkeypatch):
    """Blank nodes (ids from their whole content), an upper-case language tag and ``xsd:string`` (forms Oxigraph
    rewrites), typed values rdflib normalises, escapes: the store equals the in-memory graph, through the stream where
    it can be used and through rdflib's reader where not."""
    ex = "http://example.org/"
    streamed = tmp_path / "streamed.nt"
    streamed.write_text("".join([
        f'<{ex}a> <http://www.w3.org/2000/01/rdf-schema#label> "A \\"quoted\\" \\\\ label"@en .\n',
        f'<{ex}a> <http://www.w3.org/2000/01/rdf-schema#label> "Ä label"@de .\n',
        f'<{ex}a> <{ex}count> "01"^^<http://www.w3.org/2001/XMLSchema#integer> .\n',
        f'<{ex}a> <{ex}note> "two\\nlines\\r" .\n',
        f'<{ex}a> <http://www.w3.org/1999/02/22-rdf-syntax-ns#type> <{ex}Thing> .\n',
        f'<{ex}b> <{ex}knows> <{ex}a> .\n',
        f'<{ex}knows> <http://schema.org/name> "knows well" .\n',
    ]), encoding="utf-8")
    whole = {
        "blank.nt": f'<{ex}a> <{ex}p> _:x .\n_:x <{ex}q> "v" .\n_:y <{ex}q> "v" .\n',
        "upper.nt": f'<{ex}a> <{ex}p> "v"@EN .\n<{ex}a> <{ex}q> "w" .\n',
        "xsdstring.nt": f'<{ex}a> <{ex}p> "v"^^<http://www.w3.org/2001/XMLSchema#string> .\n',
    }
    streams: list[str] = []
    real = store_build.oxigraph_rows

    def spy(quads, vocab):
        yield from real(quads, vocab)
        streams.append("streamed")

    monkeypatch.setattr("hublab.graph.store.oxigraph_rows", spy)
    _same_graph(RdfKnowledgeGraph.load(streamed, name="g"), open_store(streamed, tmp_path / "s0", name="g"))
    assert streams == ["streamed"]
    for i, (name, text) in enumerate(whole.items()):
        path = tmp_path / name
        path.write_text(text, encoding="utf-8")
        _same_graph(RdfKnowledgeGraph.load(path, name="g"), open_store(path, tmp_path / f"s{i + 1}", name="g"))
    assert streams == ["streamed"]  # none of the others was taken from the stream


def test_a_store_is_built_once_and_reused(tmp_path: Path, monkeypatch):
    """The second open reads the built store: building is not called again."""
    src = ROOT / EXAMPLES[0]
    first = open_store(src, tmp_path / "s", name="g")
    n = len(first)

    def refuse(*a, **kw):
        raise AssertionError("built again")

    monkeypatch.setattr("hublab.graph.store.build_model", refuse)
    again = open_store(src, tmp_path / "s", name="g")
    assert len(again) == n and list(again.triples()) == list(first.triples())
    assert not list(tmp_path.glob(".*partial"))  # no build folder left behind


def test_a_failed_build_leaves_no_store(tmp_path: Path):
    """A file that does not parse is the reader's located error, and no half store is left to be reused."""
    from hublab.errors import InputError

    bad = tmp_path / "bad.nt"
    bad.write_text("<http://e/a> <http://e/p> .\n", encoding="utf-8")
    with pytest.raises(InputError, match="not valid"):
        open_store(bad, tmp_path / "s", name="g")
    assert not (tmp_path / "s").exists() and not list(tmp_path.glob(".*partial"))


def test_label_and_type_settings_shape_the_store(tmp_path: Path):
    """Another label predicate is another model: the store built with it labels by it."""
    src = ROOT / "examples/your-graph/graph.ttl"
    vocab = Vocabulary.from_iris(["http://purl.org/dc/terms/title"])
    mem = RdfKnowledgeGraph.load(src, name="g", vocabulary=vocab)
    st = open_store(src, tmp_path / "s", name="g", vocabulary=vocab)
    _same_graph(mem, st)
    assert list(st.entities()) != list(RdfKnowledgeGraph.load(src, name="g").entities())


def _project(root: Path, mode: str) -> Path:
    params = yaml.safe_load((ROOT / "params.yaml").read_text())
    params["user_graphs"]["store"] = {"mode": mode, "above_mb": 0}
    root.mkdir(parents=True)
    (root / "params.yaml").write_text(yaml.safe_dump(params))
    shutil.copytree(ROOT / "pipelines", root / "pipelines")
    return root


def test_the_graph_door_keeps_a_file_where_the_settings_say(tmp_path: Path, monkeypatch):
    """``user_graphs.store.mode``: ``disk`` keeps a file in the store (under the project cache, keyed by its content),
    ``memory`` reads it into memory, ``auto`` puts it on disk from ``above_mb``."""
    from hublab.config import settings
    from hublab.graph.backends import open_graph

    src = str(ROOT / EXAMPLES[0])
    disk = settings(_project(tmp_path / "disk", "disk"))
    kg = open_graph(src, disk)
    assert isinstance(kg, StoreKnowledgeGraph)
    assert kg.folder.parent == disk.cache_dir() / "graph-stores"
    assert isinstance(open_graph(src, settings(_project(tmp_path / "mem", "memory"))), RdfKnowledgeGraph)
    auto = settings(_project(tmp_path / "auto", "auto"))
    assert isinstance(open_graph(src, auto), StoreKnowledgeGraph)  # above_mb 0
    small = auto.with_section("user_graphs", store={"mode": "auto", "above_mb": 1})
    assert isinstance(open_graph(src, small), RdfKnowledgeGraph)


QUESTIONS = 8
LLM_FREE = ["bm25", "vss", "hybrid", "hublink_local", "difar_local", "fidelis_local", "four_step_focus_local",
            "mindmap_local", "structgpt_local", "tog_local"]


@pytest.mark.slow
@pytest.mark.parametrize(("graph", "methods"), [
    ("catalogue", LLM_FREE), ("concepts", ["bm25", "hublink_local", "tog_local"]),
    ("events", ["difar_local", "hublink_local", "structgpt_local"])])
def test_every_llm_free_method_retrieves_the_same_through_the_store(graph: str, methods: list[str], tmp_path: Path):
    """Each LLM-free method, its index built from scratch in a project of its own, ranks the same triples for an
    example graph's questions whether the graph is in memory or in the store (so every metric is the same; all the
    questions of all three graphs and every method were checked the same way once: 9 minutes on a busy machine).
    Slow: every method on the catalogue, three on each other graph, two index builds each (the second embeds
    nothing new: the projects share the run's embedding cache)."""
    from hublab import api
    from hublab.config import settings
    from hublab.datasets.catalog import load_dataset

    src = ROOT / f"examples/graphs/{graph}"
    path = next(p for p in src.iterdir() if p.name.startswith("graph."))
    qfile = next(p for p in src.iterdir() if p.name.startswith("questions."))
    # one embedding cache (the run's): the disk project's build embeds nothing the memory project's did not
    roots = {mode: share_embedding_cache(_project(tmp_path / mode, mode)) for mode in ("memory", "disk")}
    questions = [q.question for q in load_dataset(settings(roots["memory"]), str(qfile))][:QUESTIONS]
    hubs = yaml.safe_load((ROOT / "params.yaml").read_text())["user_graphs"]["graphs"][graph]["hub_types"]
    assert len(questions) == QUESTIONS
    for name in methods:
        ranked = {}
        for mode, root in roots.items():
            pipe = api.load_pipeline(name, str(path), root=root, hub_types=hubs if "hublink" in name else None)
            kept = pipe._pipeline.retriever.resources.graph
            assert isinstance(kept, StoreKnowledgeGraph if mode == "disk" else RdfKnowledgeGraph), (name, mode)
            ranked[mode] = [[(t.triple, None if t.score is None else round(t.score, 6)) for t in pipe.retrieve(q)]
                            for q in questions]
        assert ranked["memory"] == ranked["disk"], name
        assert any(ranked["disk"]), name


def test_sparql_on_a_file_kept_in_the_store_sees_the_files_statements(tmp_path: Path):
    """SPARQL on a file kept in the store runs on an Oxigraph store loaded from the file: every statement counted,
    gzipped too, and a blank node answered by the skolem IRI the graph in memory gives it."""
    import gzip

    src = ROOT / "examples/your-graph/graph.ttl"
    kg = open_store(src, tmp_path / "s", name="g")
    rows = kg.sparql("SELECT (COUNT(*) AS ?n) WHERE { ?s ?p ?o }")
    assert rows == [{"n": str(len(RdfKnowledgeGraph.load(src).graph))}]
    packed = tmp_path / "graph.ttl.gz"
    packed.write_bytes(gzip.compress(src.read_bytes()))
    assert open_store(packed, tmp_path / "gz", name="g").sparql("SELECT (COUNT(*) AS ?n) WHERE { ?s ?p ?o }") == rows
    blank = tmp_path / "blank.ttl"
    blank.write_text('@prefix ex: <http://ex.org/> .\nex:a ex:p [ ex:q "x" ] .\nex:a ex:r "y" .\n')
    query = "SELECT ?s ?o WHERE { ?s <http://ex.org/q> ?o }"
    on_disk = open_store(blank, tmp_path / "b", name="b").sparql(query)
    assert on_disk == RdfKnowledgeGraph.load(blank).sparql(query)
    assert on_disk[0]["s"].startswith("https://hublab.dev/bnode/")
