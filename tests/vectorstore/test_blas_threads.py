"""numpy's BLAS is pinned to one thread (hublab.env): exact-search scores then do not depend on the core count."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

pytestmark = pytest.mark.slow  # fresh interpreters

SCRIPT = """
import json, sys
import numpy  # loaded before the defaults, as in a test session or a notebook
from hublab.env import apply_offline_defaults
apply_offline_defaults()
from threadpoolctl import threadpool_info
print(json.dumps([i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"]))
"""


def _blas_threads(extra_env: dict[str, str]) -> list[int]:
    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_NUM_THREADS"} | extra_env
    out = subprocess.run([sys.executable, "-c", SCRIPT], env=env, capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_blas_is_pinned_to_one_thread_even_when_numpy_was_loaded_first():
    threads = _blas_threads({})
    assert threads and set(threads) == {1}


@pytest.mark.skipif((os.cpu_count() or 1) < 2, reason="OpenBLAS caps threads at the core count")
def test_a_users_own_blas_thread_count_is_kept():
    threads = _blas_threads({"OPENBLAS_NUM_THREADS": "2"})
    assert threads and set(threads) == {2}
