"""Atomic writes, the one way HubLab writes an output a user or DVC reads: a temporary file beside the target, then
a rename. A full disk or a kill mid-write leaves the old file (or none) and no temporary file, never a truncated or
0-byte one; an error names the file being written, not another output of the same command. The file keeps the mode
it had (a new one gets the usual ``0666 & ~umask``): the temporary file's private 0600 never reaches a report."""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _mode_for(path: Path) -> int:
    try:
        return path.stat().st_mode & 0o7777
    except OSError:
        return 0o666 & ~_umask()


@contextlib.contextmanager
def atomic_path(path: str | Path) -> Iterator[Path]:
    """A temporary path beside ``path`` for a library that writes files itself (rdflib, matplotlib, numpy, csv):
    renamed onto ``path`` when the block ends without an error (the file's mode kept), removed otherwise."""
    path = Path(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        mode = _mode_for(path)
        fd, name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=f".tmp{path.suffix}", dir=path.parent)
        os.close(fd)
    except OSError as exc:
        raise OSError(exc.errno, exc.strerror or str(exc), str(path)) from exc
    tmp = Path(name)
    try:
        yield tmp
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise


def write_bytes_atomic(path: str | Path, data: bytes) -> None:
    """Write ``data`` to ``path`` atomically; parent folders are created. A device such as ``/dev/null`` (the usual
    way to discard an output) is written directly: there is nothing to replace. Raises OSError whose ``filename``
    is ``path``."""
    path = Path(path)
    try:
        if path.exists() and not path.is_file():
            with path.open("wb") as f:
                f.write(data)
            return
        path.parent.mkdir(parents=True, exist_ok=True)
        mode = _mode_for(path)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(data)
            os.chmod(tmp, mode)
            os.replace(tmp, path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise
    except OSError as exc:
        if exc.filename == str(path):
            raise
        raise OSError(exc.errno, exc.strerror or str(exc), str(path)) from exc


def write_text_atomic(path: str | Path, text: str) -> None:
    """Write ``text`` (UTF-8, newlines as given) to ``path`` atomically (see :func:`write_bytes_atomic`), every
    key HubLab knows masked (``hublab.redact.mask_known``: no file it writes holds one)."""
    from hublab.redact import mask_known

    write_bytes_atomic(path, mask_known(text).encode("utf-8"))
