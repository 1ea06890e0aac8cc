"""Parameter studies with Optuna: the thesis's OFAT selection (Ch. 9), TPE and NSGA-II extensions."""

#: the submodules, one per concern of a study; importing the package loads none of them
__all__ = ["fair", "graph_comparison", "interrupts", "ofat", "orchestrate", "pruning", "report", "reuse", "runner_eval",
           "space", "storage", "study", "study_open", "study_spec"]
