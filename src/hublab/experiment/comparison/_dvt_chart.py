"""The default-vs-tuned comparison's chart: one figure, a panel per graph and question set, written as PNG, SVG and
PDF that are byte-stable across reruns (fixed hash salt, no dates), so DVC sees a change only when a number moves."""

from __future__ import annotations

import math
from pathlib import Path

from hublab.evaluation.significance import ALPHA
from hublab.experiment.comparison._dvt_rows import BOUND, TEST_METRIC, Row, groups, order, title
from hublab.experiment.comparison.display import display_name


def _shared_order(by_group: dict[tuple[str, str], list[Row]]) -> list[tuple[str, str]]:
    """One (method, config) order for every panel: the first panel's (best MAP@10 first), then rows only later
    panels have, in their own order."""
    keys: list[tuple[str, str]] = []
    for group in by_group.values():
        keys += [k for r in order(group) if (k := (r.method, r.config)) not in keys]
    return keys


def _axis_end(rows: list[Row]) -> float:
    """Just past the largest interval end or thesis marker, on a 0.05 grid (never the whole 0–1 range)."""
    top = max([r.ci[TEST_METRIC][1] for r in rows] + [r.thesis_map or 0.0 for r in rows] + [0.05])
    return min(1.0, math.ceil(top * 20 + 0.2) / 20)


def chart(rows: list[Row], out_dir: Path, *, bound: int = BOUND, titles: dict[tuple[str, str], str] | None = None,
          suptitle: str | None = None) -> list[Path]:
    """One figure, one panel per graph and question set, every panel in the same method order: each method's
    default and tuned MAP@10 with its 95% interval, the thesis's (LLM) MAP@10 as a marker, and the values in a
    column of their own right of the axis (no marker ever covers one). PNG, SVG and PDF, offline and byte-stable."""
    import io

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch
    from matplotlib.transforms import blended_transform_factory

    from hublab.atomic import write_bytes_atomic

    by_group = groups(rows)
    keys = _shared_order(by_group)
    end = _axis_end(rows)
    plt.rcParams.update({"font.size": 11, "svg.hashsalt": "hublab"})
    fig, axes = plt.subplots(1, len(by_group), figsize=(5.6 * len(by_group), 0.34 * len(keys) + 2.2), squeeze=False,
                             sharey=True)
    colors = {"default": "#9aa5b1", "tuned": "#1f77b4"}
    y = {key: len(keys) - 1 - i for i, key in enumerate(keys)}  # best at the top
    for ax, ((graph, subset), group) in zip(axes[0], by_group.items(), strict=True):
        side = blended_transform_factory(ax.transAxes, ax.transData)
        for r in group:
            yi, v = y[(r.method, r.config)], r.metrics[TEST_METRIC]
            lo, hi = r.ci[TEST_METRIC]
            ax.barh(yi, v, xerr=[[v - lo], [hi - v]], color=colors[r.config], capsize=2, error_kw={"elinewidth": 0.8})
            mark = "" if r.best or (r.p_holm or 0) < ALPHA else " ≈"
            ax.text(1.02, yi, f"{v:.3f}{mark}", transform=side, va="center", fontsize=9, clip_on=False)
            if r.thesis_map is not None:
                ax.plot(r.thesis_map, yi, marker="D", color="#d62728", markersize=6, zorder=3, ls="")
        ax.set_yticks(list(y.values()), [f"{display_name(m)} ({c})" for m, c in y])
        ax.set_xlim(0, end)
        ax.set_xlabel(f"MAP@10 at ≤{bound} triples/question")
        ax.set_title(title(graph, subset, group[0].n_questions, titles), fontsize=11)
        ax.grid(axis="x", alpha=0.3)
    handles = [Patch(color=colors["default"], label="default"), Patch(color=colors["tuned"], label="tuned")]
    if any(r.thesis_map is not None for r in rows):
        handles.append(Line2D([], [], marker="D", color="#d62728", ls="", label="thesis MAP@10 (LLM system, o3-mini)"))
    fig.legend(handles=handles, loc="lower center", ncol=3, frameon=False)
    if suptitle:  # another comparison's title, wrapped to the figure's width (a single panel is narrow)
        import textwrap

        suptitle = textwrap.fill(suptitle, width=int(11 * 5.6 * len(by_group)))
    fig.suptitle(suptitle or "Every LLM-free method, default and tuned (same TPE budget on reduced GV1); bars: 95% "
                 "bootstrap interval; ≈: not significantly below the best (Holm)", fontsize=11)
    top = 0.94 if suptitle is None else 1 - 0.2 * (suptitle.count("\n") + 1) / fig.get_figheight()
    fig.tight_layout(rect=(0, 0.06, 1, top), w_pad=3.0)
    paths = [out_dir / "methods.png", out_dir / "methods.svg", out_dir / "methods.pdf"]
    meta = {".png": None, ".svg": {"Date": None}, ".pdf": {"CreationDate": None, "ModDate": None}}
    for p in paths:
        buf = io.BytesIO()
        fig.savefig(buf, format=p.suffix[1:], dpi=130, metadata=meta[p.suffix])
        write_bytes_atomic(p, buf.getvalue())
    plt.close(fig)
    return paths
