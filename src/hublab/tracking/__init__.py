"""Experiment runner, MLflow logging, emissions tracking and plots."""
