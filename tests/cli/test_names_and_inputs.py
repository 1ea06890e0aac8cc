"""What the CLI accepts by name and what it says about bad names and bad bytes: ``hublab list``, unknown
graph/dataset/retriever names listing the valid ones, non-UTF-8 KGQA files located to the row."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from hublab.cli import app
from hublab.config import settings
from hublab.datasets.catalog import check_golden_ids, load_dataset
from hublab.datasets.kgqa_csv import load_kgqa_csv
from hublab.datasets.model import read_jsonl
from hublab.errors import InputError
from hublab.pipeline.config import PipelineConfig

ROOT = Path(__file__).resolve().parents[2]


def test_list_json_names_graphs_datasets_pipelines_and_methods(monkeypatch):
    monkeypatch.setenv("HUBLAB_ROOT", str(ROOT))
    res = CliRunner().invoke(app, ["list", "--json"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.output)
    # the built-in graphs, then those params.yaml declares (user_graphs: the example graph)
    assert [g["name"] for g in out["graphs"]] == ["gv1", "gv2", "gv3", "gv4", "gv3_orkg", "example", "catalogue",
                                                   "concepts", "events"]
    assert {"reduced_gv1", "gv3_orkg", "gv1"} <= {d["name"] for d in out["datasets"]}
    assert next(d for d in out["datasets"] if d["name"] == "reduced_gv1")["graph"] == "gv1"
    assert "hublink_local" in {p["name"] for p in out["pipelines"]}
    assert "hublink" in out["retrievers"]


def test_unknown_names_list_the_valid_ones():
    st = settings(ROOT)
    with pytest.raises(InputError, match=r"unknown graph 'gv9'; valid: gv1, gv2, gv3, gv4, gv3_orkg"):
        st.graph_file("gv9")
    with pytest.raises(InputError, match=r"unknown dataset 'gv9'; valid: .*reduced_gv1"):
        load_dataset(st, "gv9")
    with pytest.raises(InputError, match=r"valid: .*hublink"):
        PipelineConfig.from_dict({"name": "x", "retriever": {"type": "hub_link"}}, source="x.yaml")


def test_cli_unknown_graph_is_a_clean_error(monkeypatch):
    monkeypatch.setenv("HUBLAB_ROOT", str(ROOT))
    res = CliRunner().invoke(app, ["index", "--pipeline", str(ROOT / "pipelines" / "bm25.yaml"), "--graph", "gv9"])
    assert res.exit_code != 0
    assert isinstance(res.exception, InputError) and "valid: gv1" in str(res.exception)


def test_non_utf8_kgqa_files_are_located_errors(shared: Path, tmp_path: Path):
    src = shared / "data" / "kgqa" / "reduced_deep_distributed.csv"
    lines = src.read_bytes().split(b"\n")
    lines[3] = lines[3].replace(b"the", b"th\xff", 1)
    bad = tmp_path / "bad.csv"
    bad.write_bytes(b"\n".join(lines))
    with pytest.raises(InputError, match="not UTF-8") as err:
        load_kgqa_csv(bad)
    assert err.value.file == str(bad) and err.value.row is not None
    jl = tmp_path / "bad.jsonl"
    jl.write_bytes(b'{"uid": "1", "question": "q", "golden_answer": "a", "golden_triples": ["(R1:a, b, R2:c)"]}\n'
                 b'{"uid": "\xff"}\n')
    with pytest.raises(InputError, match="not UTF-8") as err:
        read_jsonl(jl)
    assert err.value.row == 2


def test_own_kgqa_file_by_path_checked_against_the_graph_by_content(shared: Path, tmp_path: Path,
                                                                   gv3_orkg_graph):
    own = tmp_path / "my_questions.csv"
    shutil.copy(shared / "data" / "kgqa" / "flat_distributed.csv", own)
    pairs = load_dataset(settings(ROOT), str(own))
    assert len(pairs) == 170
    assert check_golden_ids(pairs, gv3_orkg_graph, dataset=own.name, graph_name="gv3_orkg") > 0.95
    reduced = load_dataset(settings(ROOT), str(shared / "data" / "kgqa" / "reduced_deep_distributed.csv"))
    from hublab.graph.model import Knowledge, Triple
    from hublab.graph.rdf import RdfKnowledgeGraph

    other = RdfKnowledgeGraph.from_triples([Triple(Knowledge("X1", "x"), "p", Knowledge("X2", "y"))], name="other")
    with pytest.raises(InputError, match="golden triple ids would not match"):
        check_golden_ids(reduced, other, dataset="reduced", graph_name="other")
