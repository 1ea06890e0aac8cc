"""Shared fixtures: paths to the real reference data in ../shared and offline settings, the shared MiniLM
embedder, and the test tiers.

Test tiers (``bash scripts/test.sh --fast`` deselects ``slow``; the full suite, what CI runs, keeps every test):
a test is ``slow`` (full tier only) when it is marked ``@pytest.mark.slow`` or ``@pytest.mark.llama``, its module
sets ``pytestmark = pytest.mark.slow``, or it uses, directly or through another fixture, one of ``SLOW_FIXTURES``
(servers, subprocess-built projects, the MiniLM model). So a new test that needs MiniLM asks for the session
``minilm`` fixture (or ``hashing`` where embedding quality does not matter, staying in the fast tier); one that
starts processes or servers marks itself ``slow``.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

#: One OpenMP thread per process, for the workers and every process they start (set before anything imports torch;
#: children inherit it). The suite runs 3 workers and their subprocesses on CI's 2 cores, and torch's default of one
#: thread per core then spins on busy cores: measured here, three processes embedding 400 texts each with MiniLM took
#: 20-39 s with 2 threads each, 6.4 s with 1. Results do not depend on it (canonical batches, float64:
#: tests/experiment/test_determinism.py and tests/portability/ set their own thread counts). Overridable.
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("MKL_NUM_THREADS", "1")

import pytest  # noqa: E402 - after the thread setting above

from hublab.env import apply_offline_defaults
from support.hublink_fixtures import hublink_gv3_small  # noqa: F401 - the indexed 10-paper GV3 subgraph
from support.llm_servers import fault_server, llama_server  # noqa: F401 - shared fixtures (one llama.cpp server a session)
from support.milvus_servers import milvus_lite_uri, milvus_standalone, milvus_token  # noqa: F401 - one of each a session
from support.mlflow_servers import mlflow_project, mlflow_server  # noqa: F401 - one mlflow server a session
from support.oxigraph_servers import oxigraph  # noqa: F401 - Oxigraph SPARQL servers, one per RDF file a session
from support.real_parts import CI, missing, need_module

apply_offline_defaults()

ROOT = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("HUBLAB_SHARED", ROOT.parent / "shared"))


# fixtures that start a server or subprocesses, or load MiniLM: every test using one is full tier only
SLOW_FIXTURES = frozenset({
    "minilm", "hublink_gv3_small",  # the MiniLM model (and an index built with it)
    "llama_server", "mlflow_server", "mlflow_project", "postgres_url",  # server processes
    "milvus_standalone", "milvus_token", "milvus_lite_uri", "oxigraph",
    "base_project", "fresh_project", "indexed_project", "reference_run",  # tests/reliability: `hublab` subprocesses
})


# session servers whose tests run on one pytest-xdist worker (``--dist loadgroup``, scripts/test.sh): one server a
# run instead of one per worker, and its tests never compete with each other for it
SERVER_GROUPS = {
    "llama_server": "llama", "milvus_standalone": "milvus", "milvus_token": "milvus",
    "mlflow_server": "mlflow", "mlflow_project": "mlflow", "postgres_url": "postgres", "oxigraph": "oxigraph",
}


def _joined_server_groups(items) -> dict[str, str]:
    """server group -> the scheduling group it runs in: a test that needs two servers (Milvus and PostgreSQL) joins
    their groups, so that every server still starts once a run (a group of its own started a second Milvus
    standalone, which then idled on its worker until the run ended)."""
    parent = {g: g for g in SERVER_GROUPS.values()}

    def find(g: str) -> str:
        while parent[g] != g:
            g = parent[g]
        return g

    for item in items:
        used = sorted({SERVER_GROUPS[f] for f in item.fixturenames if f in SERVER_GROUPS})
        for g in used[1:]:
            parent[find(g)] = find(used[0])
    members: dict[str, list[str]] = {}
    for g in parent:
        members.setdefault(find(g), []).append(g)
    return {g: "+".join(sorted(members[find(g)])) for g in parent}


@pytest.hookimpl(tryfirst=True)  # before xdist's own hook, which turns xdist_group marks into scheduling groups
def pytest_collection_modifyitems(config, items):
    joined = _joined_server_groups(items)
    for item in items:
        if item.get_closest_marker("llama") or SLOW_FIXTURES.intersection(item.fixturenames):
            item.add_marker(pytest.mark.slow)
        if item.get_closest_marker("xdist_group"):
            continue
        groups = sorted({joined[SERVER_GROUPS[f]] for f in item.fixturenames if f in SERVER_GROUPS})
        if not groups and _uses_module_fixture(item):  # built once a module, so its tests stay on one worker
            groups = [item.nodeid.split("::")[0]]
        if groups:
            item.add_marker(pytest.mark.xdist_group("+".join(groups)))
    items.sort(key=_long_first)  # stable: the order within a group and among the rest is kept


#: The suite's longest scheduling units (measured: ``--durations`` of a parallel run), started first so that they
#: run beside everything else instead of alone at the end (longest-first keeps the parallel run's tail short).
LONG_FIRST = ("llama", "tests/experiment/test_quality_pinned.py", "milvus", "tests/portability/",
              "tests/tuning/test_tuning_concurrency.py", "tests/retrievers/test_baselines_reasoning.py",
              "tests/platform/test_dvc_remote.py")


def _long_first(item) -> int:
    groups = [m.args[0] for m in item.iter_markers("xdist_group") if m.args]
    for rank, key in enumerate(LONG_FIRST):
        if any(key == g or g.startswith(key) for g in groups) or item.nodeid.startswith(key):
            return rank
    return len(LONG_FIRST)


def _uses_module_fixture(item) -> bool:
    """Whether the test uses a module-scoped fixture, or a session-scoped one that its own module defines: such
    modules embed the same texts in each of their tests' workers (tests/datasets/test_stark.py's SKB, the GV3
    subgraph of tests/retrievers/test_baselines_dense.py: tests starting at once on several workers each embedded
    them; the shared cache helps only once a worker has written them)."""
    info = getattr(item, "_fixtureinfo", None)
    if info is None:
        return False
    module = item.nodeid.split("::")[0]
    return any(defs and (defs[-1].scope == "module" or (defs[-1].scope == "session" and defs[-1].baseid == module))
               for name, defs in info.name2fixturedefs.items() if name in item.fixturenames)


def _cpu_seconds() -> float:
    import resource

    own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


_CPU_AT_START = pytest.StashKey[float]()
_STARTED_AT = pytest.StashKey[float]()


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item):
    item.stash[_CPU_AT_START] = _cpu_seconds()
    item.stash[_STARTED_AT] = time.time()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """Under ``CI=true`` a skipped test that needs llama.cpp is a failure (``real_parts``), however it skipped; the
    teardown report carries the test's CPU seconds."""
    if call.when == "teardown" and _CPU_AT_START in item.stash:
        # each test's CPU seconds (the worker's own and those of the subprocesses it waited for) as the ``cpu_s``
        # property in .cache/junit.xml: beside the wall time it tells a test that works from one that waits (the
        # suite runs more workers than cores, so wall times include waiting for a core)
        item.user_properties.append(("cpu_s", round(_cpu_seconds() - item.stash[_CPU_AT_START], 1)))
        # when and where it ran (seconds since the epoch, the xdist worker): a run's timeline per worker, to see
        # idle cores and a long group left for the end
        item.user_properties.append(("started", round(item.stash[_STARTED_AT], 1)))
        item.user_properties.append(("worker", os.environ.get("PYTEST_XDIST_WORKER", "main")))
    outcome = yield
    rep = outcome.get_result()
    if CI and rep.skipped and item.get_closest_marker("llama") and not hasattr(rep, "wasxfail"):
        rep.outcome = "failed"
        rep.longrepr = f"CI=true: a llama test must not skip: {rep.longrepr}"


#: One embedding cache for the whole test run, shared by every xdist worker, the ``minilm`` fixture and the
#: throwaway projects (``share_embedding_cache``): MiniLM is most of the suite's CPU, and the same GV3 texts were
#: embedded again in each worker and each project. A cached vector is the float32 of the same deterministic forward
#: pass (hublab.embedding.cache), so no test result depends on whether a text was cached.
EMBEDDING_CACHE_ENV = "HUBLAB_TEST_EMBEDDING_CACHE"


def pytest_configure(config):
    if not hasattr(config, "workerinput") and not os.environ.get(EMBEDDING_CACHE_ENV):  # the controller: workers
        import tempfile  # and the subprocesses they start inherit the variable

        os.environ[EMBEDDING_CACHE_ENV] = tempfile.mkdtemp(prefix="hublab-test-embeddings-")
        config._hublab_embedding_cache = os.environ[EMBEDDING_CACHE_ENV]


def shared_embedding_cache() -> Path:
    return Path(os.environ[EMBEDDING_CACHE_ENV])


def share_embedding_cache(root: Path) -> Path:
    """``root/.cache/embeddings`` becomes a link to the run's shared embedding cache (``EMBEDDING_CACHE_ENV``). Copy
    such a project with ``shutil.copytree(..., symlinks=True)``: a dereferenced copy would copy a live database."""
    target = shared_embedding_cache() / "embeddings"
    target.mkdir(parents=True, exist_ok=True)
    link = root / ".cache" / "embeddings"
    link.parent.mkdir(parents=True, exist_ok=True)
    if not link.exists() and not link.is_symlink():
        link.symlink_to(target, target_is_directory=True)
    return root


@pytest.fixture(scope="session")
def minilm():
    """The bundled MiniLM (the project's factory and its sqlite vector cache), built once a worker (the model loads
    on the first text the cache lacks) and shared by
    every test that needs real embeddings: each text is embedded once per test run, whichever module or worker
    asks (the cache is the run's shared one)."""
    from hublab.embedding.factory import build_embedder

    return build_embedder({"model": "all-MiniLM-L6-v2", "device": "cpu", "batch_size": 64},
                          shared_embedding_cache())


@pytest.fixture(scope="session")
def hashing():
    """A model-free embedder (token hashing) for tests where embedding quality does not matter (fast tier)."""
    from hublab.embedding.hashing import HashingEmbedder

    return HashingEmbedder()


@pytest.fixture(autouse=True)
def _no_leaked_tracking_uri(monkeypatch):
    """``mlflow.set_tracking_uri`` exports MLFLOW_TRACKING_URI into os.environ; without this, one test's project
    store would leak into later tests and into the hublab subprocesses they start. Removed after the test too:
    monkeypatch restores only what it changed, and a session fixture set up before the next test's own removal
    (tests/reliability's reference run) would read the leaked store."""
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    yield
    os.environ.pop("MLFLOW_TRACKING_URI", None)


@pytest.fixture(autouse=True)
def _no_leaked_mlflow_experiment(monkeypatch):
    """An in-process run sets MLflow's active experiment (a process global); a later test's resumed run would then be
    refused ("active experiment ID does not match"), depending on which tests ran before it on that worker."""
    for var in ("MLFLOW_EXPERIMENT_ID", "MLFLOW_EXPERIMENT_NAME", "MLFLOW_RUN_ID"):
        monkeypatch.delenv(var, raising=False)
    import sys

    fluent = sys.modules.get("mlflow.tracking.fluent")
    if fluent is not None and hasattr(fluent, "_active_experiment_id"):
        monkeypatch.setattr(fluent, "_active_experiment_id", None)


@pytest.fixture(autouse=True)
def _no_leaked_llm_endpoint(monkeypatch):
    """``--llm-base-url``/``--llm-model`` export HUBLAB_LLM_* into os.environ when the CLI runs in-process (as a
    real CLI process would); without this, a CLI test's llama.cpp endpoint would override later tests' LLMs."""
    for var in ("HUBLAB_LLM_BASE_URL", "HUBLAB_LLM_MODEL", "HUBLAB_LLM_API_KEY_ENV"):
        monkeypatch.delenv(var, raising=False)


@pytest.fixture(scope="session")
def shared() -> Path:
    if not SHARED.exists():
        pytest.fail(f"reference data not found at {SHARED} (set HUBLAB_SHARED)")
    return SHARED


@pytest.fixture(scope="session")
def gv3_export(shared: Path) -> Path:
    return shared / "data" / "orkg" / "gv3_flat_distributed.json"


@pytest.fixture(scope="session")
def gv3_orkg_graph(gv3_export: Path):
    from hublab.graph.rdf import RdfKnowledgeGraph

    return RdfKnowledgeGraph.load(gv3_export, name="gv3_orkg")


_MLFLOW_TEMPLATE: list[Path] = []


def migrated_mlflow_store() -> Path:
    """An empty MLflow sqlite store with its schema migrated, built once a session: creating the schema (alembic,
    dozens of migrations) costs seconds per store, a file copy nothing. Its default experiment's artifact location
    is a project's ``mlruns/artifacts``, which ``mlflow_log.setup`` re-points to the copy's (relocate_artifacts)."""
    if not _MLFLOW_TEMPLATE:
        import tempfile

        from mlflow.store.tracking.sqlalchemy_store import SqlAlchemyStore

        from hublab.tracking.mlflow_log import artifact_root

        base = Path(tempfile.mkdtemp(prefix="hublab-mlflow-template-"))
        db = base / "mlruns" / "mlflow.db"
        db.parent.mkdir(parents=True)
        store = SqlAlchemyStore(f"sqlite:///{db}", artifact_root(base))
        store.engine.dispose()
        _MLFLOW_TEMPLATE.append(db)
    return _MLFLOW_TEMPLATE[0]


def shared_params_project(root: Path, shared: Path, monkeypatch, *, mlflow_store: bool = False) -> Path:
    """A project in ``root`` that has only the repo's params.yaml with its ``../shared`` paths pointing at
    ``shared`` (nothing built), as the current directory and HUBLAB_ROOT; ``mlflow_store``: with a copy of the
    session's migrated, empty MLflow store."""
    import shutil

    import yaml

    from hublab.config import _load_params

    params = yaml.safe_load((ROOT / "params.yaml").read_text())
    for key, val in params["paths"].items():
        if isinstance(val, str) and val.startswith("../shared"):
            params["paths"][key] = str(shared) + val[len("../shared"):]
    root.mkdir(parents=True, exist_ok=True)
    (root / "params.yaml").write_text(yaml.safe_dump(params))
    share_embedding_cache(root)
    if mlflow_store:
        (root / "mlruns").mkdir(exist_ok=True)
        shutil.copyfile(migrated_mlflow_store(), root / "mlruns" / "mlflow.db")
    monkeypatch.setenv("HUBLAB_ROOT", str(root))
    monkeypatch.chdir(root)
    _load_params.cache_clear()
    return root


def invoke_cli(args: list[str], env: dict[str, str] | None = None) -> tuple[int, str, str]:
    """``hublab ARGS`` in-process as the console script would end: (exit code, stdout, stderr), where a HubLabError
    becomes exit code 2 and its ``error:`` lines on stderr (``hublab.cli.report``); any other exception is raised."""
    import io

    from typer.testing import CliRunner

    from hublab.cli import app, report
    from hublab.errors import HubLabError

    res = CliRunner().invoke(app, args, env=env)
    err, code = res.stderr, res.exit_code
    if isinstance(res.exception, HubLabError):
        buf = io.StringIO()
        report(res.exception, buf)
        err, code = err + buf.getvalue(), 2
    elif res.exception is not None and not isinstance(res.exception, SystemExit):
        raise res.exception
    return code, res.stdout, err


def pytest_sessionfinish(session, exitstatus):
    """Remove the session's MLflow store template (``migrated_mlflow_store``): a temp dir per session otherwise;
    the controller also removes the run's shared embedding cache."""
    import shutil

    for db in _MLFLOW_TEMPLATE:
        shutil.rmtree(db.parents[1], ignore_errors=True)
    owned = getattr(session.config, "_hublab_embedding_cache", None)
    if owned:
        shutil.rmtree(owned, ignore_errors=True)


def pipelines_project(root: Path, shared: Path, monkeypatch) -> Path:
    """``shared_params_project`` plus a copy of the shipped pipelines: a project with nothing built, for the checks
    that run before any work (preflight, names, endpoints)."""
    import shutil

    shared_params_project(root, shared, monkeypatch)
    shutil.copytree(ROOT / "pipelines", root / "pipelines")
    return root


def make_project(root: Path, shared: Path, graph, pairs, monkeypatch, *, mlflow_store: bool = True) -> Path:
    """A throwaway HubLab project: params.yaml from the repo's (paths inside ``root``), the graph as the
    gv3_orkg snapshot and ``pairs`` as the gv3_orkg dataset; HUBLAB_ROOT points at it. ``mlflow_store``: start
    with a copy of the session's migrated, empty MLflow store (``migrated_mlflow_store``) instead of none."""
    import shutil

    import yaml

    from hublab.config import _load_params
    from hublab.datasets.model import write_jsonl

    params = yaml.safe_load((ROOT / "params.yaml").read_text())
    params["paths"].update({"shared": str(shared), "thesis_results": str(shared / "reference/thesis_results")})
    root.mkdir(parents=True, exist_ok=True)
    (root / "params.yaml").write_text(yaml.safe_dump(params))
    share_embedding_cache(root)
    graph.save(root / "data/snapshots/gv3_orkg.ttl")
    write_jsonl(pairs, root / "data/kgqa/gv3_orkg.jsonl")
    if mlflow_store:
        (root / "mlruns").mkdir(exist_ok=True)
        shutil.copyfile(migrated_mlflow_store(), root / "mlruns" / "mlflow.db")
    monkeypatch.setenv("HUBLAB_ROOT", str(root))
    _load_params.cache_clear()
    return root


def small_gv3_project(root: Path, shared: Path, kg, monkeypatch, *, min_papers: int = 0, n_questions: int = 5,
                      max_golden: int = 2, mlflow_store: bool = True) -> Path:
    """``make_project`` on a small slice of the GV3 export: the first ``n_questions`` GV3 questions with at most
    ``max_golden`` golden triples, the papers their golden triples belong to (padded with other papers up to
    ``min_papers``). ``mlflow_store``: as in ``make_project``."""
    from hublab.datasets.kgqa_csv import load_kgqa_csv
    from hublab.graph.model import parse_triple_string
    from hublab.graph.rdf import RdfKnowledgeGraph

    pairs = [p for p in load_kgqa_csv(shared / "data/kgqa/flat_distributed.csv")
             if len(p.golden_triples) <= max_golden][:n_questions]
    papers: list[str] = []
    for p in pairs:
        for t in p.golden_triples:
            paper = kg.paper_of(parse_triple_string(t).subject_id)
            if paper and paper.uid not in papers:
                papers.append(paper.uid)
    papers += [e.uid for e in kg.entities_by_type("Paper") if e.uid not in papers][: max(0, min_papers - len(papers))]
    graph = RdfKnowledgeGraph.from_triples([t for uid in papers for t in kg.subgraph(uid)])
    return make_project(root, shared, graph, pairs, monkeypatch, mlflow_store=mlflow_store)


def _pg_bin() -> Path | None:
    import shutil

    found = shutil.which("pg_ctl")
    if found:
        return Path(found).resolve().parent
    versions = sorted(Path("/usr/lib/postgresql").glob("*/bin/pg_ctl"))
    return versions[-1].parent if versions else None


@pytest.fixture(scope="session")
def postgres_url():
    """A throwaway PostgreSQL server on 127.0.0.1 (the distribution's binaries), started for the session and
    stopped after; ``HUBLAB_TEST_POSTGRES_URL`` uses an existing one instead. Skips when neither is there (fails
    under ``CI=true``)."""
    import os
    import socket
    import subprocess

    if os.environ.get("HUBLAB_TEST_POSTGRES_URL"):
        yield os.environ["HUBLAB_TEST_POSTGRES_URL"]
        return
    need_module("psycopg2", "psycopg2 (the dev extra)")
    bin_dir = _pg_bin()
    if bin_dir is None:
        missing("PostgreSQL", "binaries not installed: apt-get install postgresql")
    import shutil
    import tempfile

    as_user: list[str] = []
    # not under pytest's tmp dir: that is private to root, and the server runs as another user
    data = Path(tempfile.mkdtemp(prefix="hublab-pg-")) / "data"
    if os.geteuid() == 0:  # initdb refuses to run as root: run the server as the postgres system user
        import pwd

        try:
            pw = pwd.getpwnam("postgres")
        except KeyError:
            missing("PostgreSQL", "running as root without a 'postgres' user for the server")
        as_user = ["runuser", "-u", "postgres", "--"]
        data.parent.chmod(0o777)
        os.chown(data.parent, pw.pw_uid, pw.pw_gid)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    subprocess.run([*as_user, str(bin_dir / "initdb"), "-D", str(data), "-U", "postgres", "-A", "trust"],
                   check=True, capture_output=True)
    log = data.parent / "pg.log"
    subprocess.run([*as_user, str(bin_dir / "pg_ctl"), "-D", str(data), "-l", str(log), "-w", "-t", "60", "-o",
                    f"-h 127.0.0.1 -p {port} -k {data.parent}", "start"], check=True, capture_output=True)
    try:
        subprocess.run([str(bin_dir / "createdb"), "-h", "127.0.0.1", "-p", str(port), "-U", "postgres", "hublab"],
                       check=True, capture_output=True)
        yield f"postgresql+psycopg2://postgres@127.0.0.1:{port}/hublab"
    finally:
        subprocess.run([*as_user, str(bin_dir / "pg_ctl"), "-D", str(data), "-m", "fast", "stop"],
                       capture_output=True)
        shutil.rmtree(data.parent, ignore_errors=True)
