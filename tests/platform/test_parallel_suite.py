"""The suite's parallel run keeps each session server's tests on one worker, also when a test needs two servers
(scripts/test.sh: pytest-xdist with ``--dist loadgroup``; tests/conftest.py adds the ``xdist_group`` marks). Why a
test: with pytest 9.2, pytest-xdist 3.8's grouping silently did nothing (every worker started its own llama.cpp
server), so the pin in pyproject.toml and the hook are checked here on a throwaway suite of three workers (a few
seconds: three interpreter starts)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parents[1]

SUITE = '''
import os, time, pytest

def _started(name):
    with open(os.environ["CREATED"], "a") as f:
        f.write(name + "@" + os.environ.get("PYTEST_XDIST_WORKER", "main") + "\\n")
    return "started"

# the names of the real fixtures: conftest.SERVER_GROUPS maps them to the "llama", "milvus" and "postgres" groups
@pytest.fixture(scope="session")
def llama_server():
    return _started("llama")

@pytest.fixture(scope="session")
def milvus_standalone():
    return _started("milvus")

@pytest.fixture(scope="session")
def postgres_url():
    return _started("postgres")

@pytest.mark.parametrize("i", range(6))
def test_uses_the_server(llama_server, i):
    time.sleep(0.1)

@pytest.mark.parametrize("i", range(3))
def test_uses_milvus(milvus_standalone, i):
    time.sleep(0.1)

@pytest.mark.parametrize("i", range(3))
def test_uses_postgres(postgres_url, i):
    time.sleep(0.1)

def test_uses_both(milvus_standalone, postgres_url):  # joins the two groups: still one server of each a run
    time.sleep(0.1)

@pytest.mark.parametrize("i", range(9))
def test_other(i):
    time.sleep(0.1)
'''


@pytest.mark.slow
def test_a_session_servers_tests_share_one_worker(tmp_path: Path):
    suite = tmp_path / "suite"
    suite.mkdir()
    (suite / "conftest.py").write_text(  # the project's collection hook, loaded under another module name
        "import importlib.util, sys\n"
        f"sys.path.insert(0, {str(TESTS)!r})\n"
        f"spec = importlib.util.spec_from_file_location('project_conftest', {str(TESTS / 'conftest.py')!r})\n"
        "mod = importlib.util.module_from_spec(spec)\nspec.loader.exec_module(mod)\n"
        "pytest_collection_modifyitems = mod.pytest_collection_modifyitems\n"
    )
    (suite / "test_servers.py").write_text(SUITE)
    created = tmp_path / "created.txt"
    res = subprocess.run([sys.executable, "-m", "pytest", "-q", "-n", "3", "--dist", "loadgroup", "-p",
                          "no:cacheprovider", str(suite)], cwd=tmp_path, capture_output=True, text=True,
                         timeout=300, env={**os.environ, "CREATED": str(created)})
    assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-2000:]
    assert "22 passed" in res.stdout
    started = created.read_text().split()
    assert sorted(n.split("@")[0] for n in started) == ["llama", "milvus", "postgres"], \
        f"a server started on several workers: {started}"
