"""The retriever contract (``hublab.testing.retriever_contract``, shipped for plugins), run over every method the
registry finds in ``retrievers/methods/`` (no hand-kept list): a new file there is picked up here automatically.
A plugin runs the same class over itself (``test_adding_a_retriever.py`` does it for the documented example).
"""

from __future__ import annotations

import json
from pathlib import Path

from hublab.retrievers.registry import available
from hublab.testing.retriever_contract import QUESTION, RetrieverContract

METHODS = available(plugins=False)  # the package's methods, not test doubles other modules register


class _WithRequiredParams(RetrieverContract):
    def required_params(self, tmp: Path, graph) -> dict:
        """``fixed`` needs its predictions file (the one parameter without a default today)."""
        if self.method != "fixed":
            return {}
        f = tmp / "fixed.json"
        f.write_text(json.dumps({QUESTION: [t.render() for t in list(graph.triples())[:3]]}))
        return {"path": str(f)}


# one test class per method: TestContract_hublink::test_empty_question_gives_empty_valid_result, …
for _name in METHODS:
    globals()[f"TestContract_{_name}"] = type(f"TestContract_{_name}", (_WithRequiredParams,), {"method": _name})


def test_registry_finds_every_method_file():
    assert {"hublink", "difar", "bm25", "hybrid", "vss", "fidelis", "mindmap", "tog", "structgpt",
            "four_step_focus", "fixed", "vector"} <= set(METHODS)
