"""Output files and folders: can ``--output``, ``--stats`` and ``--report-dir`` be written, probed (a file created and
removed at once), not guessed, before any work."""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path


def _probe_dir(directory: Path) -> str | None:
    """Can a file be created in ``directory`` (as this user, on this file system)? Probed, not guessed:
    ``os.access`` says yes to root on a read-only mount or under /proc."""
    try:
        fd, name = tempfile.mkstemp(prefix=".hublab-probe-", dir=directory)
    except OSError as exc:
        return f"cannot create files in {directory}: {exc.strerror or exc}"
    os.close(fd)
    with contextlib.suppress(OSError):
        os.unlink(name)
    return None


def _nearest_existing(path: Path) -> Path:
    p = path
    while not p.exists() and p != p.parent:
        p = p.parent
    return p


def is_devnull(path: Path) -> bool:
    """``path`` is the null device (``/dev/null`` or a link to it): writes succeed and are discarded."""
    try:
        return os.path.samefile(path, os.devnull)
    except OSError:
        return False


def output_file_problem(path: Path) -> str | None:
    """Why ``path`` cannot be written as a regular output file (None if it can)."""
    path = Path(os.path.abspath(path))
    if path.exists():
        if path.is_dir():
            return "is a directory; expected a file path"
        if is_devnull(path):
            return None  # the usual way to discard an output
        if not path.is_file():
            return "is not a regular file (a device or pipe: the write would fail after the run)"
        try:
            with path.open("ab"):
                pass
        except OSError as exc:
            return f"cannot be written: {exc.strerror or exc}"
        return None
    anc = _nearest_existing(path.parent)
    if not anc.is_dir():
        return f"{anc} is not a directory"
    return _probe_dir(anc)


def output_dir_problem(path: Path) -> str | None:
    """Why files cannot be written under directory ``path`` (and its siblings, e.g. ``<path>.partial-…``)."""
    path = Path(os.path.abspath(path))
    if path.exists() and not path.is_dir():
        return "exists and is not a directory"
    anc = _nearest_existing(path)
    if not anc.is_dir():
        return f"{anc} is not a directory"
    problem = _probe_dir(anc)
    if problem is None and path.exists() and path.parent.exists():
        problem = _probe_dir(path.parent)  # partial-run reports go beside it
    return problem
