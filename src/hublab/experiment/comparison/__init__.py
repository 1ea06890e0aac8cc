"""The comparison reports: our runs next to each other and next to the thesis's numbers.

Three reports share one thesis lookup (:mod:`.thesis`) and one table writer (:mod:`.tables`):

- :mod:`.single_graph` — ``hublab report compare --graph G``: the chosen methods on one graph, one table;
- :mod:`.default_vs_tuned` — ``hublab report compare`` (DVC stage ``compare``): every LLM-free method with its
  default and its tuned parameters at one output bound, on GV1 and the GV3 export, with bootstrap intervals,
  paired tests and a chart;
- :mod:`.evaluations` — ``hublab report summary`` (DVC stage ``summary``): every evaluation of params.yaml.
"""

#: the submodules: the three reports and what they share; importing the package loads none of them
__all__ = ["committed", "default_vs_tuned", "display", "evaluations", "single_graph", "statistics"]
