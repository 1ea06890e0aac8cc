"""A retriever plugin in a package of its own (issue #43): ``examples/plugin`` installed (pip, into a folder of its
own) adds the method ``label_overlap`` through the ``hublab.retrievers`` entry-point group, with no edit to HubLab:
it is listed, runs, tunes, enters the comparison, and passes the retriever contract HubLab ships.

Slow tier: a pip install and six ``hublab`` processes (~40 s)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
PLUGIN = ROOT / "examples" / "plugin"
EXAMPLE = ROOT / "examples" / "your-graph"
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> dict:
    """The plugin pip-installed into its own folder (a real install: package and entry-point metadata), a project
    of its own, and the environment that sees both."""
    base = tmp_path_factory.mktemp("plugin")
    target = base / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation", "--target",
                    str(target), str(PLUGIN)], check=True, capture_output=True, timeout=300)
    root = base / "project"
    (root / "pipelines").mkdir(parents=True)
    (root / "params.yaml").write_text(yaml.safe_dump(yaml.safe_load((ROOT / "params.yaml").read_text())))
    (root / "pipelines" / "bm25.yaml").write_text((ROOT / "pipelines" / "bm25.yaml").read_text())
    work = base / "mine"
    shutil.copytree(EXAMPLE, work)
    env = {**{k: v for k, v in os.environ.items() if k != "MLFLOW_TRACKING_URI"}, "HUBLAB_ROOT": str(root),
           "PYTHONPATH": f"{target}{os.pathsep}{ROOT / 'src'}", "HF_HUB_OFFLINE": "1",
           "MLFLOW_DISABLE_TELEMETRY": "true"}
    return {"target": target, "root": root, "work": work, "env": env,
            "yaml": target / "hublab_label_overlap" / "label_overlap.yaml"}


def _hublab(inst: dict, *args: str) -> str:
    p = subprocess.run([sys.executable, "-m", "hublab.cli", *args], cwd=inst["work"], env=inst["env"],
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, f"hublab {' '.join(args)}: {p.stderr[-3000:]}"
    return p.stdout


def test_listed_and_run(installed):
    assert "label_overlap" in json.loads(_hublab(installed, "list", "--json"))["retrievers"]
    out = json.loads(_hublab(installed, "run", str(installed["yaml"]), "--graph", "graph.ttl", "--dataset",
                             "questions.csv", "--no-carbon", "--json"))
    assert out["n_questions"] == 5 and out["metrics"]["hit_at_10_triples"] > 0 and out["metrics"]["n_errors"] == 0


def test_tuned_and_compared(installed):
    out = _hublab(installed, "tune", str(installed["yaml"]), "--study", "plugin", "--mode", "tpe", "--n-trials", "3",
                  "--graph", "graph.ttl", "--dataset", "questions.csv", "--no-carbon", "--no-progress")
    assert "Best trial" in out and "retriever.params.min_overlap" in out
    rows = json.loads(_hublab(installed, "report", "compare", "--graph", "graph.ttl", "--dataset", "questions.csv",
                              "--pipelines", f"{installed['yaml']},bm25", "--no-carbon", "--json"))["rows"]
    assert {r.get("method") or r.get("retriever") for r in rows} >= {"label_overlap", "bm25"}, rows


def test_in_the_default_comparison_and_the_contract_passes(installed, tmp_path):
    code = ("from pathlib import Path; from hublab.retrievers.registry import default_pipelines; "
            f"print([p.name for p in default_pipelines(Path({str(ROOT)!r}))])")
    p = subprocess.run([sys.executable, "-c", code], env=installed["env"], capture_output=True, text=True, check=True)
    assert "'label_overlap.yaml'" in p.stdout and "'hublink_local.yaml'" in p.stdout
    tests = tmp_path / "plugin_tests"
    shutil.copytree(PLUGIN / "tests", tests)
    run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:xdist",
                          "--rootdir", str(tests), str(tests)], env=installed["env"], cwd=tests, capture_output=True,
                         text=True, timeout=300)
    assert run.returncode == 0 and " passed" in run.stdout, run.stdout[-3000:]


def test_the_example_plugin_uses_only_public_names():
    """A plugin is written against what HubLab declares public (a package's ``__all__``), never its internals: the
    example is what plugin authors copy."""
    import ast
    import importlib

    root = Path(__file__).resolve().parents[2] / "examples" / "plugin"
    for f in sorted((root / "src").rglob("*.py")) + sorted((root / "tests").rglob("*.py")):
        for node in ast.walk(ast.parse(f.read_text(), filename=str(f))):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("hublab"):
                offered = getattr(importlib.import_module(node.module), "__all__", [])
                for alias in node.names:
                    assert alias.name in offered, f"{f.name}:{node.lineno}: {node.module}.{alias.name} is not public"
