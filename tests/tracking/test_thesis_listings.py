"""The thesis prints seven prompts (Appendix A.1, Listings A.1-A.7); HubLab sends each of them word for word.

Each listing is cut out of the thesis text (../shared/seeds/004_*.txt) and compared with the prompt registered under
its name in the MLflow Prompt Registry (and with the code's template it was registered from). Both sides are
normalised for case, punctuation, markdown emphasis/fences and whitespace (the thesis text is a PDF extraction:
its fences, emphasis markers and line breaks are not reliable); any other difference, one word added, dropped or
changed, fails. Prompts the thesis does not print are registered as the project's own.
"""

from __future__ import annotations

import difflib
import importlib
import re
from pathlib import Path

import pytest

from hublab.retrievers.registry import get_retriever_class
from hublab.tracking.prompt_registry import (
    OWN,
    PIPE_PROMPTS,
    THESIS_LISTINGS,
    origin,
    register,
)

#: a listing's caption, or the next appendix heading ("A.1.2. Question Augmentation ...", "A.2. ORKG ...")
_HEADING = re.compile(r"^(?:Listing (A\.\d+):.*|A\.\d+(?:\.\d+)*\.\s.*)$", re.M)
_LOCATIONS = {**{name: (module, attr) for name, (module, attr, _on) in get_retriever_class("hublink").prompts.items()},
              **{name: ("hublab.pipeline.prompts", attr) for name, attr in PIPE_PROMPTS.values()}}


def thesis_listings(text: str) -> dict[str, str]:
    """``{"A.1": text, ...}``: everything between a listing's caption and the next caption or appendix heading."""
    heads = list(_HEADING.finditer(text))
    return {h.group(1): text[h.end(): (nxt.start() if nxt else len(text))]
            for h, nxt in zip(heads, [*heads[1:], None], strict=True) if h.group(1)}


def words(text: str) -> list[str]:
    """Lower-case words and numbers only: punctuation, ``*``/``#``/fences and whitespace carry no wording."""
    return re.sub(r"[^0-9a-z]+", " ", text.lower()).split()


def _diff(listing: list[str], code: list[str]) -> str:
    return " ".join(d for d in difflib.ndiff(listing, code) if d[0] in "+-")


@pytest.fixture(scope="module")
def listings(shared: Path) -> dict[str, str]:
    (seed,) = sorted((shared / "seeds").glob("004_*.txt"))
    found = thesis_listings(seed.read_text())
    assert sorted(found) == [f"A.{i}" for i in range(1, 8)], sorted(found)
    return found


@pytest.fixture(scope="module")
def registry(tmp_path_factory):
    import mlflow

    mlflow.set_tracking_uri(f"sqlite:///{tmp_path_factory.mktemp('registry') / 'mlflow.db'}")
    yield mlflow
    mlflow.set_tracking_uri(None)


def test_every_thesis_listing_has_a_registered_prompt():
    assert sorted(THESIS_LISTINGS.values()) == [f"A.{i}" for i in range(1, 8)]
    assert set(THESIS_LISTINGS) <= set(_LOCATIONS)


@pytest.mark.parametrize("name", sorted(THESIS_LISTINGS))
def test_registered_prompt_is_the_thesis_listing_word_for_word(name, listings, registry):
    module, attr = _LOCATIONS[name]
    code = getattr(importlib.import_module(module), attr)
    version = register(name, code, f"{module}:{attr}")
    listing = words(listings[THESIS_LISTINGS[name]])
    assert words(version.template) == listing, f"{name} differs from Listing {THESIS_LISTINGS[name]}: " \
                                               f"{_diff(listing, words(version.template))}"
    assert words(code) == listing
    assert version.tags["origin"] == f"thesis Listing {THESIS_LISTINGS[name]}"


def test_comparison_fails_on_a_one_word_change(listings):
    """The normalisation keeps every word: dropping, adding or changing one is a difference."""
    from hublab.pipeline.prompts import GENERATE

    listing = words(listings["A.7"])
    assert words(GENERATE) == listing
    for changed in (GENERATE.replace(" solely", "", 1), GENERATE.replace("concise", "concise and short", 1),
                    GENERATE.replace("{context_explanation}", "{contexts}", 1)):
        assert words(changed) != listing


def test_prompts_the_thesis_does_not_print_are_labelled_the_projects_own(registry):
    from hublab.retrievers.methods.hublink.prompts import PATH_TO_TEXT
    from hublab.retrievers.methods.mindmap import EXTRACT_PROMPT

    assert origin("hublink_path_to_text") == OWN and origin("mindmap_extract") == OWN
    for name, text in (("hublink_path_to_text", PATH_TO_TEXT), ("mindmap_extract", EXTRACT_PROMPT)):
        assert register(name, text, "test").tags["origin"] == OWN


def test_a_version_registered_without_an_origin_gets_one(registry):
    """Registries filled before origins were recorded: the unchanged latest version is tagged, not duplicated."""
    from hublab.pipeline.prompts import RERANK
    from hublab.tracking.prompt_registry import to_mlflow_template

    old = registry.genai.register_prompt("pipeline_rerank_legacy", to_mlflow_template(RERANK), tags={"sha256": "x"})
    assert "origin" not in old.tags
    again = register("pipeline_rerank_legacy", RERANK, "test")
    assert again.version == old.version and again.tags["origin"] == OWN  # not in THESIS_LISTINGS under this name
