"""How fast ``hublab run`` on an LLM pipeline stops when its endpoint cannot work (issue #21: under 5 s), as a
user sees it: a fresh ``hublab`` process, wall time from start to exit, in a throwaway project on ../shared.

    .venv/bin/python bench/bench_llm_preflight.py [--repeats 3]

Cases: no API key for OpenAI's API; nothing listening at a local --llm-base-url. (An address that never answers
is bounded by the 2 s connect timeout; it is not a case here because an HTTP proxy in the environment, which httpx
honours as the OpenAI client does, answers for any remote address.) Prints the best and worst wall seconds per
case and the one line the run printed."""

from __future__ import annotations

import argparse
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]


def project(shared: Path) -> Path:
    root = Path(tempfile.mkdtemp(prefix="hublab-preflight-"))
    params = yaml.safe_load((ROOT / "params.yaml").read_text())
    for key, val in params["paths"].items():
        if isinstance(val, str) and val.startswith("../shared"):
            params["paths"][key] = str(shared) + val[len("../shared"):]
    (root / "params.yaml").write_text(yaml.safe_dump(params))
    shutil.copytree(ROOT / "pipelines", root / "pipelines")
    return root


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--shared", type=Path, default=ROOT.parent / "shared")
    args = ap.parse_args()
    root = project(args.shared.resolve())
    env = {k: v for k, v in os.environ.items() if k not in ("OPENAI_API_KEY", "HUBLAB_LLM_BASE_URL", "HUBLAB_ROOT")}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT / "src"), env.get("PYTHONPATH", "")])
    base = [sys.executable, "-m", "hublab.cli", "run", "pipelines/difar.yaml", "--graph", "gv1", "--dataset",
            str(args.shared.resolve() / "data/kgqa/reduced_deep_distributed.csv"), "--no-carbon"]
    cases = {"no API key": [], "nothing listening": ["--llm-base-url", f"http://127.0.0.1:{free_port()}/v1"]}
    try:
        for name, extra in cases.items():
            times, line, code = [], "", 0
            for _ in range(args.repeats):
                t0 = time.perf_counter()
                res = subprocess.run(base + extra, cwd=root, env=env, capture_output=True, text=True, timeout=120)
                times.append(time.perf_counter() - t0)
                code, line = res.returncode, (res.stderr.strip().splitlines() or [""])[-1]
            print(f"{name:28s} exit {code}  best {min(times):.2f} s  worst {max(times):.2f} s\n    {line[:160]}")
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
