"""What every report shares: the one writer of Markdown, LaTeX and CSV tables (:mod:`hublab.reports.tables`) and
the one lookup of the thesis's numbers by our method and graph names (:mod:`hublab.reports.thesis`). Below the
tracking layer, so a run's artifacts, the comparisons and the tuning reports all use them."""

#: the submodules: the table writer and the thesis lookup
__all__ = ["tables", "thesis"]
