"""A torn index sidecar of a Milvus Lite collection (empty or cut short: the engine writes each in place, and a
process killed meanwhile leaves it so) is derived data: the store removes it with one warning naming the file and
loads the collection again, the engine building it anew from the segment. A damaged data file is never repaired:
it stays the damaged-index error, the file untouched."""

from __future__ import annotations

import logging
import shutil
from pathlib import Path

import numpy as np
import pytest

from hublab.errors import HubLabError
from hublab.vectorstore.base import DamagedIndex
from hublab.vectorstore.lite_damage import torn_sidecars
from hublab.vectorstore.milvus import MilvusVectorStore

N, DIM = 200, 8
LOGGER = "hublab.vectorstore.milvus"


def _vectors() -> np.ndarray:
    return np.random.default_rng(0).normal(size=(N, DIM)).astype(np.float32)


def _hits(store: MilvusVectorStore) -> list[list[tuple[int, int, float]]]:
    found = store.search("c", _vectors()[:3], 5, output_fields=["i"])
    return [[(h.id, h.fields["i"], round(h.score, 6)) for h in hits] for hits in found]


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> tuple[Path, list]:
    """A Lite folder with one flushed, loaded collection (the engine wrote its FLAT index sidecar when the store
    closed it), and the hits it gave."""
    db = tmp_path_factory.mktemp("torn") / "index.db"
    store = MilvusVectorStore(str(db))
    store.ensure_collection("c", DIM, "COSINE")
    store.insert("c", _vectors(), [{"i": i} for i in range(N)])
    hits = _hits(store)
    store.close()
    return db, hits


@pytest.fixture
def copy(built, tmp_path) -> Path:
    db = tmp_path / "index.db"
    shutil.copytree(built[0], db)
    return db


def _one(db: Path, pattern: str) -> Path:
    found = sorted(db.rglob(pattern))
    assert len(found) == 1, found
    return found[0]


@pytest.mark.parametrize("keep", [0, 1 / 2], ids=["empty", "half"])
def test_a_torn_sidecar_is_rebuilt_with_a_warning_and_searches_as_before(built, copy, caplog, keep):
    sidecar = _one(copy, "*.idx")
    intact = sidecar.read_bytes()
    sidecar.write_bytes(intact[: int(len(intact) * keep)])
    data = {p: p.read_bytes() for p in copy.rglob("*") if p.is_file() and p.suffix != ".idx"}
    assert torn_sidecars(copy, "c") == [sidecar]
    store = MilvusVectorStore(str(copy))
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        assert _hits(store) == built[1]
    store.close()
    warned = [r.getMessage() for r in caplog.records if r.name == LOGGER]
    assert len(warned) == 1 and warned[0].startswith("warning: ") and str(sidecar) in warned[0], warned
    assert sidecar.read_bytes() == intact  # built again by the engine
    for path, before in data.items():  # data files, manifests, schema: as they were
        assert path.read_bytes() == before, path


def test_an_intact_index_loads_without_a_warning(built, copy, caplog):
    assert torn_sidecars(copy, "c") == []
    store = MilvusVectorStore(str(copy))
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        assert _hits(store) == built[1]
    store.close()
    assert not [r for r in caplog.records if r.name == LOGGER]


def test_a_cut_data_file_is_still_a_damaged_index(copy):
    """Cut short, a data file loses its Parquet footer: refused before the engine starts, nothing removed."""
    sidecar, data = _one(copy, "*.idx"), _one(copy, "*.parquet")
    sidecar.write_bytes(b"")
    data.write_bytes(data.read_bytes()[: data.stat().st_size // 2])
    with pytest.raises(HubLabError, match="is damaged"):
        MilvusVectorStore(str(copy)).search("c", _vectors()[:1], 5)
    assert sidecar.exists() and data.stat().st_size > 0


def test_a_data_file_only_the_engine_finds_damaged_stays_a_damaged_index(copy, caplog):
    """A data file whose Parquet magic bytes are intact but whose contents are not: the engine's load fails, the
    torn sidecar beside it is removed (derived data) and the retry fails the same way: DamagedIndex, the data file
    untouched."""
    sidecar, data = _one(copy, "*.idx"), _one(copy, "*.parquet")
    sidecar.write_bytes(b"")
    raw = data.read_bytes()
    damaged = raw[:4] + bytes(len(raw) - 8) + raw[-4:]
    data.write_bytes(damaged)
    store = MilvusVectorStore(str(copy))
    with caplog.at_level(logging.WARNING, logger=LOGGER), pytest.raises(DamagedIndex, match="cannot be loaded"):
        store.search("c", _vectors()[:1], 5)
    store.close()
    assert data.read_bytes() == damaged
    warned = [r.getMessage() for r in caplog.records if r.name == LOGGER]
    assert len(warned) == 1 and str(sidecar) in warned[0] and not sidecar.exists(), warned


def test_a_torn_scalar_sidecar_is_found_by_the_engines_loader(tmp_path):
    """Scalar sidecars (``.sidx``) are read with Milvus Lite's own loader: whole, readable; empty or cut, torn."""
    import pyarrow as pa
    from milvus_lite.index.scalar import ScalarInvertedIndex
    from milvus_lite.schema.types import DataType

    indexes = tmp_path / "collections" / "c" / "partitions" / "_default" / "indexes"
    indexes.mkdir(parents=True)
    whole = indexes / "data_000001_000003.k.inverted.sidx"
    ScalarInvertedIndex.build(pa.table({"k": [3, 1, 2]}), "k", DataType.INT64).save(str(whole))
    raw = whole.read_bytes()
    (indexes / "data_000004_000006.k.inverted.sidx").write_bytes(b"")
    (indexes / "data_000007_000009.k.inverted.sidx").write_bytes(raw[: len(raw) // 2])
    (indexes / "notes.txt").write_bytes(b"")  # not a sidecar
    assert [p.name for p in torn_sidecars(tmp_path, "c")] == ["data_000004_000006.k.inverted.sidx",
                                                             "data_000007_000009.k.inverted.sidx"]
