"""Atomic text writes, the one way HubLab writes an output a user or DVC reads: a temporary file beside the
target, then a rename. A full disk or a kill mid-write leaves the old file (or none) and no temporary file,
never a truncated or 0-byte one; an error names the file being written, not another output of the same command."""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path


def write_text_atomic(path: str | Path, text: str) -> None:
    """Write ``text`` (UTF-8, newlines as given) to ``path`` atomically; parent folders are created. A device such
    as ``/dev/null`` (the usual way to discard an output) is written directly: there is nothing to replace.
    Raises OSError whose ``filename`` is ``path``."""
    path = Path(path)
    try:
        if path.exists() and not path.is_file():
            with path.open("w", encoding="utf-8", newline="") as f:
                f.write(text)
            return
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
        try:
            with os.fdopen(fd, "w", encoding="utf-8", newline="") as f:
                f.write(text)
            os.replace(tmp, path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise
    except OSError as exc:
        if exc.filename == str(path):
            raise
        raise OSError(exc.errno, exc.strerror or str(exc), str(path)) from exc
