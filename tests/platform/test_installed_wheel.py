"""HubLab as a user installs it: an sdist is built, a wheel is built from the sdist, the wheel is installed into a fresh
virtual environment, and from an empty folder (no repository, no ``HUBLAB_ROOT``, no ``PYTHONPATH``) ``hublab list``,
``hublab run bm25`` on a Turtle file with JSONL questions, and the Python API's ``retrieve`` work, writing only under
HubLab's home (``~/.local/share/hublab``).

The fresh environment holds the wheel alone; its third-party dependencies (torch, MLflow, ...) are the test
environment's, reached through a ``.pth`` file, because installing the pinned stack again would add minutes to every
run of the suite. Everything of HubLab's own (code, built-in pipelines, parameter defaults, example graphs) comes
from the wheel: the test checks where ``hublab`` is imported from.
"""

from __future__ import annotations

import json
import os
import shutil
import site
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "your-graph"

pytestmark = pytest.mark.slow  # builds, a virtual environment, subprocesses (~40 s)


def _clean_env() -> dict[str, str]:
    """The test process's environment without PYTHONPATH: the suite puts the checkout's src/ on it, and pip in the
    fresh venv would take the hublab.egg-info there for an installed hublab and install nothing."""
    return {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "HUBLAB_ROOT")}


def _run(cmd: list[str], **kw) -> subprocess.CompletedProcess:
    kw.setdefault("env", _clean_env())
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=600, **kw)
    assert out.returncode == 0, f"{cmd}\n{out.stdout[-2000:]}\n{out.stderr[-3000:]}"
    return out


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> Path:
    """A fresh virtual environment with the wheel built from the sdist."""
    tmp = tmp_path_factory.mktemp("wheel")
    dist = tmp / "dist"
    _run([sys.executable, "setup.py", "-q", "sdist", "-d", str(dist)], cwd=REPO)
    (sdist,) = dist.glob("hublab-*.tar.gz")
    _run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", "-w", str(dist),
          str(sdist)], cwd=tmp)
    (wheel,) = dist.glob("hublab-*.whl")
    venv = tmp / "venv"
    _run([sys.executable, "-m", "venv", str(venv)])
    _run([str(venv / "bin" / "python"), "-m", "pip", "install", "-q", "--no-deps", "--no-index", "--ignore-installed",
          str(wheel)])
    assert (venv / "bin" / "hublab").is_file(), "the wheel's console script was not installed"
    purelib = _run([str(venv / "bin" / "python"), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"])
    deps = [p for p in site.getsitepackages() if Path(p).is_dir()]
    (Path(purelib.stdout.strip()) / "_test_dependencies.pth").write_text("\n".join(deps) + "\n")
    return venv


@pytest.fixture()
def user(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    """An empty folder with a user's graph and questions, and the environment of a user's shell."""
    folder = tmp_path / "empty"
    folder.mkdir()
    shutil.copy(EXAMPLE / "graph.ttl", folder / "music.ttl")
    rows = [{"uid": "q1", "question": "Who wrote 'Reproducible Pipelines for Knowledge Graph Experiments'?",
             "golden_triples": ["<https://example.org/kg/article2> <https://schema.org/author> "
                                "<https://example.org/kg/grace> ."]}]
    (folder / "q.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    keep = ("PATH", "LANG", "LC_ALL", "TMPDIR", "HUBLAB_TEST_EMBEDDING_CACHE")
    env = {k: v for k, v in os.environ.items() if k in keep}
    env.update(HOME=str(tmp_path / "home"), HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
    return folder, env


def test_the_installed_wheel_works_in_an_empty_folder(installed: Path, user: tuple[Path, dict[str, str]]):
    folder, env = user
    hublab = str(installed / "bin" / "hublab")
    home = Path(env["HOME"]) / ".local" / "share" / "hublab"
    assert _run([hublab, "--version"], cwd=folder, env=env).stdout.startswith("hublab ")
    info = json.loads(_run([hublab, "info", "--json"], cwd=folder, env=env).stdout)
    assert info["project"] == str(home.resolve()) and "shipped defaults" in info["params"]
    assert Path(info["pipelines"]).is_relative_to(installed)  # the wheel's own pipelines
    listed = json.loads(_run([hublab, "list", "--json"], cwd=folder, env=env).stdout)
    assert {"bm25", "hublink_local"} <= {p["name"] for p in listed["pipelines"]}
    assert {"example", "catalogue", "concepts", "events"} <= {g["name"] for g in listed["graphs"] if g["built"]}
    ran = _run([hublab, "run", "bm25", "--graph", "music.ttl", "--dataset", "q.jsonl", "--json", "--no-carbon"],
               cwd=folder, env=env)
    assert json.loads(ran.stdout)["metrics"]["hit_at_10_triples"] == 1.0
    assert (home / "mlruns" / "mlflow.db").is_file() and (home / "outputs" / "runs").is_dir()
    api = ("import json, hublab; p = hublab.load_pipeline('bm25', graph='music.ttl'); "
           "got = p.retrieve(\"Who wrote 'Reproducible Pipelines for Knowledge Graph Experiments'?\"); "
           "print(json.dumps({'file': hublab.__file__, 'objects': [t.object for t in got[:5]]}))")
    out = json.loads(_run([str(installed / "bin" / "python"), "-c", api], cwd=folder, env=env).stdout)
    assert Path(out["file"]).is_relative_to(installed) and "Grace Hopper" in out["objects"]
    assert sorted(p.name for p in folder.iterdir()) == ["music.ttl", "q.jsonl"]  # nothing written beside them
