"""``vector_store.index``: the server's index type and parameters, checked before anything is built (an unknown
type or a parameter of another type is one line naming the field and its YAML line)."""

from __future__ import annotations

import pytest

from hublab.errors import InputError
from hublab.vectorstore.index_spec import IndexSpec, parse_index


def test_index_spec_splits_build_and_search_parameters():
    spec = parse_index({"type": "hnsw", "M": 16, "efConstruction": 200, "ef": 64})
    assert spec == IndexSpec("HNSW", {"M": 16, "efConstruction": 200}, {"ef": 64})
    assert spec.search_params(10) == {"params": {"ef": 64}}
    assert spec.search_params(100) == {"params": {"ef": 100}}  # ef below the limit is raised to it
    ivf = parse_index({"type": "IVF_FLAT", "nlist": 128, "nprobe": 8})
    assert (ivf.build, ivf.search) == ({"nlist": 128}, {"nprobe": 8})
    assert parse_index(None) == IndexSpec("AUTOINDEX") and parse_index({"type": "FLAT"}).exact


@pytest.mark.parametrize(("cfg", "field", "words"), [
    ({"type": "DISKANN_X"}, "vector_store.index.type", "unknown index type 'DISKANN_X'"),
    ({"type": "FLAT", "ef": 10}, "vector_store.index.ef", "not a parameter of a FLAT index"),
    ({"type": "IVF_FLAT", "M": 16}, "vector_store.index.M", "expected ['nlist', 'nprobe']"),
    ({"type": "HNSW", "M": 0}, "vector_store.index.M", "expected an integer in [2, 2048], got 0"),
    ({"type": "HNSW", "ef": "64"}, "vector_store.index.ef", "got '64'"),
    ({"type": "HNSW", "ef": True}, "vector_store.index.ef", "got True"),
])
def test_bad_index_settings_name_the_field(cfg, field, words):
    with pytest.raises(InputError) as err:
        parse_index(cfg)
    assert err.value.field == field and words in str(err.value) and "\n" not in str(err.value)


def test_pipeline_yaml_with_an_unknown_index_type_is_one_line_naming_field_and_line(tmp_path):
    from hublab.pipeline.config import flatten, load_pipeline

    p = tmp_path / "p.yaml"
    p.write_text("name: x\nretriever: {type: vss}\nvector_store:\n  uri: http://127.0.0.1:1\n"
                 "  index: {type: SCANN, nlist: 8}\n")
    with pytest.raises(InputError) as err:
        load_pipeline(p)
    msg = str(err.value)
    assert msg.count("\n") == 0 and "vector_store.index.type" in msg and "SCANN" in msg and "line 5" in msg
    p.write_text("name: x\nretriever: {type: vss}\nvector_store:\n  uri: http://127.0.0.1:1\n"
                 "  index: {type: HNSW, M: 16, efConstruction: 100, ef: 64}\n  timeout_s: 5\n")
    flat = flatten(load_pipeline(p).to_dict())  # what the runner logs as MLflow params
    assert {k: flat[k] for k in flat if k.startswith("vector_store.index")} == {
        "vector_store.index.type": "HNSW", "vector_store.index.M": 16, "vector_store.index.efConstruction": 100,
        "vector_store.index.ef": 64}


def test_factory_refuses_bad_index_before_connecting(tmp_path):
    from hublab.vectorstore.factory import build_vector_store

    with pytest.raises(InputError, match="vector_store.index.type"):
        build_vector_store({"uri": "http://127.0.0.1:1", "index": {"type": "ANNOY"}}, tmp_path / "x.db")
    with pytest.raises(InputError, match="vector_store.timeout_s"):
        build_vector_store({"uri": "http://127.0.0.1:1", "timeout_s": 0}, tmp_path / "x.db")
