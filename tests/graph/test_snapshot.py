"""Snapshot stage: export path, API path (recorded ORKG responses served through a requests adapter),
manifest hash stability, malformed-export errors that leave previous outputs untouched."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections import defaultdict
from pathlib import Path
from urllib.parse import parse_qs, urlparse

import pytest
import requests
from requests.adapters import BaseAdapter

from hublab.errors import InputError
from hublab.graph.orkg_api import OrkgApiError, OrkgClient
from hublab.graph.orkg_export import read_export
from hublab.graph.rdf import RdfKnowledgeGraph
from hublab.graph.snapshot import build_snapshot, content_hash, paper_subgraph, snapshot_from_api

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "orkg_api"
FIXTURE_PAPERS = ["R872878", "R870673", "R873171"]
BASE = "https://sandbox.orkg.org"
CFG = {"source": "export", "name": "gv3_orkg", "research_field": "R659055", "contribution_pattern": " 1$"}


class RecordedOrkg(BaseAdapter):
    """Serves tests/fixtures/orkg_api/*.json for the ORKG endpoints; optionally fails the first calls."""

    def __init__(self, fail_first: int = 0, status: int = 503) -> None:
        super().__init__()
        self.fail_first = fail_first
        self.status = status
        self.calls: list[tuple[str, dict]] = []

    def send(self, request, **kwargs):  # noqa: ANN001 - requests' adapter signature
        url = urlparse(request.url)
        query = {k: v[0] for k, v in parse_qs(url.query).items()}
        self.calls.append((url.path, query))
        resp = requests.Response()
        resp.url, resp.request, resp.encoding = request.url, request, "utf-8"
        resp.headers["Content-Type"] = "application/json"
        if self.fail_first:
            self.fail_first -= 1
            resp.status_code, resp._content = self.status, b'{"message": "unavailable"}'
            return resp
        name = None
        if url.path == "/api/papers" and query.get("research_field") == "R659055":
            name = f"papers_page_{query['page']}.json"
        elif m := re.fullmatch(r"/api/statements/(\w+)/bundle", url.path):
            if query.get("maxLevel") == "1":
                name = f"bundle_{m.group(1)}_level1.json"
            elif query.get("blacklist") == "ResearchField":
                name = f"bundle_{m.group(1)}.json"
        path = FIXTURES / name if name else None
        if path is None or not path.exists():
            resp.status_code, resp._content = 404, b'{"status": 404, "message": "Thing not found."}'
            return resp
        resp.status_code, resp._content = 200, path.read_bytes()
        return resp

    def close(self) -> None:
        pass


def _client(adapter: RecordedOrkg, **kw) -> OrkgClient:
    session = requests.Session()
    session.mount(BASE, adapter)
    return OrkgClient(base_url=BASE, page_size=2, session=session, sleep=lambda _s: None, **kw)


@pytest.fixture(scope="module")
def export_snapshot(tmp_path_factory, gv3_export):
    out = tmp_path_factory.mktemp("snap")
    manifest = build_snapshot(CFG, export_path=gv3_export, out_dir=out)
    return out, manifest


def _export_paper_strings(gv3_export: Path, papers: list[str]) -> set[str]:
    triples, _ = read_export(gv3_export)
    out_edges = defaultdict(list)
    for t in triples:
        out_edges[t.subject.uid].append(t)
    return {t.render() for p in papers for t in paper_subgraph(out_edges, p)}


def test_export_snapshot_keeps_paper_subgraphs(export_snapshot, gv3_export):
    out, manifest = export_snapshot
    assert manifest["triple_count"] == 4447  # 4488 export triples minus 41 template/comparison triples
    assert manifest["papers"] == 153 and manifest["dropped_triples"] == 41
    assert manifest["source"] == "export" and manifest["file"].endswith("gv3_flat_distributed.json")
    kg = RdfKnowledgeGraph.load(out / "gv3_orkg.ttl")
    assert len(kg) == 4447
    assert len(kg.entities_by_type("Paper")) == 153
    assert kg.entity("R725420") is None  # the "SWA Classification" template is not a paper's
    rendered = {t.render() for t in kg.triples()}
    assert "(R872918:First Research Object 1, Evaluation method, L1529461:Case Study)" in rendered
    saved = json.loads((out / "gv3_orkg.manifest.json").read_text())
    assert saved["content_hash"] == manifest["content_hash"] == content_hash(kg.triples())
    assert saved["entity_count"] == manifest["entity_count"] > 4000


@pytest.mark.slow  # a whole CLI run with its MLflow store: full tier
def test_manifest_hash_is_stable_and_content_sensitive(export_snapshot, gv3_export, tmp_path):
    _out, first = export_snapshot
    again = build_snapshot(CFG, export_path=gv3_export, out_dir=tmp_path / "again")
    assert again["content_hash"] == first["content_hash"]
    data = json.loads(gv3_export.read_text())
    for rec in data:  # change one literal of one paper
        if rec.get("predicate") == "publication year" and rec["entity_subject"]["uid"] == "R872878":
            rec["entity_object"]["text"] = "1999"
            break
    edited = tmp_path / "edited.json"
    edited.write_text(json.dumps(data))
    changed = build_snapshot(CFG, export_path=edited, out_dir=tmp_path / "edited")
    assert changed["triple_count"] == first["triple_count"]
    assert changed["content_hash"] != first["content_hash"]


def test_api_snapshot_equals_export_subgraph(tmp_path, gv3_export):
    adapter = RecordedOrkg(fail_first=1)  # one transient 503: the client must retry
    manifest = build_snapshot({**CFG, "source": "api"}, export_path=gv3_export, out_dir=tmp_path,
                              client=_client(adapter))
    kg = RdfKnowledgeGraph.load(tmp_path / "gv3_orkg.ttl")
    got = {t.render() for t in kg.triples()}
    assert got == _export_paper_strings(gv3_export, FIXTURE_PAPERS)
    assert manifest["source"] == "api" and manifest["base_url"] == BASE and manifest["papers"] == 3
    assert manifest["content_hash"] == content_hash(kg.triples())
    assert not any("Paper Class 2" in s for s in got)  # GV1 contribution dropped by the pattern
    # ORKG ids are kept: predicate ids on triples, classes as types
    t = next(t for t in kg.outgoing("R872878") if t.predicate == "research field")
    assert t.predicate_id and t.predicate_id.startswith("P") and t.object.types == ("ResearchField",)
    paths = [c[0] for c in adapter.calls]
    assert paths.count("/api/papers") == 3  # 503 retried + pages 0 and 1
    assert {c[1].get("size") for c in adapter.calls if c[0] == "/api/papers"} == {"2"}


def test_api_without_pattern_keeps_every_contribution():
    triples, info = snapshot_from_api(_client(RecordedOrkg()), "R659055", contribution_pattern=None)
    assert info["papers"] == 3
    assert "(R999001:Paper Class 2, evaluation research, L999002:True)" in {t.render() for t in triples}


def test_api_errors_are_clear():
    with pytest.raises(OrkgApiError, match=r"after 3 attempts .*HTTP 503"):
        _client(RecordedOrkg(fail_first=5), retries=2).research_field_papers("R659055")
    with pytest.raises(OrkgApiError, match=r"HTTP 404: Thing not found"):
        _client(RecordedOrkg()).bundle("R1", blacklist=("ResearchField",))


def _malformed_export(gv3_export: Path, tmp_path: Path) -> Path:
    data = json.loads(gv3_export.read_text())
    del data[5]["entity_subject"]["uid"]
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(data))
    return bad


def test_malformed_export_names_record_and_keeps_outputs(export_snapshot, gv3_export, tmp_path):
    out = tmp_path / "snap"
    build_snapshot(CFG, export_path=gv3_export, out_dir=out)
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    bad = _malformed_export(gv3_export, tmp_path)
    with pytest.raises(InputError) as err:
        build_snapshot(CFG, export_path=bad, out_dir=out)
    assert (err.value.file, err.value.row, err.value.field) == (str(bad), 5, "entity_subject.uid")
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before


@pytest.mark.slow  # subprocesses
def test_cli_snapshot_exits_nonzero_on_malformed_export(gv3_export, tmp_path):
    bad = _malformed_export(gv3_export, tmp_path)
    (tmp_path / "params.yaml").write_text(
        f"paths:\n  orkg_export: {bad}\n  snapshots: data/snapshots\nsnapshot:\n  source: export\n  name: gv3_orkg\n"
    )
    env = {**os.environ, "HUBLAB_ROOT": str(tmp_path)}
    proc = subprocess.run([sys.executable, "-m", "hublab.cli", "data", "snapshot"], env=env, cwd=tmp_path,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode != 0
    assert "row 5" in proc.stderr and "entity_subject.uid" in proc.stderr
    assert not (tmp_path / "data" / "snapshots" / "gv3_orkg.ttl").exists()


def _export_for_field(gv3_export: Path, tmp_path: Path, field: str) -> Path:
    """The GV3 export with its research field re-labelled ``field`` (any other ORKG field's papers look so)."""
    out = tmp_path / f"export_{field}.json"
    out.write_text(gv3_export.read_text().replace('"R659055"', f'"{field}"'))
    return out


def _cli_snapshot(root: Path, params: str, *args: str) -> subprocess.CompletedProcess:
    (root / "params.yaml").write_text(params)
    env = {**os.environ, "HUBLAB_ROOT": str(root)}
    return subprocess.run([sys.executable, "-m", "hublab.cli", "data", "snapshot", *args], env=env, cwd=root,
                          capture_output=True, text=True, timeout=300)


@pytest.mark.slow  # subprocesses
def test_any_research_field_id_from_params_or_option(export_snapshot, gv3_export, tmp_path):
    """`snapshot.research_field` (params.yaml, `dvc exp run -S snapshot.research_field=…`) or
    `--research-field` selects the field; nothing is tied to R659055."""
    _, ref = export_snapshot
    export = _export_for_field(gv3_export, tmp_path, "R11")
    manifest = build_snapshot({**CFG, "research_field": "R11"}, export_path=export, out_dir=tmp_path / "p")
    assert (manifest["research_field"], manifest["papers"]) == ("R11", ref["papers"])
    params = (f"paths:\n  orkg_export: {export}\n  snapshots: data/snapshots\nsnapshot:\n  source: export\n"
              "  name: field_r11\n  research_field: R659055\n  contribution_pattern: ' 1$'\n")
    proc = _cli_snapshot(tmp_path, params, "--research-field", "R11")  # the option wins over params.yaml
    assert proc.returncode == 0, proc.stderr
    written = json.loads((tmp_path / "data/snapshots/field_r11.manifest.json").read_text())
    assert written["research_field"] == "R11" and written["content_hash"] == manifest["content_hash"]


@pytest.mark.parametrize("bad", ["659055", "R65x9", "r659055", "", "R659055/papers"])
def test_malformed_research_field_id_is_refused_before_reading(bad, gv3_export, tmp_path):
    with pytest.raises(InputError, match="malformed ORKG research field id") as err:
        build_snapshot({**CFG, "research_field": bad}, export_path=tmp_path / "never-read.json",
                       out_dir=tmp_path / "snap")
    assert err.value.field == "snapshot.research_field"
    assert not (tmp_path / "snap").exists()


@pytest.mark.slow  # subprocesses
def test_cli_names_where_a_malformed_research_field_came_from(gv3_export, tmp_path):
    params = (f"paths:\n  orkg_export: {gv3_export}\n  snapshots: data/snapshots\nsnapshot:\n  source: export\n"
              "  name: gv3_orkg\n  research_field: 659055\n")
    proc = _cli_snapshot(tmp_path, params)
    assert proc.returncode == 2
    # params.yaml's schema refuses it first (a number where an id string belongs), located to the line
    assert f"file {tmp_path / 'params.yaml'}, line 7, field 'snapshot.research_field'" in proc.stderr
    assert "valid string (got 659055)" in proc.stderr
    proc = _cli_snapshot(tmp_path, params.replace("659055", "R659055"), "--research-field", "field 12")
    assert proc.returncode == 2 and "field '--research-field'" in proc.stderr and "'field 12'" in proc.stderr
    assert not (tmp_path / "data" / "snapshots").exists()


def test_manifest_names_the_export_as_configured_whether_shared_is_a_folder_or_a_link(tmp_path, gv3_export):
    """A ``../shared`` that is a symlink (a common checkout layout, and scripts/ci_local.sh's) must give the same
    manifest bytes, hence the same DVC hash, as a real folder: the recorded path is the configured one, not the
    link's target (a resolved path made every clone with a linked ../shared rebuild every downstream stage)."""
    manifests = []
    for layout in ("folder", "link"):
        base = tmp_path / layout
        root = base / "hublab"
        root.mkdir(parents=True)
        export = base / "shared" / "data" / "orkg" / gv3_export.name
        export.parent.mkdir(parents=True)
        if layout == "folder":
            export.write_bytes(gv3_export.read_bytes())
        else:
            (base / "shared" / "data" / "orkg").rmdir()
            (base / "shared" / "data" / "orkg").symlink_to(gv3_export.parent, target_is_directory=True)
        m = build_snapshot(CFG, export_path=root / ".." / "shared" / "data" / "orkg" / gv3_export.name,
                           out_dir=root / "data" / "snapshots", root=root)
        assert m["file"] == f"../shared/data/orkg/{gv3_export.name}", m["file"]
        manifests.append((root / "data" / "snapshots" / f"{m['name']}.manifest.json").read_bytes())
    assert manifests[0] == manifests[1]
