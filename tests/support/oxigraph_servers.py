"""Real Oxigraph SPARQL servers on 127.0.0.1 (the ``oxigraph`` package's CLI: ``oxigraph load``, then ``oxigraph
serve-read-only``), one per RDF file a session asks for, stopped at the session's end."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import requests

from support.local_procs import free_port, stop_group
from support.real_parts import need_executable

OXIGRAPH = Path(sys.executable).parent / "oxigraph"


def _wait_ready(url: str, proc: subprocess.Popen, log: Path, deadline_s: float = 60) -> None:
    end = time.monotonic() + deadline_s
    while time.monotonic() < end:
        if proc.poll() is not None:
            raise RuntimeError(f"oxigraph exited with {proc.returncode}: {log.read_text()[-2000:]}")
        try:
            if requests.post(url, data={"query": "ASK {}"}, timeout=2).status_code == 200:
                return
        except requests.RequestException:
            pass
        time.sleep(0.1)
    raise RuntimeError(f"oxigraph did not answer at {url} within {deadline_s} s")


@pytest.fixture(scope="session")
def oxigraph(tmp_path_factory) -> Iterator[Callable[[Path], str]]:
    """``oxigraph(file)`` → the query URL of a read-only Oxigraph server holding that RDF file (one server a file)."""
    exe = need_executable(OXIGRAPH, "the oxigraph server (pip install oxigraph)")
    started: dict[Path, str] = {}
    procs: list[subprocess.Popen] = []

    def serve(file: Path) -> str:
        file = Path(file).resolve()
        if file in started:
            return started[file]
        base = tmp_path_factory.mktemp("oxigraph")
        store, log = base / "store", base / "server.log"
        subprocess.run([str(exe), "load", "--location", str(store), "--file", str(file)], check=True,
                       capture_output=True, timeout=300)
        port = free_port()
        with log.open("wb") as out:
            proc = subprocess.Popen([str(exe), "serve-read-only", "--location", str(store), "--bind",
                                     f"127.0.0.1:{port}"], stdout=out, stderr=subprocess.STDOUT,
                                    start_new_session=True)
        procs.append(proc)
        url = f"http://127.0.0.1:{port}/query"
        _wait_ready(url, proc, log)
        started[file] = url
        return url

    yield serve
    for p in procs:
        stop_group(p)
