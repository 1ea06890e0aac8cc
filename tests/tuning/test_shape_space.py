"""A pipeline's ``shape_space``: the factors whose best value depends on the graph's shape. Parsed and checked like
``search_space`` (errors name ``shape_space.<path>``), no part of a run's or a study's identity, and in every
LLM-free pipeline a range that holds the thesis default of each factor, none repeated from ``search_space``."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from hublab.errors import InputError
from hublab.pipeline.config import PipelineConfig, load_pipeline
from hublab.tuning.space import check_shape_space, get_path, optuna_param, space_from_pipeline

REPO = Path(__file__).resolve().parents[2]
LLM_FREE = ("hublink_local", "bm25", "vss", "hybrid", "difar_local", "fidelis_local", "mindmap_local", "tog_local",
            "structgpt_local", "four_step_focus_local")
BASE = {"name": "bm25_tiny", "retriever": {"type": "bm25", "params": {"n_results": 10}}, "llm": {"backend": "none"},
        "search_space": {"retriever.params.k1": {"low": 0.2, "high": 3.0}}}
SHAPE = {"retriever.params.units": {"values": ["auto", "nodes"]}}


def test_shape_space_is_read_and_kept_out_of_the_config_hash():
    plain = PipelineConfig.from_dict(BASE)
    shaped = PipelineConfig.from_dict({**BASE, "shape_space": SHAPE})
    assert shaped.shape_space == SHAPE and plain.shape_space == {}
    assert "shape_space" not in shaped.to_dict()
    assert shaped.config_hash("g", "d") == plain.config_hash("g", "d")


def test_a_pipeline_with_and_without_shape_space_is_one_run(tmp_path: Path):
    from hublab.config import Settings
    from hublab.experiment.identity import run_identity
    from hublab.experiment.request import RunRequest
    from hublab.tuning.orchestrate import base_identity

    st = Settings(tmp_path, yaml.safe_load((REPO / "params.yaml").read_text()))
    data = tmp_path / "q.csv"
    data.write_text("uid,question,golden_triples\n")

    def identity(cfg: PipelineConfig) -> str:
        req = RunRequest.build(cfg, "gv3_orkg", "q", settings=st)
        return run_identity(req.config_hash, "digest", data, graph="gv3_orkg", dataset="q", limit=None,
                            n_questions=3, n_total=3, experiment="e").run_id

    plain = PipelineConfig.from_dict(BASE)
    shaped = PipelineConfig.from_dict({**BASE, "shape_space": SHAPE})
    assert identity(shaped) == identity(plain)
    # a study's base identity too (its base is the config dict, with or without the sections)
    assert base_identity({**BASE, "shape_space": SHAPE}, "g", "d", None) == base_identity(BASE, "g", "d", None)


def _yaml(tmp_path: Path, shape: dict) -> PipelineConfig:
    path = tmp_path / "p.yaml"
    path.write_text(yaml.safe_dump({**BASE, "shape_space": shape}))
    return load_pipeline(path)


@pytest.mark.parametrize(("shape", "field", "words"), [
    ({"retriever.params.unitz": ["nodes"]}, "shape_space.retriever.params.unitz", "unknown parameter"),
    ({"retriever.params.units": ["words"]}, "shape_space.retriever.params.units", "refused"),
    ({"retriever.params.b": {"low": 0.9, "high": 0.1}}, "shape_space.retriever.params.b", "low <= high"),
    ({"retriever.params.units": "nodes"}, "shape_space.retriever.params.units", "expected"),
    ({"retriever.params.k1": {"low": 0.5, "high": 1.0}}, "shape_space.retriever.params.k1", "already in search_space"),
])
def test_run_and_tune_refuse_a_bad_shape_space_naming_its_field(tmp_path: Path, shape, field, words):
    from hublab.cli.run import check_search_space
    from hublab.tuning.orchestrate import TuneRequest, _base_and_space

    cfg = _yaml(tmp_path, shape)
    for check in (lambda: check_search_space(cfg),
                  lambda: _base_and_space(TuneRequest(tmp_path / "p.yaml", "s", dataset="d"))):
        with pytest.raises(InputError) as err:
            check()
        assert err.value.field == field and words in str(err.value), str(err.value)
        assert err.value.file == str(tmp_path / "p.yaml")


def test_an_empty_shape_space_is_allowed(tmp_path: Path):
    from hublab.cli.run import check_search_space

    check_search_space(_yaml(tmp_path, {}))


@pytest.mark.parametrize("name", LLM_FREE)
def test_every_llm_free_pipeline_has_a_valid_shape_space_around_its_defaults(name: str):
    path = REPO / "pipelines" / f"{name}.yaml"
    raw = yaml.safe_load(path.read_text())
    assert "shape_space" in raw, f"{name}: give it a shape_space section (empty when search_space covers it)"
    cfg = load_pipeline(path)
    base = cfg.to_dict()
    shape = check_shape_space(cfg.search_space, cfg.shape_space, base, source=str(path))
    assert len(shape.factors) == len(space_from_pipeline(cfg.shape_space).factors)  # every factor applies LLM-free
    from hublab.retrievers.registry import get_retriever_class

    declared = get_retriever_class(cfg.retriever_type).params_type
    for f in shape.factors:
        key = f.path.removeprefix("retriever.params.")
        default = get_path(base, f.path, getattr(declared, key))
        dist = optuna_param(f, None).distribution
        if hasattr(dist, "choices"):
            assert default in dist.choices, (name, f.path, default)
        else:
            assert dist.low <= default <= dist.high, (name, f.path, default)
