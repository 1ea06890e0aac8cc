"""The evaluations table (DVC `summary` stage, quick start's closing table): headline metrics per evaluation
next to the thesis's number for the same method and graph variant, under the metric names of the scheme."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import yaml

from hublab.config import Settings
from hublab.experiment.comparison.evaluations import evaluation_rows, markdown, write_report

ROOT = Path(__file__).resolve().parents[2]


def _project(tmp_path: Path, shared: Path, runs: list[dict]) -> Settings:
    params = yaml.safe_load((ROOT / "params.yaml").read_text())
    params["paths"]["thesis_results"] = str(shared / "reference/thesis_results")
    params["evaluate"]["runs"] = runs
    return Settings(tmp_path, params)


def _metrics(tmp_path: Path, name: str, m: dict) -> None:
    out = tmp_path / "reports/eval" / name
    out.mkdir(parents=True)
    (out / "metrics.json").write_text(json.dumps(m))


def test_rows_put_thesis_next_to_each_run(tmp_path: Path, shared: Path):
    st = _project(tmp_path, shared, [{"pipeline": "p", "retriever": "hublink", "graph": "gv1", "dataset": "gv1"},
                                     {"pipeline": "p", "retriever": "hublink", "graph": "gv2", "dataset": "gv2"}])
    _metrics(tmp_path, "p-gv1", {"hit_at_10_triples": 0.4, "triples_per_question": 12.5, "recall_triples": 0.6,
                                 "n_questions": 170.0})
    rows = evaluation_rows(st)
    assert [r["run"].strip() for r in rows] == ["p on gv1", "thesis HubLink (GV1)"]  # gv2 not evaluated yet
    assert rows[0]["hit_at_10_triples"] == 0.4 and rows[0]["triples_per_question"] == 12.5
    # thesis Table (final comparison, GV1), read from the thesis's '@' columns into our names
    assert rows[1]["hit_at_10_triples"] == 0.513 and rows[1]["map_at_10_triples"] == 0.298
    table = markdown(rows)
    assert table.splitlines()[0].startswith("| run | Recall@10 | Hits@10 | MAP@10 | MRR@10 | triples/q |")
    assert "| p on gv1 | – | 0.400 | – | – | 12.5 | 0.600 | – | 170 |" in table  # no seconds: machine-bound


def test_every_method_gets_its_own_thesis_row_and_the_files(tmp_path: Path, shared: Path):
    runs = [{"pipeline": "difar_local", "retriever": "difar", "graph": "gv3_orkg", "dataset": "gv3_orkg"},
            {"pipeline": "bm25", "retriever": "bm25", "graph": "gv3_orkg", "dataset": "gv3_orkg"}]
    st = _project(tmp_path, shared, runs)
    _metrics(tmp_path, "difar_local-gv3_orkg", {"recall_at_10_triples": 0.3, "recall_triples": 0.45})
    _metrics(tmp_path, "bm25-gv3_orkg", {"recall_at_10_triples": 0.35, "recall_triples": 0.46})
    rows = evaluation_rows(st)
    assert [r["run"].strip() for r in rows] == ["difar_local on gv3_orkg", "thesis DiFaR (GV3)", "bm25 on gv3_orkg"]
    assert rows[1]["recall_triples"] == 0.523 and rows[1]["map_at_10_triples"] == 0.230  # graph_variants.csv
    data, md = write_report(st, tmp_path / "reports/evaluations")
    assert "thesis DiFaR (GV3)" in md.read_text()
    with data.open() as fh:
        got = list(csv.DictReader(fh))
    assert [r["pipeline"] for r in got] == ["difar_local", "bm25"]  # our runs only: the plot's data
    assert float(got[1]["recall_at_10_triples"]) == 0.35 and "@" not in "".join(got[0])


def test_dvc_compare_stage_names_its_plot_fields():
    """dvc.yaml's plots read columns the producers write (metric names of the scheme)."""
    from hublab.evaluation import names
    from hublab.experiment.comparison.evaluations import SHOWN

    doc = yaml.safe_load((ROOT / "dvc.yaml").read_text())
    stages = doc["stages"]
    # the headline plots are top-level (shown first); each reads a file its stage writes as an output
    top = {path: cfg for spec in doc["plots"] if isinstance(spec, dict) for path, cfg in spec.items()}
    outs = {path for name in ("summary", "compare") for spec in stages[name]["outs"] for path in spec}
    plot = top["reports/evaluations/methods.csv"]
    assert plot["x"] in SHOWN and names.is_valid(plot["x"]) and plot["y"] == "run"
    # the default-vs-tuned comparison's plots read the columns default_vs_tuned.plot_data writes; titles name the graph
    compare = {path: cfg for path, cfg in top.items() if path.startswith("reports/summary/methods_")}
    assert len(compare) == 3 and set(top) <= outs
    for cfg in compare.values():
        assert cfg["y"] == "method_config"
        assert cfg["x"] == names.MAP_AT_10 and ("GV1" in cfg["title"] or "GV3" in cfg["title"])
    for spec in stages["evaluate"]["do"]["plots"]:
        (cfg,) = spec.values()
        assert cfg["x"] in names.KEY_METRICS and cfg["y"] == "value"


def test_params_evaluate_every_llm_free_method_and_index_only_where_needed():
    """evaluate.runs: every LLM-free pipeline on gv3_orkg plus HubLink on gv1; index.runs: exactly the runs
    whose `reads` is an index folder, and each names the pipeline's own retriever type."""
    from hublab.pipeline.config import load_pipeline
    from hublab.retrievers.registry import available, default_pipelines

    params = yaml.safe_load((ROOT / "params.yaml").read_text())
    runs, index = params["evaluate"]["runs"], params["index"]["runs"]
    on_gv3 = {r["pipeline"] for r in runs if r["graph"] == r["dataset"] == "gv3_orkg"}
    assert on_gv3 == {p.stem for p in default_pipelines(ROOT)}
    assert {(r["pipeline"], r["graph"]) for r in runs if r["graph"] != "gv3_orkg"} == {("hublink_local", "gv1")}
    # every registered method is evaluated, except the two that are not retrieval methods of the comparison
    assert {r["retriever"] for r in runs} == set(available(plugins=False)) - {"fixed", "vector"}
    indexed = {(i["pipeline"], i["graph"]) for i in index}
    for r in runs:
        assert load_pipeline(ROOT / "pipelines" / f"{r['pipeline']}.yaml").retriever_type == r["retriever"]
        if (r["pipeline"], r["graph"]) in indexed:
            assert r["reads"] == f"models/{r['graph']}__{r['retriever']}"
        else:
            assert r["reads"] == ("data/snapshots" if r["graph"] == "gv3_orkg" else "data/graphs")
    assert indexed <= {(r["pipeline"], r["graph"]) for r in runs}
    # the methods that keep vectors in the Milvus Lite file models/<graph>__<method>/ (DenseIndex or HubLink's
    # hub index); BM25, MindMap (entity index in memory), FiDeLiS, ToG and StructGPT keep none
    assert {i["retriever"] for i in index} == {"hublink", "difar", "hybrid", "vss", "four_step_focus"}
    assert index[0] == {"pipeline": "hublink_local", "retriever": "hublink", "graph": "gv3_orkg"}  # index@0
    # scripts/quickstart.sh runs `dvc repro evaluate@0 evaluate@1`: HubLink on the GV3 export and on GV1
    assert [(r["pipeline"], r["dataset"]) for r in runs[:2]] == [("hublink_local", "gv3_orkg"),
                                                                  ("hublink_local", "gv1")]
    assert "dvc repro evaluate@0 evaluate@1" in (ROOT / "scripts/quickstart.sh").read_text()
