"""The suite's parallel run keeps each session server's tests on one worker (scripts/test.sh: pytest-xdist with
``--dist loadgroup``; tests/conftest.py adds the ``xdist_group`` marks). Why a test: with pytest 9.2, pytest-xdist
3.8's grouping silently did nothing (every worker started its own llama.cpp server), so the pin in pyproject.toml
and the hook are checked here on a throwaway suite of three workers (a few seconds: three interpreter starts)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parents[1]

SUITE = '''
import os, time, pytest

@pytest.fixture(scope="session")
def llama_server():  # the name of the real fixture: conftest.SERVER_GROUPS maps it to the "llama" group
    with open(os.environ["CREATED"], "a") as f:
        f.write(os.environ.get("PYTEST_XDIST_WORKER", "main") + "\\n")
    return "started"

@pytest.mark.parametrize("i", range(6))
def test_uses_the_server(llama_server, i):
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
    assert "15 passed" in res.stdout
    assert len(created.read_text().split()) == 1, f"the server started on several workers: {created.read_text()}"
