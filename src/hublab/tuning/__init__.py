"""Parameter studies with Optuna: the thesis's OFAT selection (Ch. 9), TPE and NSGA-II extensions."""
