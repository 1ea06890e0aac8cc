"""``bench/bench_gpu.py run`` works on a bare GPU machine (issue #28): torch, sentence-transformers with what it
installs (transformers, datasets, pandas, PyYAML) and numpy, nothing else of HubLab's environment. Run here on the
CPU with every other dependency HubLab has blocked at import, on a small slice of what ``export`` writes."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
#: HubLab's dependencies a GPU machine with torch and sentence-transformers does not have
NOT_THERE = ("pydantic", "mlflow", "rdflib", "pymilvus", "milvus_lite", "optuna", "typer", "rich", "dvc",
             "sqlalchemy", "openai", "ragas", "codecarbon", "langchain_community", "bert_score", "llama_cpp")
# a None entry in sys.modules is what a missing package looks like: ``import`` raises ModuleNotFoundError and
# ``importlib.util.find_spec`` (transformers probes optional packages with it) answers None
BLOCKED_RUN = f"""
import runpy, sys
sys.modules.update(dict.fromkeys({NOT_THERE!r}))
sys.argv = ["bench_gpu.py", *sys.argv[1:]]
runpy.run_path({str(REPO / "bench" / "bench_gpu.py")!r}, run_name="__main__")
"""


pytestmark = pytest.mark.slow  # loads MiniLM and trains three steps (~20 s)


def test_run_needs_only_torch_and_sentence_transformers(tmp_path: Path, shared: Path):
    data = tmp_path / "gpu"
    export = subprocess.run([sys.executable, str(REPO / "bench" / "bench_gpu.py"), "export", str(data)],
                            capture_output=True, text=True, timeout=300)
    assert export.returncode == 0, export.stderr[-2000:]
    res = subprocess.run([sys.executable, "-c", BLOCKED_RUN, "run", str(data), "--devices", "cpu", "--limit", "16"],
                         capture_output=True, text=True, timeout=600, cwd=tmp_path,
                         env={"PATH": "/usr/bin:/bin", "HF_HUB_OFFLINE": "1", "OMP_NUM_THREADS": "1",
                              "PYTHONDONTWRITEBYTECODE": "1"})
    assert res.returncode == 0, res.stderr[-3000:]
    report = json.loads(res.stdout)
    assert report["n_texts"] == 16 and report["embed_cpu_repeat_identical"] is True
    assert report["max_abs_diff_cuda_vs_portable"] == 0.0  # cpu against itself: the comparison code ran
    assert report["train_default"]["cpu"]["s_per_step"] > 0


def test_the_block_bites(tmp_path: Path):
    """The blocker makes a HubLab module that needs pydantic fail, so the test above can fail."""
    res = subprocess.run([sys.executable, "-c", BLOCKED_RUN.replace("runpy.run_path(", "import hublab.retrievers #"),
                          "x"], capture_output=True, text=True, timeout=120,
                         env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(REPO / "src"), "PYTHONDONTWRITEBYTECODE": "1"})
    assert res.returncode != 0 and "import of pydantic halted" in res.stderr
