"""What a new user meets first (issue #30 item 5 and the per-question part of item 1): pipeline names as ``hublab
list`` prints them, a summary that says when the thesis's reference data is missing, ``hublab run``'s predictions
file and per-question table, and output quiet by default (``-v`` for INFO lines)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
SRC = REPO / "src"


@pytest.fixture()
def project(tmp_path, shared, monkeypatch) -> Path:
    """Only params.yaml (paths into ../shared) and the shipped pipelines: nothing built."""
    from conftest import pipelines_project

    pipelines_project(tmp_path, shared, monkeypatch)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    return tmp_path


def _errors(err: str) -> list[str]:
    return [ln for ln in err.splitlines() if ln.startswith("error: ")]


def _reduced(shared: Path) -> str:
    return str(shared / "data/kgqa/reduced_deep_distributed.csv")


# ------------------------------------------------------------------------------------------ pipeline names


def test_a_pipeline_name_as_hublab_list_prints_it_resolves(project, shared):
    from conftest import invoke_cli

    code, out, err = invoke_cli(["list", "--json"])
    assert code == 0 and "hublink_local" in {p["name"] for p in json.loads(out)["pipelines"]}
    code, out, err = invoke_cli(["run", "hublink_local", "--graph", "gv1", "--dataset", _reduced(shared),
                                 "--dry-run"])
    assert code == 0, err
    assert "LLM-free pipeline" in out
    code, out, err = invoke_cli(["run", "hublink", "--graph", "gv1", "--dataset", _reduced(shared), "--dry-run"])
    assert code == 0 and "HubLink (Traverse) on GV1" in out, err  # hublink.yaml, not hublink_local.yaml
    code, out, err = invoke_cli(["run", "tuned/bm25", "--graph", "gv1", "--dataset", _reduced(shared), "--dry-run"])
    assert code == 0 and "LLM-free pipeline" in out, err


@pytest.mark.parametrize("args", [
    ["run", "hublnk_local", "--graph", "gv1", "--dataset", "reduced_gv1", "--dry-run"],
    ["index", "--pipeline", "hublnk_local", "--graph", "gv1"],
    ["ask", "Which papers?", "--pipeline", "hublnk_local", "--graph", "gv1"],
    ["tune", "hublnk_local", "--study", "s1", "--no-progress"],
    ["tune-all", "hublnk_local", "--no-progress"],
    ["report", "compare", "--graph", "gv1", "--pipelines", "hublnk_local"],
], ids=["run", "index", "ask", "tune", "tune-all", "compare"])
def test_a_name_that_matches_nothing_says_pipeline_not_found_and_lists_the_names(project, args):
    from conftest import invoke_cli

    code, out, err = invoke_cli(args)
    assert code == 2, (out, err)
    (line,) = [ln for ln in _errors(err) if "hublnk_local" in ln]
    assert "pipeline not found: 'hublnk_local'" in line and "hublink_local, hublink_local_finetuned" in line
    assert not (project / "mlruns").exists() and not (project / "outputs").exists()


def test_a_missing_pipeline_path_lists_the_names_too(project, shared):
    from conftest import invoke_cli

    code, out, err = invoke_cli(["run", "pipelines/hublnk.yaml", "--graph", "gv1", "--dataset", _reduced(shared),
                                 "--dry-run"])
    (line,) = _errors(err)
    assert code == 2 and "file pipelines/hublnk.yaml: pipeline file not found; valid names" in line
    assert "hublink_local" in line


# ------------------------------------------------------------------------------------------ report summary


def test_summary_without_the_thesis_reference_data_fails_with_the_path(project):
    from conftest import invoke_cli
    from hublab.config import _load_params

    params = yaml.safe_load((project / "params.yaml").read_text())
    missing = project / "no-shared" / "reference" / "thesis_results"
    params["paths"]["thesis_results"] = str(missing)
    (project / "params.yaml").write_text(yaml.safe_dump(params))
    _load_params.cache_clear()
    code, out, err = invoke_cli(["report", "summary", "--out", "summary"])
    assert code == 2, (out, err)
    (line,) = _errors(err)
    assert f"{missing} does not exist" in line and "paths.thesis_results" in line
    assert out == "" and not (project / "summary").exists()


# ------------------------------------------------------------------------------------------ hublab run output


@pytest.fixture()
def small_project(tmp_path, shared, gv3_orkg_graph, monkeypatch) -> Path:
    """Three GV3 questions on the papers that answer them, bm25.yaml; no MLflow store yet."""
    from conftest import small_gv3_project

    root = small_gv3_project(tmp_path / "p", shared, gv3_orkg_graph, monkeypatch, n_questions=3,
                             mlflow_store=False)
    (root / "pipelines").mkdir()
    shutil.copy(REPO / "pipelines/bm25.yaml", root / "pipelines/bm25.yaml")
    monkeypatch.chdir(root)
    return root


@pytest.mark.slow  # a whole CLI run with its MLflow store: full tier
def test_run_prints_the_predictions_file_and_with_per_question_a_row_per_question(small_project):
    from conftest import invoke_cli
    from hublab.evaluation.names import HITS_AT_10, MAP_AT_10

    args = ["run", "bm25", "--graph", "gv3_orkg", "--dataset", "gv3_orkg", "--no-carbon", "--no-trace"]
    code, out, err = invoke_cli(args)
    assert code == 0, err[-2000:]
    (line,) = [ln for ln in out.splitlines() if ln.startswith("per-question results: ")]
    predictions = Path(line.split(": ", 1)[1])
    assert not predictions.is_absolute() and predictions.parts[:2] == ("outputs", "runs")
    assert predictions.name == "predictions.jsonl" and (small_project / predictions).is_file()
    records = [json.loads(r) for r in (small_project / predictions).read_text().splitlines()]
    assert "per question (" not in out  # the per-question table only on request
    code, out, err = invoke_cli([*args, "--per-question"])  # resumed: nothing recomputed
    assert code == 0, err[-2000:]
    body = out[out.index("per question (3)"):]
    for rec in records:
        (row,) = [ln for ln in body.splitlines() if f" {rec['uid']} " in ln]
        cells = [c.strip() for c in row.strip("│| \n").split("│")]
        assert cells == [rec["uid"], f"{rec['metrics'][HITS_AT_10]:.3f}", f"{rec['metrics'][MAP_AT_10]:.3f}",
                         str(len(rec["retrieved_context"]))]
    code, out, err = invoke_cli([*args, "--per-question", "--json"])
    doc = json.loads(out)
    assert code == 0 and doc["predictions"] == str(predictions)
    assert [r["uid"] for r in doc["per_question"]] == [r["uid"] for r in records]
    assert doc["per_question"][0]["triples"] == len(records[0]["retrieved_context"])


def _cli(root: Path, *args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("HUBLAB_ROOT", "MLFLOW_TRACKING_URI",
                                                            "MLFLOW_LOGGING_LEVEL")}
    env["PYTHONPATH"] = os.pathsep.join([str(SRC), env.get("PYTHONPATH", "")])
    return subprocess.run([sys.executable, "-m", "hublab.cli", *args], cwd=root, env=env, capture_output=True,
                          text=True, timeout=600)


@pytest.mark.slow  # hublab processes
def test_cli_output_is_quiet_by_default_and_verbose_with_v(small_project):
    """A first run creates the MLflow store: MLflow's INFO lines ("Creating initial MLflow database tables...")
    are not the user's business unless asked for with -v."""
    args = ["run", "pipelines/bm25.yaml", "--graph", "gv3_orkg", "--dataset", "gv3_orkg", "--no-carbon",
            "--no-trace", "--limit", "2"]
    res = _cli(small_project, *[a for a in args if a != "--no-carbon"])  # CodeCarbon measuring, and silent
    assert res.returncode == 0, res.stderr[-3000:]
    assert " INFO " not in res.stderr and "Warning" not in res.stderr, res.stderr
    assert "codecarbon" not in res.stderr.lower(), res.stderr
    assert "per-question results: " in res.stdout
    shutil.rmtree(small_project / "mlruns")  # a fresh store again
    res = _cli(small_project, "-v", *args)
    assert res.returncode == 0, res.stderr[-3000:]
    assert "INFO mlflow.store.db.utils: Creating initial MLflow database tables" in res.stderr


@pytest.mark.slow  # an MLflow evaluation in a Python process
def test_the_example_script_is_quiet_by_default(tmp_path, shared):
    env = {k: v for k, v in os.environ.items() if k not in ("HUBLAB_ROOT", "MLFLOW_TRACKING_URI",
                                                            "MLFLOW_LOGGING_LEVEL")}
    env["PYTHONPATH"] = os.pathsep.join([str(SRC), env.get("PYTHONPATH", "")])
    res = subprocess.run([sys.executable, str(REPO / "examples/evaluate_with_mlflow.py"), "--dataset",
                          str(shared / "data/kgqa/flat_distributed.csv"), "--graph",
                          str(shared / "data/orkg/gv3_flat_distributed.json"), "--limit", "1", "--store-dir",
                          str(tmp_path / "store")], cwd=tmp_path, env=env, capture_output=True, text=True,
                         timeout=600)
    assert res.returncode == 0, res.stderr[-3000:]
    assert " INFO " not in res.stderr, res.stderr
    assert "hit_at_10_triples/mean" in res.stdout


@pytest.mark.slow  # a study in a hublab process
def test_tune_prints_no_info_lines_or_plot_warnings(small_project):
    """Two trials (the importance and parallel-coordinate plots are drawn from two on) into a fresh MLflow store:
    the study's summary only, no MLflow INFO lines, no UserWarning from drawing the plots."""
    res = _cli(small_project, "tune", "pipelines/bm25.yaml", "--study", "quiet", "--mode", "tpe", "--n-trials", "2",
               "--dataset", "gv3_orkg", "--graph", "gv3_orkg", "--limit", "2", "--no-carbon", "--no-progress")
    assert res.returncode == 0, res.stderr[-3000:]
    assert " INFO " not in res.stderr and "Warning" not in res.stderr, res.stderr
    assert (small_project / "outputs/studies/quiet/param_importances.png").is_file() or \
        (small_project / "outputs/studies/quiet/param_importances.png.skipped.txt").is_file()
    assert "Best trial" in res.stdout
