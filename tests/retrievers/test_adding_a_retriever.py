"""docs/adding-a-retriever.md's example method runs as printed: loaded from the doc, registered as a
plugin, it passes the same checks as the built-in methods."""

from __future__ import annotations

import re
import sys
import types
from dataclasses import dataclass
from pathlib import Path

import pytest

from hublab.errors import InputError
from hublab.retrievers import registry
from hublab.retrievers.base import Resources, RetrievalResult, Retriever
from hublab.testing.retriever_contract import QUESTION, RetrieverContract, tiny_graph

DOC = Path(__file__).resolve().parents[2] / "docs" / "adding-a-retriever.md"


def _example_module() -> types.ModuleType:
    """The doc's example as a plugin module (in ``sys.modules``, as an imported plugin file is: its parameter
    dataclass's annotations resolve in it)."""
    code = re.search(r"```python\n(.*?)```", DOC.read_text(), re.S).group(1)
    assert 30 <= len(code.strip().splitlines()) <= 50, "the example is meant to be about 40 lines"
    mod = types.ModuleType("label_overlap_example")
    sys.modules[mod.__name__] = mod
    exec(compile(code, str(DOC), "exec"), mod.__dict__)  # noqa: S102 - our own documentation
    return mod


def test_documented_example_is_a_working_method():
    mod = _example_module()
    cls = registry.register("label_overlap_doc")(mod.LabelOverlapRetriever)
    try:
        assert "label_overlap_doc" in registry.available()
        assert {k: d for k, (_t, d) in cls.declared_params().items()} == {
            "n_results": 20, "min_overlap": 1, "max_output_triples": None}
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
    from hublab.experiment.comparison.default_vs_tuned import entries

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


def test_a_plugin_declaring_keyword_only_init_parameters_is_refused_at_registration():
    """The old way of declaring parameters (keyword-only ``__init__`` arguments) is not read: a class that still
    does is refused by name, not registered with silently no parameters."""

    class OldStyle(Retriever):
        def __init__(self, resources: Resources, *, n_results: int = 20, **params) -> None:
            super().__init__(resources, **params)

        def _retrieve(self, question, topic_entity_id, topic_entity_value) -> RetrievalResult:
            return RetrievalResult()

    with pytest.raises(TypeError, match=r"OldStyle.*keyword-only.*\['n_results'\].*params_type"):
        registry.register("old_style")(OldStyle)
    assert "old_style" not in registry.available()
    with pytest.raises(TypeError, match="params_type"):
        OldStyle.declared_params()


def test_declared_parameters_are_worked_out_once_and_handed_out_as_copies():
    """A study validates every trial through them: worked out once per class, and a caller's change to the returned
    mapping never reaches the next caller."""
    from hublab.retrievers.methods.tog import ToGRetriever

    first = ToGRetriever.declared_params()
    first.pop(next(iter(first)))
    first["width_typo"] = (int, 1)
    again = ToGRetriever.declared_params()
    assert "width_typo" not in again and len(again) == len(first)
    assert again == ToGRetriever.declared_params()


def test_a_subclass_params_type_must_keep_its_parents_parameters():
    from hublab.retrievers.methods.tog import ToGRetriever

    @dataclass(frozen=True)
    class Unrelated:
        width: int = 3

    class Narrowed(ToGRetriever):
        params_type = Unrelated

    with pytest.raises(TypeError, match="Narrowed.params_type .*must subclass"):
        Narrowed.declared_params()


class TestTheDocumentedExampleKeepsTheContract(RetrieverContract):
    """The shipped contract (``hublab.testing``) run over a plugin: the doc's example, registered for this class."""

    method = "label_overlap_contract"

    @pytest.fixture(scope="class", autouse=True)
    def registered(self):
        registry.register(self.method)(_example_module().LabelOverlapRetriever)
        yield
        registry._PLUGINS.pop(self.method, None)
