"""Real parts some tests need (llama.cpp and its bundled GGUF, Chromium, PostgreSQL, the Milvus standalone server
of the ``milvus`` extra and the ``milvus-lite server`` CLI): on a
developer machine a missing one skips the tests that need it; under ``CI=true`` it fails them, so CI cannot pass
with those tests silently skipped (issue #19). Use ``need_module``/``missing`` instead of ``pytest.importorskip``
and ``pytest.skip`` for such parts."""

from __future__ import annotations

import importlib
import os
from pathlib import Path
from types import ModuleType
from typing import NoReturn

import pytest

CI = os.environ.get("CI", "").strip().lower() in {"1", "true", "yes"}


def missing(part: str, why: object = "") -> NoReturn:
    """Skip (developer machine) or fail (``CI=true``) the current test: ``part`` is not available."""
    msg = f"{part} is not available" + (f" ({why})" if why else "")
    if CI:
        pytest.fail(f"CI=true requires it: {msg}", pytrace=False)
    pytest.skip(msg)


def need_module(name: str, part: str | None = None) -> ModuleType:
    """``pytest.importorskip`` that fails under ``CI=true``. Only a missing module counts as missing: any other
    error while importing it propagates (a broken install must fail, not skip)."""
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as exc:
        missing(part or name, exc)


def need_executable(path: Path, part: str) -> Path:
    """``path`` if it is an executable file, else ``missing(part)`` (skip, or fail under ``CI=true``)."""
    if not (path.is_file() and os.access(path, os.X_OK)):
        missing(part, f"no executable {path}")
    return path
