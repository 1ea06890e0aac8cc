"""Content-keyed collections: one collection per distinct corpus, reused by every run, trial, study and method that
indexes the same unit texts, and a bound on how many a folder keeps.

Why: a tuning study varies what a method indexes (DiFaR's paper-subgraph depth and triple text, VSS's units), and
one collection per method and metric was dropped and rebuilt whenever the next trial's corpus differed, so a study
re-inserted the same few corpora again and again (DiFaR on reduced GV1: 40 s a trial). Named by the corpus's content
hash, a corpus is built once; the embeddings behind it are cached by text already (``embedding/cache.py``).

Eviction rule: per *family* (method prefix, graph, metric) a folder keeps the ``KEEP_PER_FAMILY`` collections built
most recently; older ones are dropped when a new one is built, except any built within ``IN_USE_S`` seconds (another
worker of a study may be searching it on a shared server). Builds are recorded in ``<index dir>/corpora.json``
(written only when a corpus is built: a run that reuses an index leaves its folder's bytes alone, so a DVC output
stays clean), and each build holds a file lock in the cache folder, so two workers never insert the same corpus.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from hublab.atomic import write_text_atomic

KEEP_PER_FAMILY = 8
IN_USE_S = 600.0
REGISTRY = "corpora.json"
HASH_CHARS = 12
_MAX_NAME = 250  # Milvus: at most 255 characters


def content_keyed(family: str, content_hash: str) -> str:
    """``<family>_<12 hex of the corpus hash>``; the family is shortened, never the hash."""
    suffix = "_" + content_hash[:HASH_CHARS]
    return family[: _MAX_NAME - len(suffix)] + suffix


def lock_file(cache_dir: str | Path | None, index_dir: str | Path | None) -> Path | None:
    """The build lock of an index folder, kept in the cache folder (not in the index folder, a DVC output)."""
    if not cache_dir or not index_dir:
        return None
    key = hashlib.sha256(str(Path(index_dir).resolve()).encode()).hexdigest()[:16]
    return Path(cache_dir) / "locks" / f"index-{key}.lock"


@contextlib.contextmanager
def locked(path: Path | None) -> Iterator[None]:
    """An exclusive lock on ``path`` (None: no lock, for a store with one writer)."""
    if path is None:
        yield
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a+") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def _read(index_dir: Path) -> dict[str, Any]:
    try:
        data = json.loads((index_dir / REGISTRY).read_text())
        return data if isinstance(data, dict) else {}
    except (OSError, ValueError):
        return {}  # absent or damaged: forget the uses, the collections themselves are still checked by content


def record_build(index_dir: str | Path | None, family: str, name: str, store: Any, *, keep: int = KEEP_PER_FAMILY,
                 now: float | None = None) -> list[str]:
    """Note that ``name`` (of ``family``) was just built, then drop the family's collections beyond the ``keep``
    built most recently (none built within ``IN_USE_S``) and the family's bare name (the layout before content
    keys); returns the names dropped. Call under :func:`locked`."""
    if not index_dir:
        return []
    folder = Path(index_dir)
    now = time.time() if now is None else now
    data = _read(folder)
    built = data.setdefault(family, {})
    built[name] = round(now, 3)
    dropped: list[str] = []
    for old in sorted(built, key=lambda n: (-float(built[n]), n))[keep:]:  # newest first; the name breaks ties
        if now - float(built[old]) < IN_USE_S:
            continue
        if store.has_collection(old):
            store.drop_collection(old)
        built.pop(old)
        dropped.append(old)
    if store.has_collection(family):  # one collection per family, the layout before content keys: never searched
        store.drop_collection(family)
        dropped.append(family)
    folder.mkdir(parents=True, exist_ok=True)
    write_text_atomic(folder / REGISTRY, json.dumps(data, indent=1, sort_keys=True) + "\n")
    return dropped
