"""Connections to Milvus: one ``MilvusClient`` per URI (and token) per process, a Lite file's lock checked first,
and pymilvus's failures turned into one line naming the URI and what to fix (a locked Lite file and its holder,
a refused login, no server)."""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Any

from hublab.errors import HubLabError, InputError, ServiceUnavailable
from hublab.vectorstore.lite_damage import damaged_message, lite_damage

_CLIENTS: dict[str, Any] = {}
_CLIENTS_LOCK = threading.Lock()
#: pymilvus 3 sends gRPC keepalive pings every 10 s, also on an idle connection. The Milvus 2.3.5 standalone server
#: answered them with GOAWAY "too_many_pings" (seen in the GV3 test on idle connections; gRPC logs it to stderr and
#: the connection is re-established): ping every 5 min, only during calls.
GRPC_OPTIONS = {"grpc.keepalive_time_ms": 300_000, "grpc.keepalive_permit_without_calls": False}
def lock_holder(lock_file: Path) -> str | None:
    """``pid N (command line)`` of the process holding an ``flock`` on ``lock_file`` (from /proc/locks), or None."""
    try:
        st = lock_file.stat()
        locks = Path("/proc/locks").read_text().splitlines()
    except OSError:
        return None
    dev = f"{os.major(st.st_dev):02x}:{os.minor(st.st_dev):02x}:{st.st_ino}"
    for line in locks:
        parts = line.split()
        if len(parts) >= 6 and parts[1] == "FLOCK" and parts[5] == dev:
            pid = parts[4]
            try:
                cmd = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()
            except OSError:
                cmd = ""
            return f"pid {pid}" + (f" ({cmd[:200]})" if cmd else "")
    return None


def _check_lite_lock(uri: str) -> None:
    """A Milvus Lite folder locked by another process: one line naming that process, instead of the Lite
    engine's logged traceback and pymilvus's "Open local milvus failed"."""
    import fcntl

    lock_file = Path(uri) / "LOCK"
    if not lock_file.is_file():
        return
    try:
        fd = os.open(lock_file, os.O_RDWR)
    except OSError:
        return
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        fcntl.flock(fd, fcntl.LOCK_UN)
    except OSError:
        holder = lock_holder(lock_file) or "another process"
        raise HubLabError(f"the Milvus Lite index {uri} is in use by {holder}: a Lite file can be opened by one "
                          "process at a time; wait for it to finish or stop it (or use a Milvus server: "
                          "vector_store.uri)") from None
    finally:
        os.close(fd)


def _port_answers(uri: str) -> bool:
    """Whether something accepts TCP connections at ``uri``'s host and port (tells a refused login from no server:
    pymilvus reports both as "Fail connecting to server")."""
    import socket
    from urllib.parse import urlsplit

    parts = urlsplit(uri if "://" in uri else f"http://{uri}")
    try:
        port = parts.port or (443 if parts.scheme == "https" else 19530)  # pymilvus's defaults
        with socket.create_connection((parts.hostname or "localhost", port), timeout=3):
            return True
    except OSError:
        return False


def server_error(uri: str, exc: BaseException, doing: str) -> HubLabError:
    """One line naming the server and what failed, from a pymilvus exception (whose own message is a repr). When
    nothing listens at the URI any more the server has gone away: ``ServiceUnavailable``, which stops a run
    (checkpoint kept) instead of failing every remaining question after its timeout."""
    msg = getattr(exc, "message", None) or str(exc)
    msg = " ".join(str(msg).split())[:300]
    if not uri.endswith(".db") and not _port_answers(uri):
        return ServiceUnavailable(f"Milvus server {uri} stopped answering ({doing} failed: {msg}); the run stopped "
                                  "with its finished questions kept: start the server again (vector_store.uri) and "
                                  "rerun the same command to resume")
    return HubLabError(f"Milvus server {uri}: {doing} failed: {msg}")


def _quiet_pymilvus() -> None:
    """pymilvus logs every failed RPC, and every failed reconnect while it retries, with a full traceback (for Milvus
    Lite the engine's own); HubLab reports the raised error as one line naming the URI or the damaged index, so
    those logs would only repeat it as tracebacks."""
    import logging

    logging.getLogger("pymilvus.decorators").setLevel(logging.CRITICAL)
    logging.getLogger("milvus_lite.adapter.grpc.servicer").setLevel(logging.CRITICAL)  # the engine's side of it
    logging.getLogger("pymilvus.client.connection_manager").setLevel(logging.ERROR)


def _client(uri: str, token: str | None, timeout: float | None = None):
    """One MilvusClient per URI (and token, for a server) per process (Milvus Lite allows one process per file
    anyway). The token is part of the key: a store with another token must not reuse an authorised connection."""
    key = uri if uri.endswith(".db") else f"{uri}\0{token or ''}"
    with _CLIENTS_LOCK:
        if key not in _CLIENTS:
            from pymilvus import MilvusClient

            _quiet_pymilvus()
            if uri.endswith(".db"):
                _check_lite_damage(uri)
                _check_lite_lock(uri)
            extra = {} if uri.endswith(".db") else {"grpc_options": GRPC_OPTIONS}
            try:
                _CLIENTS[key] = MilvusClient(uri=uri, token=token or "", timeout=timeout, **extra)
            except Exception as exc:  # pymilvus raises its own exception types
                hint = ""
                if uri.endswith(".db") and (holder := lock_holder(Path(uri) / "LOCK")):
                    raise HubLabError(f"the Milvus Lite index {uri} is in use by {holder}: a Lite file can be "
                                      "opened by one process at a time") from None
                if uri.endswith(".db"):
                    hint = (" (a Milvus Lite file can be opened by one process at a time:"
                            " is another hublab process using it?)")
                    raise HubLabError(f"cannot open Milvus at {uri}: {exc}{hint}") from exc
                said = " ".join(str(getattr(exc, "message", None) or exc).split())[:200]  # pymilvus's own reason
                if _port_answers(uri):
                    raise InputError(f"the Milvus server at {uri} answers but refused the connection ({said}): a "
                                     "wrong or missing token (the environment variable named by "
                                     "vector_store.token_env, user:password), database or TLS setting",
                                     field="vector_store.token_env") from None
                raise InputError(f"no Milvus server answers at {uri} (nothing listening, or not reachable; {said}): "
                                 "start it or fix the URI", field="vector_store.uri") from None
        return _CLIENTS[key]


def check_lite_file(uri: str) -> None:
    """A Lite file's own checks, without its engine: damaged (one line naming the file and how to rebuild it), or
    locked by another process (one line naming it). Nothing to check where this process has the file open."""
    with _CLIENTS_LOCK:
        if uri in _CLIENTS:
            return
    _check_lite_damage(uri)
    _check_lite_lock(uri)


def _check_lite_damage(uri: str) -> None:
    """A damaged Lite index is one line naming the damaged file and how to rebuild it (``lite_damage``)."""
    db = Path(uri)
    damage = lite_damage(db) if db.exists() else None
    if damage is not None:
        where, what = damage
        raise HubLabError(damaged_message(uri, f"file {where}", what))


def release_client(uri: str) -> None:
    """Close and forget this process's client for a Milvus Lite file (the next store for it opens a new one)."""
    with _CLIENTS_LOCK:
        client = _CLIENTS.pop(uri, None)
    if client is not None:
        client.close()


def token_from_env(env_name: str | None) -> str | None:
    """A server token from the environment variable a config names (``vector_store.token_env``), never the value."""
    return os.environ.get(env_name) if env_name else None
