"""Resource limits at start (issue #45): under ``ulimit -f`` a write past the limit cut the MLflow database
mid-page (every later run then refused the damaged store); under a low ``ulimit -n`` MLflow, Milvus Lite and the
model loaders failed in turn with tracebacks. Low soft limits are raised; hard ones are one line before any work."""

from __future__ import annotations

import resource
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def _limited(kind: int, soft: int, hard: int):
    def apply() -> None:
        resource.setrlimit(kind, (soft, hard))
    return apply


def _hublab(args: list[str], preexec, cwd: Path) -> subprocess.CompletedProcess:
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(REPO / "src"), "HUBLAB_ROOT": str(cwd), "HF_HUB_OFFLINE": "1"}
    return subprocess.run([sys.executable, "-m", "hublab.cli", *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=120, preexec_fn=preexec)


@pytest.mark.parametrize("kind,value,said", [
    (resource.RLIMIT_FSIZE, 100 << 10, "the file-size limit (ulimit -f) is 100 KiB"),
    (resource.RLIMIT_NOFILE, 12, "the open-file limit (ulimit -n) is 12"),
], ids=["ulimit -f 100", "ulimit -n 12"])
def test_a_hard_limit_too_low_is_one_line_before_any_work(tmp_path: Path, kind: int, value: int, said: str):
    (tmp_path / "params.yaml").write_text((REPO / "params.yaml").read_text())
    done = _hublab(["run", "bm25", "--graph", "gv3_orkg", "--dataset", "gv3_orkg", "--limit", "1"],
                   _limited(kind, value, value), tmp_path)
    assert done.returncode == 2, done.stderr[-2000:]
    assert done.stderr.splitlines()[0].startswith(f"error: {said}"), done.stderr[-2000:]
    assert "Traceback" not in done.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["params.yaml"]  # nothing created


def test_low_soft_limits_are_raised_to_what_the_hard_limits_allow():
    code = ("import resource; from hublab.limits import limit_problems; print(limit_problems()); "
            "print(resource.getrlimit(resource.RLIMIT_NOFILE)[0], resource.getrlimit(resource.RLIMIT_FSIZE)[0])")

    def soft_only() -> None:
        resource.setrlimit(resource.RLIMIT_NOFILE, (12, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))
        resource.setrlimit(resource.RLIMIT_FSIZE, (100 << 10, resource.RLIM_INFINITY))

    done = subprocess.run([sys.executable, "-c", code], env={"PYTHONPATH": str(REPO / "src")}, capture_output=True,
                          text=True, timeout=60, preexec_fn=soft_only)
    assert done.returncode == 0, done.stderr
    problems, limits = done.stdout.splitlines()
    files, size = (int(x) for x in limits.split())
    assert problems == "[]"
    assert files >= 256 and size == resource.RLIM_INFINITY
