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
