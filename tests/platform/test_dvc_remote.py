"""A colleague's fresh clone gets the data by ``hublab data pull``: build the data stages and one index in a clone,
``dvc push`` to the remote ``scripts/dvc_remote.sh`` (run by the set-up) made absolute, ``git clone`` that clone
into another folder at another depth (a relative remote would point at nothing there), pull, and compare every
output byte for byte; the outputs never pushed are named, not fatal, and a remote that does not exist is one line.

Runs the real ``dvc`` against real clones. The index is VSS's on the GV3 export (1,090 node vectors): any index
checks the round trip, and HubLink's 26,260 vectors took most of this test's former 135 s."""

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
    for folder in ("src", "scripts"):
        shutil.rmtree(first / folder)
        shutil.copytree(ROOT / folder, first / folder, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "dvc.yaml", first / "dvc.yaml")
    shutil.copy(ROOT / "params.yaml", first / "params.yaml")
    shutil.copy(ROOT / ".dvc" / "config", first / ".dvc" / "config")
    (first / ".venv").symlink_to(ROOT / ".venv")
    (base / "shared").symlink_to(shared)
    store = base / "remote-store"
    env = {**env, "HUBLAB_DVC_REMOTE": str(store)}
    env_a = {**env, "PYTHONPATH": str(first / "src")}
    sh(["git", "add", "-A"], first, env_a)
    sh(["git", "commit", "-qm", "test state", "--allow-empty"], first, env_a)
    sh(["bash", "scripts/dvc_remote.sh"], first, env_a)
    sh([str(DVC), "repro", "datasets", "index@4"], first, env_a)
    sh(["git", "add", "-A"], first, env_a)
    sh(["git", "commit", "-qm", "lock", "--allow-empty"], first, env_a)  # empty when dvc.lock already matched
    targets = ["snapshot", "graphs", "datasets", "index@4"]
    sh([str(DVC), "push", *targets], first, env_a)
    assert store.exists() and any(store.rglob("*")), "nothing was pushed"

    second = base / "elsewhere" / "deeper" / "b"  # ../../hublab-dvc-remote from here is another folder
    second.parent.mkdir(parents=True)
    sh(["git", "clone", "-q", str(first), str(second)], base, env)
    (second / ".venv").symlink_to(ROOT / ".venv")
    (second.parent / "shared").symlink_to(shared)
    env_b = {**env, "PYTHONPATH": str(second / "src")}
    sh(["bash", "scripts/dvc_remote.sh"], second, env_b)
    pull = subprocess.run([str(ROOT / ".venv" / "bin" / "python"), "-m", "hublab.cli", "data", "pull"], cwd=second,
                          env=env_b, capture_output=True, text=True, timeout=900)
    assert pull.returncode == 0, pull.stdout + pull.stderr
    assert f"pulled from {store}" in pull.stdout, pull.stdout
    # every output of dvc.lock that was never pushed is named with the stage that builds it; the rest came
    assert "models/gv3_orkg__hublink — never pushed; build it with `dvc repro index@0`" in pull.stderr, pull.stderr
    assert "data/kgqa" not in pull.stderr and "gv3_orkg__vss" not in pull.stderr, pull.stderr
    for out in ("data/snapshots", "data/graphs", "data/kgqa", "models/gv3_orkg__vss"):
        a, b = tree_digest(first / out), tree_digest(second / out)
        assert a and a == b, f"{out} differs after pull"
    status = sh([str(DVC), "status", "datasets"], second, env_b)
    assert "up to date" in status.lower() or not status.strip(), status

    # a remote folder that is not there: one line naming it, nothing pulled
    sh([str(DVC), "remote", "modify", "--local", "local", "url", str(base / "no-such-store")], second, env_b)
    gone = subprocess.run([str(ROOT / ".venv" / "bin" / "python"), "-m", "hublab.cli", "data", "pull"], cwd=second,
                          env=env_b, capture_output=True, text=True, timeout=300)
    assert gone.returncode == 2, gone.stdout + gone.stderr
    assert f"{base / 'no-such-store'}, which does not exist" in gone.stderr and "Traceback" not in gone.stderr
