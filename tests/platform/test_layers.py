"""The package layers (docs/architecture.md): every import in ``src/hublab`` — module-level and inside functions —
points to the importer's own layer or a lower one, and the sub-package import graph has no cycle. Function-level
imports count: they defer loading, not the dependency. A package is every folder of ``src/hublab``, with or without
``__init__.py`` (a namespace folder is imported all the same), and every top-level module is its own package."""

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


def _packages(src: Path) -> set[str]:
    """Every folder of ``src`` (``__init__.py`` or not) and every top-level module: what needs a layer."""
    return {p.name.removesuffix(".py") for p in src.iterdir()
            if (p.is_dir() and p.name != "__pycache__") or (p.suffix == ".py" and p.name != "__init__.py")}


def _unlayered(src: Path) -> list[str]:
    return sorted(_packages(src) - set(RANK))


def _edges(src: Path) -> dict[tuple[str, str], list[str]]:
    """(importer package, imported package) → the import sites, ``file:line -> module``."""
    edges: dict[tuple[str, str], list[str]] = {}
    for f in sorted(src.rglob("*.py")):
        rel = f.relative_to(src)
        if rel.parts == ("__init__.py",):
            continue
        me = rel.parts[0].removesuffix(".py")
        for line, module in _imports(f):
            other = _package(module)
            if other != me:
                edges.setdefault((me, other), []).append(f"{rel}:{line} -> {module}")
    return edges


def _upward(src: Path) -> list[str]:
    """The import sites whose imported package sits in a higher layer than the importer's."""
    return [site for (me, other), sites in _edges(src).items() if RANK.get(other, -1) > RANK.get(me, -1)
            for site in sites]


def test_every_package_has_a_layer():
    assert _unlayered(SRC) == [], "place the new package in LAYERS (and docs/architecture.md)"


def test_no_package_imports_a_higher_layer():
    assert _upward(SRC) == []


def test_a_namespace_folder_and_a_top_level_module_are_checked(tmp_path: Path):
    """A folder without ``__init__.py`` is a package like any other: it needs a layer, and an import of a higher
    layer from inside it is reported; so is a top-level module."""
    src = tmp_path / "hublab"
    (src / "graph" / "deep").mkdir(parents=True)  # no __init__.py anywhere below
    (src / "graph" / "deep" / "walk.py").write_text("import os\n\n\ndef f():\n    from hublab.cli.app import app\n")
    (src / "errors.py").write_text("from hublab.tuning.study import run_study\n")
    (src / "newthing").mkdir()
    (src / "newthing" / "x.py").write_text("")
    (src / "newmodule.py").write_text("")
    assert _upward(src) == ["errors.py:1 -> hublab.tuning.study", "graph/deep/walk.py:5 -> hublab.cli.app"]
    assert _unlayered(src) == ["newmodule", "newthing"]


def test_the_package_import_graph_has_no_cycle():
    graph: dict[str, set[str]] = {}
    for me, other in _edges(SRC):
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


def _offer_problems(init: Path) -> list[str]:
    """What is wrong with a package's ``__all__``: missing, or a literal one naming what is neither bound in the
    ``__init__.py`` (defined, imported, or imported for type checkers and loaded on first use) nor a submodule.
    ruff does not check ``__all__`` in an ``__init__.py``."""
    tree = ast.parse(init.read_text(), filename=str(init))
    value = next((n.value for n in tree.body if isinstance(n, ast.Assign)
                  and any(isinstance(t, ast.Name) and t.id == "__all__" for t in n.targets)), None)
    if value is None:
        return ["no __all__"]
    if not isinstance(value, ast.List | ast.Tuple):
        return []  # computed (retrievers.methods: read from the folder)
    bound = {a.asname or a.name.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.Import | ast.ImportFrom)
             for a in n.names}
    bound |= {n.name for n in tree.body if isinstance(n, ast.FunctionDef | ast.ClassDef)}
    bound |= {t.id for n in tree.body if isinstance(n, ast.Assign) for t in n.targets if isinstance(t, ast.Name)}
    bound |= {p.name.removesuffix(".py") for p in init.parent.iterdir()}
    return [f"{name} is not defined" for name in ast.literal_eval(value) if name not in bound]


def test_every_package_says_what_it_offers(tmp_path: Path):
    problems = {str(f.relative_to(SRC)): found for f in sorted(SRC.rglob("__init__.py"))
                if (found := _offer_problems(f))}
    assert problems == {}
    (tmp_path / "sub.py").write_text("")
    (tmp_path / "__init__.py").write_text('"""A package."""\n\nfrom x import y\n\n__all__ = ["sub", "y", "typo"]\n')
    assert _offer_problems(tmp_path / "__init__.py") == ["typo is not defined"]


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
