"""A colleague's fresh clone gets the data by ``dvc pull``: build the data stages and one index in a clone,
``dvc push`` to a local remote, ``git clone`` that clone, ``dvc pull``, and compare every output byte for byte.

Runs the real ``dvc`` against real clones (about 2 minutes on 2 cores: the GV3 HubLink index dominates)."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DVC = ROOT / ".venv" / "bin" / "dvc"


def sh(args: list[str], cwd: Path, env: dict[str, str]) -> str:
    res = subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=900)
    assert res.returncode == 0, f"{' '.join(map(str, args))} failed:\n{res.stdout[-3000:]}\n{res.stderr[-3000:]}"
    return res.stdout


def tree_digest(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.mark.slow
@pytest.mark.skipif(not DVC.exists(), reason="dvc not installed in .venv")
def test_push_then_pull_into_a_fresh_clone_restores_data_and_index(tmp_path: Path, shared: Path):
    base = tmp_path / "work"
    base.mkdir()
    env = {**os.environ, "PYTHONPATH": "", "DVC_NO_ANALYTICS": "1", "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t"}
    env.pop("HUBLAB_ROOT", None)
    # a clone of this checkout (committed state + the working tree's source, so the test tests this code)
    first = base / "a"
    sh(["git", "clone", "-q", str(ROOT), str(first)], base, env)
    shutil.rmtree(first / "src")
    shutil.copytree(ROOT / "src", first / "src", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "dvc.yaml", first / "dvc.yaml")
    shutil.copy(ROOT / "params.yaml", first / "params.yaml")
    shutil.copy(ROOT / ".dvc" / "config", first / ".dvc" / "config")
    (first / ".venv").symlink_to(ROOT / ".venv")
    (base / "shared").symlink_to(shared)
    env_a = {**env, "PYTHONPATH": str(first / "src")}
    sh(["git", "add", "-A"], first, env_a)
    sh(["git", "commit", "-qm", "test state", "--allow-empty"], first, env_a)
    remote = base / "hublab-dvc-remote"
    assert "hublab-dvc-remote" in (first / ".dvc" / "config").read_text(), "the project's default remote"
    sh([str(DVC), "repro", "datasets", "index@0"], first, env_a)
    sh(["git", "add", "-A"], first, env_a)
    sh(["git", "commit", "-qm", "lock"], first, env_a)
    targets = ["snapshot", "graphs", "datasets", "index@0"]
    sh([str(DVC), "push", *targets], first, env_a)  # the default remote: ../hublab-dvc-remote
    assert remote.exists() and any(remote.rglob("*")), "nothing was pushed"

    second = base / "b"
    sh(["git", "clone", "-q", str(first), str(second)], base, env)
    (second / ".venv").symlink_to(ROOT / ".venv")
    env_b = {**env, "PYTHONPATH": str(second / "src")}
    sh([str(DVC), "pull", *targets], second, env_b)
    for out in ("data/snapshots", "data/graphs", "data/kgqa", "models/gv3_orkg__hublink"):
        a, b = tree_digest(first / out), tree_digest(second / out)
        assert a and a == b, f"{out} differs after pull"
    status = sh([str(DVC), "status", "datasets"], second, env_b)
    assert "up to date" in status.lower() or not status.strip(), status
