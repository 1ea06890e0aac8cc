"""On-disk copy of a Milvus Lite collection's exact mirror (ids, vectors, scalar fields).

Why: reading a collection back through Milvus Lite's gRPC query iterator costs ~3 s for GV3's HubLink index
(26,260 rows of 384 floats) at the start of every ``hublab run``; the same rows from a local ``.npz`` take ~0.1 s.

The copy is valid only for the exact files it was read from: its stamp is every file's relative path, size and
modification time (ns) under the collection's folder of the Lite file (``<db>/collections/<name>/``, so another
collection in the same file does not invalidate it), or under the whole Lite path where that folder does not exist.
Any write to the collection (this process or another), a ``dvc checkout`` or a copy changes the stamp, and the
mirror is read from Milvus again. Nothing is unpickled: arrays and a JSON text only.
"""

from __future__ import annotations

import hashlib
import json
import zipfile
from pathlib import Path
from typing import Any

import numpy as np

from hublab.atomic import atomic_path

#: Collections smaller than this load through gRPC in well under a second: not worth a file each.
MIN_ROWS = 2000
_SKIP = {"LOCK"}  # the Lite engine's lock file: rewritten by every process that opens the file


def _stamp(db: Path, name: str) -> str:
    """Digest of (relative path, size, mtime_ns) of every file the collection's rows come from."""
    root = db / "collections" / name
    if not root.is_dir():
        root = db
    files = [root] if root.is_file() else sorted(p for p in root.rglob("*") if p.is_file() and p.name not in _SKIP)
    h = hashlib.sha256()
    for p in files:
        st = p.stat()
        h.update(f"{p.relative_to(root) if p != root else p.name}\0{st.st_size}\0{st.st_mtime_ns}\n".encode())
    return h.hexdigest()


def _file(cache_dir: Path, db: Path, name: str) -> Path:
    key = hashlib.sha256(f"{db.resolve()}\0{name}".encode()).hexdigest()[:24]
    return cache_dir / f"{key}.npz"


Copy = tuple[np.ndarray, np.ndarray, list[dict[str, Any]], str | None]


def load(cache_dir: Path, db: Path, name: str) -> Copy | None:
    """(ids, float32 matrix, fields per row, the collection's metric or None where the copy predates it) when a copy
    with the collection's current stamp exists, else None."""
    path = _file(cache_dir, db, name)
    if not path.is_file():
        return None
    try:
        with np.load(path, allow_pickle=False) as z:
            if str(z["stamp"]) != _stamp(db, name) or str(z["collection"]) != name:
                return None
            ids, matrix = z["ids"], z["matrix"]
            fields = json.loads(z["fields"].tobytes().decode("utf-8"))
            metric = str(z["metric"]) if "metric" in z.files else ""
    except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile):  # truncated or foreign: read from Milvus
        return None
    if len(fields) != len(ids) or len(matrix) != len(ids):
        return None
    return ids, matrix, fields, metric or None


def save(cache_dir: Path, db: Path, name: str, ids: np.ndarray, matrix: np.ndarray,
         fields: list[dict[str, Any]], metric: str | None = None) -> None:
    """Write the copy atomically (temp file + rename: a reader never sees half a file); best effort — a read-only
    or full disk leaves the run as it was, reading through gRPC next time too. With the collection's ``metric`` a
    run searches the copy without starting the Lite engine at all."""
    if len(ids) < MIN_ROWS:
        return
    try:
        text = json.dumps(fields, ensure_ascii=False, separators=(",", ":"))
    except (TypeError, ValueError):  # a field value JSON cannot hold: keep reading through gRPC
        return
    try:
        with atomic_path(_file(cache_dir, db, name)) as tmp, tmp.open("wb") as f:
            np.savez(f, stamp=np.array(_stamp(db, name)), collection=np.array(name), ids=np.asarray(ids, np.int64),
                     matrix=np.asarray(matrix, np.float32), fields=np.frombuffer(text.encode("utf-8"), np.uint8),
                     metric=np.array(metric or ""))
    except OSError:
        pass  # best effort: the next run reads through gRPC and tries again


def forget(cache_dir: Path, db: Path, name: str) -> None:
    """Remove the copy of a dropped collection (a content-keyed corpus evicted from its folder)."""
    _file(cache_dir, db, name).unlink(missing_ok=True)
