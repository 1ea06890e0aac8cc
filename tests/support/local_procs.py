"""What every local-server fixture needs: a free port on 127.0.0.1 and a stop that takes the whole process group
(``milvus-server`` forks the real server, ``mlflow server`` its uvicorn workers: stopping the parent alone would
orphan them)."""

from __future__ import annotations

import os
import signal
import socket
import subprocess


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def stop_group(proc: subprocess.Popen, timeout: float = 30) -> None:
    """SIGTERM to the process group, SIGKILL to what is left after ``timeout`` s (children may outlive the parent)."""
    try:
        os.killpg(proc.pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        pass
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.wait(timeout=10)
