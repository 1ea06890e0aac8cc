"""docs/adding-a-retriever.md's example method runs as printed: loaded from the doc, registered as a
plugin, it passes the same checks as the built-in methods."""

from __future__ import annotations

import re
import types
from pathlib import Path

import pytest
from test_contract import QUESTION, tiny_graph

from hublab.errors import InputError
from hublab.retrievers import registry
from hublab.retrievers.base import Resources

DOC = Path(__file__).resolve().parents[2] / "docs" / "adding-a-retriever.md"


def _example_module() -> types.ModuleType:
    code = re.search(r"```python\n(.*?)```", DOC.read_text(), re.S).group(1)
    assert 30 <= len(code.strip().splitlines()) <= 45, "the example is meant to be about 40 lines"
    mod = types.ModuleType("label_overlap_example")
    exec(compile(code, str(DOC), "exec"), mod.__dict__)  # noqa: S102 - our own documentation
    return mod


def test_documented_example_is_a_working_method():
    mod = _example_module()
    cls = registry.register("label_overlap_doc")(mod.LabelOverlapRetriever)
    try:
        assert "label_overlap_doc" in registry.available()
        res = Resources(graph=tiny_graph())
        with pytest.raises(InputError, match="retriever.params.n_result"):
            registry.build_retriever("label_overlap_doc", res, {"n_result": 3}, source="label_overlap.yaml")
        r = registry.build_retriever("label_overlap_doc", res, {"n_results": 5, "max_output_triples": 2})
        out = r.retrieve(QUESTION)
        assert 0 < len(out.contexts) <= 2
        assert "Microservice migration study" in out.contexts[0].text
        assert r.retrieve("  ").reason == "empty question"
        assert cls.name == "label_overlap_doc"
    finally:
        registry._PLUGINS.pop("label_overlap_doc", None)


def test_documented_example_joins_the_default_comparison(tmp_path: Path):
    """The example's class names ``label_overlap.yaml`` as its default pipeline: with that file (the doc's YAML)
    in ``pipelines/`` next to the shipped ones, it is in ``hublab report compare``'s and ``hublab tune-all``'s
    default list, among the IR baselines, and nothing else about the list changes."""
    from hublab.experiment.fair_compare import entries

    root = Path(__file__).resolve().parents[2]
    shipped = registry.default_pipelines(root)
    assert [p.name for p in shipped] == [  # the thesis's and the papers' methods, then the IR baselines
        "difar_local.yaml", "fidelis_local.yaml", "four_step_focus_local.yaml", "hublink_local.yaml",
        "mindmap_local.yaml", "structgpt_local.yaml", "tog_local.yaml", "bm25.yaml", "vss.yaml", "hybrid.yaml"]
    (tmp_path / "pipelines").mkdir()
    for p in shipped:
        (tmp_path / "pipelines" / p.name).write_text(p.read_text())
    yaml_text = re.search(r"```yaml\n(.*?)```", DOC.read_text(), re.S).group(1)
    (tmp_path / "pipelines" / "label_overlap.yaml").write_text(yaml_text)
    assert [p.name for p in registry.default_pipelines(tmp_path)] == [p.name for p in shipped]  # not registered yet

    registry.register("label_overlap")(_example_module().LabelOverlapRetriever)
    try:
        names = [p.name for p in registry.default_pipelines(tmp_path)]
        assert names == [*(p.name for p in shipped[:8]), "label_overlap.yaml", *(p.name for p in shipped[8:])]
        found = [e for e in entries(tmp_path) if e.method == "label_overlap"]
        assert [(e.config, e.pipeline.as_posix(), e.cfg.retriever_params) for e in found] == [
            ("default", "pipelines/label_overlap.yaml", {"n_results": 20, "min_overlap": 1})]
    finally:
        registry._PLUGINS.pop("label_overlap", None)
