"""A damaged Milvus Lite index found from its files, before the Lite engine opens it (which ends in library
tracebacks, or in a misleading "is another process using it?"): shared by the CLI's pre-check (which names the
pipeline and graph to rebuild) and the store itself (every command that opens a Lite file). Also the index sidecars
the engine cannot read back (``torn_sidecars``): derived data, which the store removes when a load fails on them
(``load_lite``)."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

#: Index sidecars: what Milvus Lite derives from each data file (segment) per indexed field and keeps beside it,
#: ``partitions/<partition>/indexes/<segment>.<field>.<index type>.idx`` (``.sidx`` for a scalar index).
SIDECAR_SUFFIXES = (".idx", ".sidx")
#: The store's logger: a repaired load is the store's warning, said by the store's module name.
_LOG = logging.getLogger("hublab.vectorstore.milvus")


def lite_damage(db: Path) -> tuple[Path, str] | None:
    """(the damaged file, what is wrong) in a Milvus Lite index folder, from what can be read without opening it:
    the folder itself (Milvus Lite keeps a folder, never a file), each collection's JSON manifest and schema, and
    each data file the collection's manifest lists (a lost file is otherwise loaded as an empty collection: Lite
    only logs it), and each Parquet data file's magic bytes at both ends (a truncated file loses its footer)."""
    if not db.is_dir():
        size = db.stat().st_size if db.is_file() else 0
        return db, f"is not a Milvus Lite index (a file of {size} bytes where Milvus Lite keeps a folder)"
    for meta in sorted((db / "collections").glob("*/*.json")):
        try:
            state = json.loads(meta.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, ValueError):
            state = None
        if not isinstance(state, dict):
            return meta, "is not the JSON object Milvus Lite wrote (damaged)"
        if meta.name == "manifest.json" and (lost := _lost_file(meta.parent, state)):
            return lost, f"is missing (listed in {meta})"
    for data in sorted((db / "collections").glob("*/partitions/*/data/*.parquet")):
        try:
            with data.open("rb") as f:
                head = f.read(4)
                f.seek(max(0, data.stat().st_size - 4))
                tail = f.read(4)
        except OSError as exc:
            return data, f"cannot be read ({exc.strerror or exc})"
        if head != b"PAR1" or tail != b"PAR1" or data.stat().st_size < 12:
            return data, "is not a complete Parquet file (truncated or damaged)"
    return None


def torn_sidecars(db: Path, collection: str) -> list[Path]:
    """The index sidecars of ``collection`` in the Milvus Lite folder ``db`` that Milvus Lite cannot read back: empty
    or cut short (the engine writes them in place, so a process killed meanwhile leaves one torn). Derived data: the
    engine builds a missing sidecar from its segment's data file when it loads the collection, but fails the whole
    load on one it cannot read."""
    root = db / "collections" / collection / "partitions"
    return [p for p in sorted(root.glob("*/indexes/*"))
            if p.suffix in SIDECAR_SUFFIXES and p.is_file() and not _readable_sidecar(p)]


def load_lite(client: Any, uri: str, name: str) -> None:
    """Load collection ``name`` of the Milvus Lite index ``uri`` through its open ``client``. Loading is where the
    Lite engine finds what its files cannot show from outside: one line naming the index and how to rebuild it, not
    pymilvus's traceback. Except for index sidecars it cannot read (``torn_sidecars``: derived data, torn by a
    process killed while the engine wrote them): those are removed with one warning and the load tried once more,
    the engine building them again from the collection's data files (which, like its manifest and WAL, are never
    touched here)."""
    from hublab.vectorstore.base import DamagedIndex  # NumPy: not for the CLI's pre-check, which imports this module

    try:
        client.load_collection(name)
        return
    except Exception as exc:  # noqa: BLE001 - pymilvus's MilvusException, whatever the engine found
        failed = exc
    torn = torn_sidecars(Path(uri), name)
    if torn:
        for path in torn:
            path.unlink(missing_ok=True)
        _LOG.warning(
            "warning: collection %s: removed %d torn index sidecar file(s) of the Milvus Lite index %s (empty or "
            "cut short; derived data, which the engine builds again from the collection's data files): %s",
            name, len(torn), uri, ", ".join(map(str, torn)))
        try:
            client.load_collection(name)
            return
        except Exception as exc:  # noqa: BLE001 - as above
            failed = exc
    said = " ".join(str(getattr(failed, "message", None) or failed).split())[:300]
    where, what = f"collection {name}", f"cannot be loaded ({said})"
    raise DamagedIndex(damaged_message(uri, where, what), where, what) from None


def _readable_sidecar(path: Path) -> bool:
    """Whether Milvus Lite's loaders read ``path``: a scalar index through the engine's own loader; a vector index as
    the NumPy array of a FLAT index (memory-mapped: its header and the file's length, not every byte) or else as a
    FAISS index. What cannot be told (the file cannot be opened, FAISS is not installed) counts as readable."""
    import numpy as np

    try:
        if path.stat().st_size == 0:
            return False
        with path.open("rb") as f:
            npy = f.read(len(np.lib.format.MAGIC_PREFIX)) == np.lib.format.MAGIC_PREFIX
    except OSError:
        return True
    try:
        if path.suffix == ".sidx":
            from milvus_lite.index.scalar import ScalarInvertedIndex

            ScalarInvertedIndex.load(str(path))
            return True
        if npy:
            return np.load(path, mmap_mode="r", allow_pickle=False).ndim == 2
    except Exception:  # noqa: BLE001 - NumPy's and Arrow's errors for a file they cannot read
        return False
    try:
        import faiss
    except ImportError:
        return True
    try:
        faiss.read_index(str(path))
    except RuntimeError:  # FAISS's error for a file it cannot read
        return False
    return True


def damaged_message(uri: str, where: Path | str, what: str) -> str:
    """The one line for a damaged Lite index: the damaged part, what is wrong, and how to rebuild it."""
    return (f"{where}: {what}: the Milvus Lite index {uri} is damaged; rebuild it: delete {uri} (or its index folder "
            "under models/) and run `hublab index` for its pipeline and graph")


def _lost_file(collection: Path, manifest: dict) -> Path | None:
    """The first data or delta file the collection's manifest lists that is not there."""
    partitions = manifest.get("partitions")
    for name, part in sorted(partitions.items()) if isinstance(partitions, dict) else ():
        files = [*(part.get("data_files") or []), *(part.get("delta_files") or [])] if isinstance(part, dict) else []
        for rel in files:
            path = collection / "partitions" / str(name) / str(rel)
            if not path.is_file():
                return path
    return None
