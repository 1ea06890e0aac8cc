"""The comparison table for a paper (issue #44, item 3): Holm's correction, the paired difference from the best with
its interval, p-values as papers print them, display names, and the LaTeX rendering of the same cells."""

from __future__ import annotations

import numpy as np
import pytest

from hublab.evaluation.significance import difference, holm
from hublab.experiment.comparison.display import display_name, p_text
from hublab.reports import tables


def test_holm_adjusts_in_the_inputs_order_monotone_and_capped():
    # sorted 0.005, 0.01, 0.03, 0.04 times 4, 3, 2, 1 = 0.02, 0.03, 0.06, 0.04 -> monotone 0.02, 0.03, 0.06, 0.06
    assert holm([0.01, 0.04, 0.03, 0.005]) == pytest.approx([0.03, 0.06, 0.06, 0.02])
    assert holm([0.5, 0.9]) == [1.0, 1.0] and holm([]) == [] and holm([0.2]) == [0.2]


def test_the_difference_from_the_best_is_paired():
    rng = np.random.default_rng(1)
    base = rng.random(60)
    shifted = base - 0.1  # every question 0.1 lower: a paired interval is a point, an unpaired one would be wide
    d, (lo, hi) = difference(shifted, base)
    assert d == pytest.approx(-0.1) and lo == pytest.approx(-0.1) and hi == pytest.approx(-0.1)
    noisy = base - 0.1 + rng.normal(0, 0.05, 60)
    d, (lo, hi) = difference(noisy, base)
    assert lo < d < hi < 0 and hi - lo < 0.05
    with pytest.raises(ValueError, match="differ in length"):
        difference([1.0], [1.0, 0.0])


def test_p_values_and_names_as_a_paper_prints_them():
    assert p_text(0.0002) == "< 0.001" and p_text(0.0699) == "0.070" and p_text(None) == "–"
    assert [display_name(m) for m in ("hublink", "four_step_focus", "difar", "bm25", "my_plugin")] == [
        "HubLink", "4StepFocus", "DiFaR", "BM25", "my_plugin"]


def test_latex_has_the_markdown_cells_escaped():
    cols = [tables.Column("method", lambda r: r[0]), tables.Column("MAP@10 [95% CI]", lambda r: r[1]),
            tables.Column("p vs best", lambda r: r[2])]
    rows = [("HubLink", "0.572 [0.527, 0.617]", "**best**"), ("four_step_focus", "0.226", "< 0.001")]
    tex = tables.latex_table(cols, rows, caption="50% of x & y", label="tab:x")
    assert r"MAP@10 [95\% CI] & p vs best \\" in tex
    assert r"HubLink & 0.572 [0.527, 0.617] & \textbf{best} \\" in tex
    assert r"four\_step\_focus & 0.226 & $<$ 0.001 \\" in tex
    assert r"\caption{50\% of x \& y}" in tex and tex.startswith(r"\begin{table}") and "\\toprule" in tex


def test_what_tuning_changed_is_said_against_the_methods_effective_defaults():
    """The comparison's ``changed_params``: a value spelled out equal to the method's default is no change, the
    comparison's own output bound is left out, floats are shown to 4 significant digits."""
    from pathlib import Path

    from hublab.experiment.comparison.default_vs_tuned import changed_params
    from hublab.pipeline.config import load_pipeline

    repo = Path(__file__).resolve().parents[2]
    default = load_pipeline(repo / "pipelines" / "bm25.yaml")
    same = load_pipeline(repo / "pipelines" / "bm25.yaml")
    same.retriever_params.update({"max_output_triples": 20, "k1": default.retriever_params.get("k1", 1.5)})
    assert changed_params(default, same) == ""
    same.retriever_params["k1"] = 0.21450302218974038
    assert changed_params(default, same) == "k1=0.2145"
