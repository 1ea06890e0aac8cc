"""A real Milvus standalone server for tests, on 127.0.0.1 only.

- ``milvus_standalone`` (session fixture): ``milvus-server`` from the ``milvus`` extra (Milvus 2.3.5 standalone
  with embedded etcd and local storage; the server reports ``v2.3.5-lite``, but it is the standalone build, not
  the ``milvus_lite-…`` engine of Milvus Lite files). Authorization is on, so a wrong token is refused as a
  cluster would; the default ``root:Milvus`` token is the right one.
- ``milvus_lite_uri`` (session fixture): ``milvus-lite server``, the Lite engine behind a URI (tests that the store
  recognises it and searches it through the exact mirror).

``milvus-server`` is a Python wrapper that forks ``milvus run standalone``: both are started in a new process
group and stopped together (terminating the wrapper alone would orphan the server). Readiness is a pymilvus
round trip (``get_server_version``), not the port: the wrapper binds and releases the proxy port itself while
resolving its configuration, so the port can answer before Milvus does. A crash of the forked server (a Go
``panic:`` in its stderr log; the wrapper lives on) fails the fixture at once with that log's tail.

Two servers on one host: the wrapper picks free ports for every Milvus role and the etcd client, but the embedded
etcd's *peer* port is fixed at 2380 in Milvus 2.3.5 and not in the wrapper's template, so a second server panics
("listen tcp 127.0.0.1:2380: bind: address already in use"). Milvus reads ``etcd.config.path`` from the
environment (``ETCD_CONFIG_PATH``): each server here gets its own embedded-etcd config with free client and peer
ports.

(Fixtures live here and are imported by ``tests/conftest.py``, like ``mlflow_servers``.)"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from support.local_procs import free_port, stop_group
from support.real_parts import need_executable

BIN = Path(sys.executable).parent
MILVUS_SERVER = BIN / "milvus-server"
MILVUS_LITE = BIN / "milvus-lite"
TOKEN = "root:Milvus"  # Milvus's default root credentials
TOKEN_ENV = "HUBLAB_TEST_MILVUS_TOKEN"


@dataclass
class MilvusServer:
    uri: str
    data: Path
    log: Path
    proc: subprocess.Popen
    token: str = TOKEN

    def stop(self, timeout: float = 30) -> None:
        stop_group(self.proc, timeout)


def _server_answers(uri: str, token: str) -> bool:
    from pymilvus import MilvusClient

    from hublab.vectorstore.milvus_client import (  # no idle keepalive pings (2.3.5: GOAWAY)
        GRPC_OPTIONS,
        _quiet_pymilvus,
    )

    _quiet_pymilvus()  # a stopped server's pooled connection logs a traceback per reconnect attempt otherwise

    try:
        # dedicated: pymilvus 3 shares one connection per address|token, and a stopped server's shared connection
        # stays in its reconnect loop, so a client to a new server at that address never answered
        client = MilvusClient(uri=uri, token=token, timeout=5, grpc_options=GRPC_OPTIONS, dedicated=True)
    except Exception:  # noqa: BLE001 - not up yet
        return False
    try:
        return bool(client.get_server_version(timeout=5))
    except Exception:  # noqa: BLE001 - proxy up, coordinators not ready yet
        return False
    finally:
        client.close()


def start_milvus_server(base: Path, *, timeout: float = 180, token: str = TOKEN,
                        port: int | None = None) -> MilvusServer:
    """``milvus-server --data <base>/data --proxy-port <free port> --authorization-enabled true`` in its own process
    group; returns once a pymilvus client gets the server version (fails with the log's tail otherwise). ``port``:
    this proxy port instead of a free one (a new server at a stopped one's URI)."""
    need_executable(MILVUS_SERVER, "the Milvus standalone server (the `milvus` extra, scripts/setup.sh)")
    base.mkdir(parents=True, exist_ok=True)
    port = port or free_port()
    etcd = peer = port
    while len({port, etcd, peer}) < 3:  # a given port is free now too: free_port() may hand it out again
        etcd, peer = free_port(), free_port()
    etcd_cfg = base / "embedEtcd.yaml"
    etcd_cfg.write_text(f"listen-client-urls: http://127.0.0.1:{etcd}\nadvertise-client-urls: http://127.0.0.1:{etcd}\n"
                        f"listen-peer-urls: http://127.0.0.1:{peer}\ninitial-advertise-peer-urls: http://127.0.0.1:{peer}"
                        f"\ninitial-cluster: default=http://127.0.0.1:{peer}\n")
    cmd = [str(MILVUS_SERVER), "--data", str(base / "data"), "--proxy-port", str(port), "--etcd-port", str(etcd),
           "--authorization-enabled", "true"]
    env = {**os.environ, "ETCD_CONFIG_PATH": str(etcd_cfg)}
    return _launch(cmd, env, base, f"http://127.0.0.1:{port}", token, timeout)


def _launch(cmd: list[str], env: dict[str, str], base: Path, uri: str, token: str, timeout: float) -> MilvusServer:
    log = base / "server.log"
    stderr_log = base / "data" / "logs" / "milvus-stderr.log"
    seen = stderr_log.stat().st_size if stderr_log.is_file() else 0  # a restart: only this start's lines count
    with open(log, "ab") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                start_new_session=True, env=env)
    server = MilvusServer(uri, base / "data", log, proc, token)
    deadline = time.monotonic() + timeout
    while not _server_answers(server.uri, token):
        crashed = stderr_log.is_file() and "panic:" in stderr_log.read_bytes()[seen:].decode(errors="replace")
        if crashed or proc.poll() is not None or time.monotonic() > deadline:
            server.stop(timeout=5)
            if crashed:
                why, shown = "crashed", stderr_log
            else:
                why = f"exited with {proc.returncode}" if proc.poll() else f"did not answer in {timeout:.0f} s"
                shown = log
            errors = [ln for ln in (server.data / "logs" / "milvus-stdout.log").read_text(errors="replace")
                      .splitlines() if "[ERROR]" in ln][:3] if (server.data / "logs").is_dir() else []
            pytest.fail(f"milvus-server {why}; {shown}:\n{shown.read_text(errors='replace')[-1500:]}\n"
                        + "\n".join(e[:400] for e in errors))
        time.sleep(0.5)
    return server


@pytest.fixture(scope="session")
def milvus_standalone(tmp_path_factory):
    """One Milvus standalone server for the session (authorization on, token ``root:Milvus``)."""
    server = start_milvus_server(tmp_path_factory.mktemp("milvus_standalone"))
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def milvus_token(milvus_standalone, monkeypatch) -> str:
    """The env var (``vector_store.token_env``) holding the session server's token."""
    monkeypatch.setenv(TOKEN_ENV, milvus_standalone.token)
    return TOKEN_ENV


@pytest.fixture(scope="session")
def milvus_lite_uri(tmp_path_factory):
    """``milvus-lite server`` on 127.0.0.1: the Lite engine behind a URI."""
    need_executable(MILVUS_LITE, "the milvus-lite server CLI (milvus-lite, requirements.txt)")
    port = free_port()
    data = tmp_path_factory.mktemp("milvus_lite_server")
    proc = subprocess.Popen([str(MILVUS_LITE), "server", "--data-dir", str(data), "--host", "127.0.0.1",
                             "--port", str(port)], stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT,
                            start_new_session=True)
    uri = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while not _server_answers(uri, ""):
            if proc.poll() is not None:
                pytest.fail(f"milvus-lite server exited with {proc.returncode}")
            if time.monotonic() > deadline:
                pytest.fail("milvus-lite server did not answer in 60 s")
            time.sleep(0.3)
        yield uri
    finally:
        stop_group(proc, timeout=10)
