"""The package layers (docs/architecture.md): every import in ``src/hublab`` — module-level and inside functions —
points to the importer's own layer or a lower one, and the sub-package import graph has no cycle. Function-level
imports count: they defer loading, not the dependency."""

from __future__ import annotations

import ast
from graphlib import CycleError, TopologicalSorter
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[2] / "src" / "hublab"

#: lowest first; a package may import its own layer and the layers below it, never one above
LAYERS: tuple[tuple[str, ...], ...] = (
    ("errors", "config", "env", "redact", "scores", "observability", "model_uri", "progress", "atomic",
     "signals", "yaml_strict", "params_schema", "dburl", "limits"),  # foundation
    ("graph", "datasets"),  # data build: snapshot, graphs, KGQA datasets, STaRK adapter
    ("embedding", "llm", "vectorstore"),  # interfaces and backends
    ("evaluation",),  # metrics, thesis tables
    ("retrievers",),  # methods over the interfaces
    ("pipeline", "method_pipelines"),  # pipeline config, resources, optional pipes; a method named as a pipeline
    ("reports",),  # the one table writer and the one thesis lookup of every report
    ("tracking",),  # MLflow logging, called by the runs
    ("experiment", "training", "preflight", "preflight_values", "mlflow_eval"),  # runs: RunRequest, runner, …
    ("tuning",),  # studies over runs
    ("cli", "api"),  # the command line and the Python API: two doors onto the same layers
    ("testing",),  # the retriever contract, shipped for plugins' tests (hublab.testing)
)
RANK = {package: i for i, layer in enumerate(LAYERS) for package in layer}


def _package(module: str) -> str:
    """``hublab.x.y`` → ``x`` (a top-level module is its own package)."""
    return module.split(".")[1]


def _imports(path: Path) -> list[tuple[int, str]]:
    """(line, imported module) of every ``hublab`` import in the file, at any depth of the syntax tree."""
    out = []
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            out += [(node.lineno, a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            assert node.level == 0, f"{path}:{node.lineno}: relative import (the layer test reads absolute ones)"
            out.append((node.lineno, node.module or ""))
    return [(line, m) for line, m in out if m.startswith("hublab.")]


def _edges() -> dict[tuple[str, str], list[str]]:
    """(importer package, imported package) → the import sites, ``file:line -> module``."""
    edges: dict[tuple[str, str], list[str]] = {}
    for f in sorted(SRC.rglob("*.py")):
        rel = f.relative_to(SRC)
        if rel.parts == ("__init__.py",):
            continue
        me = rel.parts[0].removesuffix(".py")
        for line, module in _imports(f):
            other = _package(module)
            if other != me:
                edges.setdefault((me, other), []).append(f"{rel}:{line} -> {module}")
    return edges


def test_every_package_has_a_layer():
    packages = {p.name.removesuffix(".py") for p in SRC.iterdir()
                if (p.is_dir() and (p / "__init__.py").exists()) or (p.suffix == ".py" and p.name != "__init__.py")}
    assert sorted(packages - set(RANK)) == [], "place the new package in LAYERS (and docs/architecture.md)"


def test_no_package_imports_a_higher_layer():
    upward = [site for (me, other), sites in _edges().items() if RANK.get(other, -1) > RANK.get(me, -1)
              for site in sites]
    assert upward == []


def test_the_package_import_graph_has_no_cycle():
    graph: dict[str, set[str]] = {}
    for me, other in _edges():
        graph.setdefault(me, set()).add(other)
    try:
        TopologicalSorter(graph).prepare()
    except CycleError as exc:
        pytest.fail(f"import cycle between packages: {' imports '.join(reversed(exc.args[1]))}")


def test_the_layer_walk_sees_function_level_imports(tmp_path: Path):
    """The walk is what makes the two tests above able to fail on a deferred import."""
    f = tmp_path / "m.py"
    f.write_text("import os\n\n\ndef f():\n    from hublab.cli.app import app\n    return app\n")
    assert _imports(f) == [(5, "hublab.cli.app")]


def test_cli_modules_stay_thin():
    """The CLI parses, calls one library function and prints (docs/architecture.md): a module over 150 lines is
    doing library work, or holds several commands that belong in their own modules."""
    long = {p.name: n for p in (SRC / "cli").glob("*.py") if (n := len(p.read_text().splitlines())) > 150}
    assert long == {}


#: The only places that import MLflow (issue #32): the tracking layer (the run recorder, the study's and the trained
#: embedder's runs, the comparison runs), the MLflow GenAI evaluation, and the foundation's ``models:/`` resolver,
#: which sits below ``embedding`` so that loading a registered embedder never imports the tracking layer.
MLFLOW_IMPORTERS = ("tracking/", "mlflow_eval/", "model_uri.py")


def _imports_mlflow(path: Path) -> bool:
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import) and any(a.name.split(".")[0] == "mlflow" for a in node.names):
            return True
        if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "mlflow":
            return True
    return False


def test_only_the_tracking_layer_imports_mlflow():
    found = sorted(str(f.relative_to(SRC)) for f in SRC.rglob("*.py") if _imports_mlflow(f))
    assert found, "the walk finds the tracking layer's imports"
    assert [f for f in found if not f.startswith(MLFLOW_IMPORTERS)] == []
