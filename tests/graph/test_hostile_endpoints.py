"""SPARQL endpoints that misbehave, served in a thread on 127.0.0.1 (tests/support/sparql_fakes.py): a graph that
changes while it is read, paging that would never end, a gzip bomb, an answer that trickles or never comes, and
SIGTERM while the pages are read. Each is one line naming the endpoint, in bounded time, and nothing is kept."""

from __future__ import annotations

import gzip
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from rdflib import Literal, URIRef

from hublab.config import Settings
from hublab.graph.backends import load_source, resolve_graph
from hublab.graph.endpoint import EndpointError, EndpointSettings, SparqlEndpoint
from support.sparql_fakes import FakeEndpoint, small_graph, trickle, within

ROOT = Path(__file__).resolve().parents[2]
LABEL = URIRef("http://www.w3.org/2000/01/rdf-schema#label")


def _settings(tmp: Path, **endpoint) -> Settings:
    return Settings(tmp, {"paths": {"graphs": "g", "snapshots": "s", "indices": "models", "cache": ".cache"},
                          "user_graphs": {"endpoint": {"page_size": 10, "retries": 0, **endpoint}}})


def _fingerprint_json(n: int) -> bytes:
    row = {k: {"type": "literal", "value": str(v)} for k, v in (("n", n), ("a", 1), ("b", 2))}
    return json.dumps({"head": {"vars": ["n", "a", "b"]}, "results": {"bindings": [row]}}).encode()


def test_a_well_behaved_endpoint_reads_as_before_gzip_answers_too(tmp_path):
    graph = small_graph(25)

    def gzipped(query, h):
        body = fake.answer(query)
        h.answer(gzip.compress(body), "application/n-triples", {"Content-Encoding": "gzip"})
        return True

    with FakeEndpoint(graph, gzipped) as fake:
        st = _settings(tmp_path)
        kg = load_source(resolve_graph(fake.url, st), st)
    assert set(kg.graph) == set(graph)


def test_a_graph_edited_while_it_is_read_is_refused(tmp_path):
    graph = small_graph(40)

    def edit_on_second_page(query, h):
        if "OFFSET 10 " in query:  # s0's label was read on the first page
            graph.set((URIRef("https://ex.org/s0"), LABEL, Literal("edited")))
        return False

    with FakeEndpoint(graph, edit_on_second_page) as fake:
        st = _settings(tmp_path)
        src = resolve_graph(fake.url, st)
        with pytest.raises(EndpointError, match=r"content changed while it was read .*nothing was kept") as err:
            load_source(src, st)
    assert "\n" not in str(err.value) and fake.url in str(err.value)


@pytest.mark.parametrize("shuffled", [False, True])
def test_an_endpoint_ignoring_limit_and_offset_stops_paging(tmp_path, shuffled):
    graph = small_graph(40)

    def same_page(query, h):
        if "CONSTRUCT" not in query:
            return False
        body = fake.answer(re.sub(r"OFFSET \d+", "OFFSET 0", query))
        if shuffled:  # the same triples in another order each time
            lines = body.splitlines(keepends=True)
            body = b"".join(lines[len(fake.queries) % len(lines):] + lines[:len(fake.queries) % len(lines)])
        h.answer(body, "application/n-triples")
        return True

    with FakeEndpoint(graph, same_page) as fake:
        st = _settings(tmp_path)
        src = resolve_graph(fake.url, st)
        done, value = within(10, lambda: load_source(src, st))
    assert done, "paging did not end"
    assert isinstance(value, EndpointError) and "ignores" in str(value) and "OFFSET" in str(value)
    assert len(fake.queries) < 10


def test_an_endless_answer_to_one_page_stops_at_the_limit(tmp_path):
    def endless_page(query, h):
        if "CONSTRUCT" not in query:
            return False
        h.send_response(200)
        h.send_header("Content-Type", "application/n-triples")
        h.end_headers()
        try:
            i = 0
            while not fake.stop.is_set():
                h.wfile.write("".join(f'<https://ex.org/x{i + j}> <https://ex.org/v> "{j}" .\n'
                                      for j in range(1000)).encode())
                i += 1000
        except OSError:
            pass
        return True

    with FakeEndpoint(small_graph(40), endless_page) as fake:
        st = _settings(tmp_path)
        src = resolve_graph(fake.url, st)
        done, value = within(10, lambda: load_source(src, st))
    assert done, "the answer was read without end"
    assert isinstance(value, EndpointError) and "more than 10 triples to LIMIT 10" in str(value)


def test_an_endpoint_sending_more_triples_than_it_counts_stops_paging(tmp_path):
    pages = iter(range(10**6))

    def endless(query, h):
        if "CONSTRUCT" not in query:
            return False
        k = next(pages)
        body = "".join(f'<https://ex.org/p{k}_{i}> <https://ex.org/v> "{i}" .\n' for i in range(10))
        h.answer(body.encode(), "application/n-triples")
        return True

    with FakeEndpoint(small_graph(40), endless) as fake:
        st = _settings(tmp_path)
        src = resolve_graph(fake.url, st)
        done, value = within(10, lambda: load_source(src, st))
    assert done, "paging did not end"
    assert isinstance(value, EndpointError) and "more than the 40 triples it counts" in str(value)


def test_a_gzip_bomb_answer_stops_at_the_expansion_bound(tmp_path):
    gz = gzip.compress(b" " * (64 << 20), 9) * 16  # 16 gzip members of 64 MiB of spaces: 1 GiB in ~1 MB

    def bomb(query, h):
        if "CONSTRUCT" not in query:
            return False
        h.answer(gz, "application/n-triples", {"Content-Encoding": "gzip"})
        return True

    with FakeEndpoint(small_graph(10), bomb) as fake:
        st = _settings(tmp_path)
        src = resolve_graph(fake.url, st)
        start = time.monotonic()
        done, value = within(10, lambda: load_source(src, st))
    assert done and time.monotonic() - start < 10
    assert isinstance(value, EndpointError) and "expands more than 100 times" in str(value)
    assert "user_graphs.endpoint.max_expansion_ratio" in str(value)


def test_an_answer_that_trickles_is_stopped_at_the_whole_answer_deadline(tmp_path, capsys):
    def drip(query, h):
        if "CONSTRUCT" not in query:
            return False
        trickle(h, fake.stop, every_s=0.2)
        return True

    with FakeEndpoint(small_graph(10), drip) as fake:
        # resolved (its fingerprint asked, answered whole) under the default bounds: on a busy machine the fake's
        # first SPARQL evaluation can take over the 1 s this test gives the trickled read
        src = resolve_graph(fake.url, _settings(tmp_path))
        st = _settings(tmp_path, read_timeout_s=1, answer_timeout_s=2, notice_after_s=0.5)
        start = time.monotonic()
        done, value = within(10, lambda: load_source(src, st))
        took = time.monotonic() - start
    assert done and took < 5, took
    assert isinstance(value, EndpointError) and "no complete answer within 2 s" in str(value)
    assert "answer_timeout_s" in str(value)
    assert "waiting for SPARQL endpoint" in capsys.readouterr().err


def test_an_endpoint_that_never_answers_says_it_is_waiting(capsys):
    def silent(query, h):
        fake.stop.wait(30)
        return True

    with FakeEndpoint(small_graph(3), silent) as fake:
        ep = SparqlEndpoint(fake.url, EndpointSettings(read_timeout_s=1.5, notice_after_s=0.3, retries=0))
        done, value = within(10, ep.fingerprint)
    assert done and isinstance(value, EndpointError) and "no answer within 1.5 s after 1 tries" in str(value)
    assert capsys.readouterr().err.count("waiting for SPARQL endpoint") == 1


def test_sigterm_while_pages_are_read_ends_the_command(tmp_path):
    pages = iter(range(10**6))

    def slow_endless(query, h):
        if "CONSTRUCT" not in query:
            h.answer(_fingerprint_json(10**9), "application/sparql-results+json")
            return True
        time.sleep(0.2)
        k = next(pages)
        h.answer("".join(f'<https://ex.org/p{k}_{i}> <https://ex.org/v> "{i}" .\n' for i in range(10)).encode(),
                 "application/n-triples")
        return True

    project = tmp_path / "project"
    project.mkdir()
    (project / "params.yaml").write_text("user_graphs:\n  endpoint: {page_size: 10}\n")
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "HF_HUB_OFFLINE": "1", "HUBLAB_ROOT": str(project)}
    with FakeEndpoint(small_graph(3), slow_endless) as fake:
        proc = subprocess.Popen([sys.executable, "-m", "hublab.cli", "graph", "check", fake.url], cwd=project,
                                env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            deadline = time.monotonic() + 30
            while sum("CONSTRUCT" in q for q in fake.queries) < 3 and time.monotonic() < deadline \
                    and proc.poll() is None:
                time.sleep(0.05)
            assert proc.poll() is None, proc.communicate()
            sent = time.monotonic()
            proc.send_signal(signal.SIGTERM)
            out, err = proc.communicate(timeout=10)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        took = time.monotonic() - sent
    assert proc.returncode == 143, err
    assert took < 5
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("interrupted (SIGTERM)"), err


def test_a_page_size_of_zero_is_refused_in_params(tmp_path):
    from hublab.errors import InputError
    from hublab.params_schema import load_params

    (tmp_path / "params.yaml").write_text("user_graphs:\n  endpoint: {page_size: 0, answer_timeout_s: -1}\n")
    with pytest.raises(InputError) as err:
        load_params(tmp_path / "params.yaml")
    assert "user_graphs.endpoint.page_size" in str(err.value) and "answer_timeout_s" in str(err.value)
