"""Bad Milvus server input: nothing listening at the URI, a wrong token, a server that goes away mid-run. Each is
one line naming the URI and the field to fix, within a bounded time (pymilvus alone retries an unreachable server
for minutes), and no traceback on stderr (pymilvus logs one per failed call)."""

from __future__ import annotations

import time

import numpy as np
import pytest

from hublab.errors import HubLabError, InputError
from hublab.vectorstore.factory import build_vector_store
from hublab.vectorstore.milvus import MilvusVectorStore
from local_procs import free_port
from milvus_servers import start_milvus_server


def _one_line(err: BaseException, *words: str) -> str:
    msg = str(err)
    assert "\n" not in msg and all(w in msg for w in words), msg
    return msg


def test_uri_with_nothing_listening(tmp_path, capfd):
    uri = f"http://127.0.0.1:{free_port()}"
    t0 = time.monotonic()
    with pytest.raises(InputError) as err:
        build_vector_store({"uri": uri}, tmp_path / "unused.db")
    assert time.monotonic() - t0 < 30
    assert err.value.field == "vector_store.uri"
    _one_line(err.value, uri, "no Milvus server answers")
    assert "Traceback" not in capfd.readouterr().err


def test_wrong_token(milvus_standalone, tmp_path, monkeypatch, capfd):
    monkeypatch.setenv("HUBLAB_TEST_WRONG_TOKEN", "root:not-the-password")
    with pytest.raises(InputError) as err:
        build_vector_store({"uri": milvus_standalone.uri, "token_env": "HUBLAB_TEST_WRONG_TOKEN"},
                           tmp_path / "unused.db")
    assert err.value.field == "vector_store.token_env"
    msg = _one_line(err.value, milvus_standalone.uri, "refused the connection")
    assert "not-the-password" not in msg
    assert "Traceback" not in capfd.readouterr().err


def test_server_that_goes_away_mid_run(tmp_path, capfd):
    """A server stopped between the index build and the search: the search fails after ``timeout_s`` (retries
    included) with one line naming the URI, instead of pymilvus's minutes of retries and logged tracebacks."""
    server = start_milvus_server(tmp_path / "srv")
    try:
        store = MilvusVectorStore(server.uri, token=server.token, timeout_s=5)
        vecs = np.eye(4, dtype=np.float32)
        store.ensure_collection("t_gone", 4, "COSINE")
        store.insert("t_gone", vecs, [{"i": i} for i in range(4)])
        assert [h.fields["i"] for h in store.search("t_gone", vecs[:1], 1)[0]] == [0]
    finally:
        server.stop()
    t0 = time.monotonic()
    with pytest.raises(HubLabError) as err:
        store.search("t_gone", vecs[:1], 1)
    assert time.monotonic() - t0 < 30
    _one_line(err.value, server.uri, "searching t_gone failed")
    assert "Traceback" not in capfd.readouterr().err
