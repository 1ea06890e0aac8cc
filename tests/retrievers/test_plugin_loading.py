"""Installed plugins are loaded only when named, never replace a built-in, and their code is part of a run's identity.

Each plugin here is a throwaway distribution (a ``*.dist-info`` with ``entry_points.txt`` next to its module) in a
folder put on ``sys.path`` (in-process tests, with the registry's plugin state reset) or on ``PYTHONPATH`` (``hublab``
processes). Every hostile plugin touches a marker file first thing at import, so "never ran" is checked, not assumed.
"""

from __future__ import annotations

import importlib
import json
import os
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import yaml

from hublab.errors import InputError
from hublab.retrievers import registry

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "your-graph"
MARK = "import os, pathlib\npathlib.Path(os.environ['HUBLAB_TEST_MARKS'], __name__).touch()\n"
TRIVIAL = ("from hublab.retrievers.base import RetrievalResult, Retriever\n\n\n"
           "class Probe(Retriever):\n"
           "    def _retrieve(self, question, topic_entity_id, topic_entity_value):\n"
           "        return RetrievalResult()\n")
#: name → (module source, entry point): each misbehaves at import in its own way
HOSTILE = {
    "raises": (MARK + "raise RuntimeError('broken at import')\n", "raises = hublab_raises:Probe"),
    "stalls": (MARK + "import time\ntime.sleep(60)\n", "stalls = hublab_stalls:Probe"),
    "takes_bm25": (MARK + TRIVIAL + "from hublab.retrievers.registry import register\n\n"
                   "try:  # a refusal it catches still refuses it\n    register('bm25')(Probe)\nexcept Exception:\n"
                   "    pass\n", "takes_bm25 = hublab_takes_bm25:Probe"),
    "named_bm25": (MARK + TRIVIAL, "bm25 = hublab_named_bm25:Probe"),
    "keyword_only": (MARK + TRIVIAL + "\n\nclass KeywordOnly(Probe):\n"
                     "    def __init__(self, resources, *, n_results: int = 5, **params):\n"
                     "        super().__init__(resources, **params)\n",
                     "keyword_only = hublab_keyword_only:KeywordOnly"),
}


def make_dist(site: Path, name: str, source: str, entry_point: str, version: str = "1.0") -> None:
    """A distribution ``hublab-<name>`` with module ``hublab_<name>`` and one ``hublab.retrievers`` entry point."""
    module = f"hublab_{name}"
    site.mkdir(parents=True, exist_ok=True)
    (site / f"{module}.py").write_text(source)
    for old in site.glob(f"{module}-*.dist-info"):
        shutil.rmtree(old)
    info = site / f"{module}-{version}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: hublab-{name.replace('_', '-')}\n"
                                   f"Version: {version}\n")
    (info / "entry_points.txt").write_text(f"[{registry.ENTRY_POINT_GROUP}]\n{entry_point}\n")
    importlib.invalidate_caches()  # the import system's cached listing of the folder predates these files


@pytest.fixture()
def fresh_registry(monkeypatch, tmp_path: Path):
    """The registry as a new process has it, with ``site`` on sys.path; modules it imported are forgotten after."""
    site = tmp_path / "site"
    site.mkdir()
    marks = tmp_path / "marks"
    marks.mkdir()
    monkeypatch.setenv("HUBLAB_TEST_MARKS", str(marks))
    monkeypatch.syspath_prepend(str(site))
    for attr, value in (("_ENTRY_POINTS", {}), ("_BROKEN", {}), ("_IGNORED", []), ("_ORIGIN", {}),
                        ("_LOADING", {}), ("_REFUSALS", []), ("_SCANNED", []), ("_PLUGINS", {})):
        monkeypatch.setattr(registry, attr, value, raising=False)  # absent attributes: an older registry
    before = set(sys.modules)
    yield site, marks
    for mod in set(sys.modules) - before:
        if mod.startswith("hublab_"):
            del sys.modules[mod]


# ---- loaded only when named --------------------------------------------------------------------------------------

@pytest.mark.parametrize("hostile", ["raises", "takes_bm25", "named_bm25", "keyword_only"])
def test_a_builtin_method_never_imports_an_installed_plugin(fresh_registry, hostile: str):
    """Everything a ``bm25`` run asks the registry (its class, its parameters, the method list, the thesis names)
    reads the plugins' metadata only: no plugin code runs."""
    site, marks = fresh_registry
    make_dist(site, hostile, *HOSTILE[hostile])
    from hublab.retrievers.methods.bm25 import BM25Retriever

    assert registry.get_retriever_class("bm25") is BM25Retriever
    registry.validate_retriever("bm25", {"n_results": 5})
    assert "bm25" in registry.available() and "HubLink" in registry.thesis_names().values()
    assert list(marks.iterdir()) == [] and f"hublab_{hostile}" not in sys.modules


def test_hublab_list_names_each_unusable_plugin_in_one_line(fresh_registry):
    """Listing imports the plugins: each that fails to import, stalls, or is refused is one line naming it."""
    site, marks = fresh_registry
    for name, (source, ep) in HOSTILE.items():
        make_dist(site, name, source.replace("time.sleep(60)", "time.sleep(2)"), ep)
    start = time.monotonic()
    lines = registry.plugin_problems(deadline_s=0.5)
    assert time.monotonic() - start < 2
    for worker in threading.enumerate():  # the stalled import ends before the registry's state is restored
        if worker.name.startswith("hublab-plugin-"):
            worker.join(5)
    assert all("\n" not in line for line in lines) and len(lines) == 5, "\n".join(lines)
    text = "\n".join(lines)
    assert "plugin 'raises' (distribution hublab-raises 1.0" in text and "RuntimeError: broken at import" in text
    assert "plugin 'stalls' (distribution hublab-stalls 1.0" in text and "did not finish importing in 0.5 s" in text
    assert "plugin 'bm25' (distribution hublab-named-bm25 1.0" in text and "built-in" in text
    assert "keyword-only parameters ['n_results']" in text
    assert "hublab-takes-bm25 1.0" in text and "registers the method 'bm25', refused" in text
    assert registry.available(usable=True) == sorted(registry.builtin_names())


# ---- a plugin never replaces a built-in ----------------------------------------------------------------------------

def test_a_plugin_registering_a_builtin_name_is_refused_and_the_builtin_stays(fresh_registry):
    site, _marks = fresh_registry
    make_dist(site, "takes_bm25", *HOSTILE["takes_bm25"])
    with pytest.raises(InputError) as refused:
        registry.get_retriever_class("takes_bm25")
    assert ("plugin 'takes_bm25' (distribution hublab-takes-bm25 1.0, entry point hublab_takes_bm25:Probe) "
            "registers the method 'bm25', refused: 'bm25' is the built-in method's name") in str(refused.value)
    from hublab.retrievers.methods.bm25 import BM25Retriever

    assert registry.get_retriever_class("bm25") is BM25Retriever
    with pytest.raises(InputError, match="registers the method 'bm25'"):  # asked again: the same refusal, no re-import
        registry.get_retriever_class("takes_bm25")
    with pytest.raises(InputError, match="built-in method's name"):  # nor by a direct call
        registry.register("bm25")(BM25Retriever)


def test_a_plugin_cannot_take_another_plugins_name(fresh_registry):
    site, _marks = fresh_registry
    make_dist(site, "first", TRIVIAL, "first = hublab_first:Probe")
    make_dist(site, "second", TRIVIAL + "from hublab.retrievers.registry import register\nregister('first')(Probe)\n",
              "second = hublab_second:Probe")
    with pytest.raises(InputError, match=r"hublab-second 1\.0.*registers the method 'first', refused: 'first' is "
                                         r"the method of plugin 'first' \(distribution hublab-first 1\.0"):
        registry.get_retriever_class("second")
    assert registry.get_retriever_class("first").__module__ == "hublab_first"


def test_a_name_two_installed_plugins_declare_is_refused_when_used(fresh_registry):
    site, marks = fresh_registry
    make_dist(site, "one", MARK + TRIVIAL, "dup = hublab_one:Probe")
    make_dist(site, "two", MARK + TRIVIAL, "dup = hublab_two:Probe")
    with pytest.raises(InputError, match=r"'dup' is declared by two installed plugins, plugin 'dup' \(distribution "
                                         r"hublab-one 1\.0.*and plugin 'dup' \(distribution hublab-two 1\.0"):
        registry.get_retriever_class("dup")
    assert list(marks.iterdir()) == []  # neither was imported


def test_a_plugin_cannot_rename_a_builtin_class_nor_take_a_name_that_is_no_name(fresh_registry):
    """An entry point (or a register call) naming a built-in's class would rename that class for every run of it;
    a name with a path separator would name folders."""
    site, _marks = fresh_registry
    make_dist(site, "alias", "", "alias = hublab.retrievers.methods.bm25:BM25Retriever")
    with pytest.raises(InputError, match="hublab-alias 1.0.*built-in class hublab.retrievers.methods.bm25"):
        registry.get_retriever_class("alias")
    from hublab.retrievers.methods.bm25 import BM25Retriever

    with pytest.raises(InputError, match="built-in method's class"):
        registry.register("alias2")(BM25Retriever)
    assert registry.get_retriever_class("bm25") is BM25Retriever and BM25Retriever.name == "bm25"
    make_dist(site, "pathy", TRIVIAL + "from hublab.retrievers.registry import register\nregister('../up')(Probe)\n",
              "pathy = hublab_pathy:Probe")
    registry._SCANNED.clear()  # as a new process: the entry points read again
    with pytest.raises(InputError, match=r"registers the method '\.\./up', refused: a method name is letters"):
        registry.get_retriever_class("pathy")
    assert "../up" not in registry.available()


# ---- a plugin's code and version are part of the run identity --------------------------------------------------

def _identity(tmp_path: Path, retriever_type: str):
    from hublab.experiment.identity import run_identity

    data = tmp_path / "questions.csv"
    data.write_text("q\n")
    return run_identity("cfg", "graph-digest", data, graph="g", dataset="d", limit=None, n_questions=1, n_total=1,
                        experiment="e", retriever_type=retriever_type)


def test_a_plugins_code_and_version_change_its_run_identity(fresh_registry, tmp_path: Path):
    site, _marks = fresh_registry
    make_dist(site, "probe", TRIVIAL, "probe = hublab_probe:Probe")
    first = _identity(tmp_path, "probe")
    assert first.plugin == "hublab-probe==1.0" and first.tags()["hublab.plugin"] == "hublab-probe==1.0"
    assert _identity(tmp_path, "probe").run_id == first.run_id  # the same code: resumed
    (site / "hublab_probe.py").write_text(TRIVIAL + "# changed\n")
    edited = _identity(tmp_path, "probe")
    assert edited.plugin_sha256 != first.plugin_sha256 and edited.run_id != first.run_id

    make_dist(site, "probe", TRIVIAL, "probe = hublab_probe:Probe", version="2.0")  # a new process sees version 2
    for attr, value in (("_ENTRY_POINTS", {}), ("_ORIGIN", {}), ("_SCANNED", []), ("_PLUGINS", {})):
        setattr(registry, attr, value)
    second = _identity(tmp_path, "probe")
    assert second.plugin == "hublab-probe==2.0" and second.run_id not in {first.run_id, edited.run_id}


def test_a_module_the_plugins_distribution_installs_beside_it_is_part_of_its_code(fresh_registry, tmp_path: Path):
    site, _marks = fresh_registry
    make_dist(site, "probe", "import hublab_probe_helpers  # noqa: F401\n" + TRIVIAL, "probe = hublab_probe:Probe")
    (site / "hublab_probe_helpers.py").write_text("WEIGHT = 1\n")
    info = next(site.glob("hublab_probe-*.dist-info"))
    (info / "RECORD").write_text(f"hublab_probe.py,,\nhublab_probe_helpers.py,,\n{info.name}/METADATA,,\n")
    first = _identity(tmp_path, "probe")
    (site / "hublab_probe_helpers.py").write_text("WEIGHT = 2\n")
    assert _identity(tmp_path, "probe").run_id != first.run_id


def test_a_builtin_runs_identity_is_the_same_with_or_without_plugins(fresh_registry, tmp_path: Path):
    """A built-in run hashes exactly the fields it always did (committed reports record these identities), and
    installing plugins, hostile ones included, changes nothing of it."""
    import hashlib
    from dataclasses import asdict

    site, marks = fresh_registry
    before = _identity(tmp_path, "bm25")
    old_fields = {k: v for k, v in asdict(before).items() if k not in ("plugin", "plugin_sha256")}
    assert before.run_id == hashlib.sha256(json.dumps(old_fields, sort_keys=True).encode()).hexdigest()[:16]
    assert "plugin" not in before.as_dict() and "hublab.plugin" not in before.tags()
    for name in ("raises", "takes_bm25", "named_bm25"):
        make_dist(site, name, *HOSTILE[name])
    registry._SCANNED.clear()
    assert _identity(tmp_path, "bm25").run_id == before.run_id and list(marks.iterdir()) == []


# ---- through the command line ------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> dict:
    """Each hostile plugin and a working one (``probe``, the example plugin's method under a name of its own)
    installed in a folder of its own, a project with ``pipelines/bm25.yaml``, and each plugin's pipeline."""
    base = tmp_path_factory.mktemp("plugins")
    marks = base / "marks"
    marks.mkdir()
    for name, (source, ep) in HOSTILE.items():
        make_dist(base / "site" / name, name, source, ep)
    example = (ROOT / "examples/plugin/src/hublab_label_overlap/__init__.py").read_text()
    make_dist(base / "site" / "probe", "probe", example, "probe = hublab_probe:LabelOverlapRetriever")
    root = base / "project"
    (root / "pipelines").mkdir(parents=True)
    (root / "params.yaml").write_text((ROOT / "params.yaml").read_text())
    (root / "pipelines" / "bm25.yaml").write_text((ROOT / "pipelines" / "bm25.yaml").read_text())
    work = base / "mine"
    shutil.copytree(EXAMPLE, work)
    for name in ("takes_bm25", "keyword_only", "probe"):
        (work / f"{name}.yaml").write_text(yaml.safe_dump({
            "name": name, "retriever": {"type": name}, "llm": {"backend": "none"}, "generation": {"enabled": False},
            "evaluation": {"k": 10, "generation_metrics": []}}))
    env = {**{k: v for k, v in os.environ.items() if k != "MLFLOW_TRACKING_URI"}, "HUBLAB_ROOT": str(root),
           "HF_HUB_OFFLINE": "1", "MLFLOW_DISABLE_TELEMETRY": "true", "HUBLAB_TEST_MARKS": str(marks)}
    return {"site": base / "site", "marks": marks, "work": work, "env": env}


def _hublab(inst: dict, plugins: list[str], *args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    """``hublab ARGS`` with the named plugins installed."""
    path = os.pathsep.join([*(str(inst["site"] / name) for name in plugins), str(ROOT / "src")])
    return subprocess.run([sys.executable, "-m", "hublab.cli", *args], cwd=inst["work"],
                          env={**inst["env"], "PYTHONPATH": path}, capture_output=True, text=True, timeout=timeout)


@pytest.mark.slow
def test_hublab_run_bm25_runs_no_plugin_code(installed):
    """A plugin that raises, stalls 60 s, takes bm25's name or has keyword-only parameters is installed: ``hublab
    run bm25`` runs the built-in as if none were, and none of their import code runs (each marks its import first,
    the stalling one included: no mark, no import, so no waiting on it)."""
    p = _hublab(installed, list(HOSTILE), "run", "bm25", "--graph", "graph.ttl", "--dataset", "questions.csv",
                "--no-carbon", "--json")
    assert p.returncode == 0, p.stderr[-2000:]
    assert json.loads(p.stdout)["n_questions"] == 5
    assert sorted(m.name for m in installed["marks"].iterdir()) == []


@pytest.mark.slow
@pytest.mark.parametrize(("pipeline", "says"), [
    ("takes_bm25", "hublab-takes-bm25 1.0, entry point hublab_takes_bm25:Probe) registers the method 'bm25', refused"),
    ("keyword_only", "keyword-only parameters ['n_results']"),
])
def test_running_a_refused_plugin_is_one_located_line(installed, pipeline: str, says: str):
    p = _hublab(installed, [pipeline], "run", f"{pipeline}.yaml", "--graph", "graph.ttl", "--dataset", "questions.csv",
                "--no-carbon")
    assert p.returncode != 0 and "Traceback" not in p.stderr, p.stderr[-2000:]
    lines = [line for line in p.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and says in lines[0] and f"{pipeline}.yaml" in lines[0], p.stderr


@pytest.mark.slow
def test_a_changed_plugin_is_not_resumed(installed):
    """The same plugin pipeline twice resumes; after its code changed the run is a new one (another checkpoint)."""
    def predictions() -> str:
        p = _hublab(installed, ["probe"], "run", "probe.yaml", "--graph", "graph.ttl", "--dataset", "questions.csv",
                    "--no-carbon", "--json")
        assert p.returncode == 0, p.stderr[-2000:]
        return json.loads(p.stdout)["predictions"]

    first = predictions()
    module = installed["site"] / "probe" / "hublab_probe.py"
    module.write_text(module.read_text() + "\n# version 1.1: scores changed\n")
    assert predictions() != first


# ---- a plugin runs by its registered name ----------------------------------------------------------------------------

def test_a_plugin_runs_by_its_name_with_its_own_pipeline_or_its_declared_defaults(fresh_registry, tmp_path: Path):
    """``hublab run NAME`` for an installed method: its class's ``default_pipeline`` when it ships one, else a
    pipeline of the method alone (declared default parameters) under the project's outputs/pipelines/."""
    from hublab.config import Settings, settings
    from hublab.method_pipelines import resolve_pipeline
    from hublab.pipeline.config import load_pipeline

    site, _marks = fresh_registry
    make_dist(site, "bare", TRIVIAL, "bare = hublab_bare:Probe")
    shipped = site / "own.yaml"
    shipped.write_text("name: own\nretriever: {type: owned, params: {}}\n")
    make_dist(site, "owned", TRIVIAL + f"Probe.default_pipeline = {str(shipped)!r}\n", "owned = hublab_owned:Probe")
    project = Settings(tmp_path / "project", settings(ROOT).params)
    assert resolve_pipeline(project, "owned") == shipped
    generated = resolve_pipeline(project, "bare")
    assert generated == tmp_path / "project" / "outputs" / "pipelines" / "bare.yaml"
    cfg = load_pipeline(generated)
    assert cfg.retriever_type == "bare" and cfg.retriever_params == {}
    assert resolve_pipeline(project, "bare") == generated  # the same file again, unchanged
    assert resolve_pipeline(project, "bm25").name == "bm25.yaml"  # a pipeline name stays a pipeline
    with pytest.raises(InputError, match="pipeline not found: 'nothing'"):
        resolve_pipeline(project, "nothing")
