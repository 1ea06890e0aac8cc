"""kill -9 during ``hublab run`` (HubLink LLM-free pipeline, 8 GV3 questions, --no-carbon): SIGKILLs at five
points — MLflow run open but no question done, after 1 and 3 finished questions, mid-question, and after the
last question (generation metrics / artifacts) — each rerun resuming the previous state; the final rerun must
leave exactly what an uninterrupted run leaves."""

from __future__ import annotations

import time
from pathlib import Path

from reliability import killing as K


def test_reference_run_is_complete(reference_run):
    assert reference_run["n_records"] == K.N_QUESTIONS and not any(r["error"] for r in
                                                                  reference_run["records"].values())
    assert len(reference_run["csv_questions"]) == K.N_QUESTIONS
    assert [s for _, s, _ in reference_run["runs"]] == ["FINISHED"]
    assert reference_run["metrics"]["recall_triples"] > 0


def _mid_question(root: Path, n: int):
    """After ``n`` questions are checkpointed, let the next one get under way (a fraction of a question's time)."""
    state: dict[str, float] = {}

    def ready() -> bool:
        if K.checkpoint_lines(root) < n:
            return False
        state.setdefault("t", time.monotonic())
        return time.monotonic() - state["t"] >= 0.05
    return ready


def test_run_killed_at_five_points_then_rerun_equals_uninterrupted_run(indexed_project: Path, reference_run):
    root = indexed_project
    state_file = lambda: next((root / "outputs/runs").glob("*/state.json"), None)  # noqa: E731
    points = [
        ("MLflow run open, no question finished", lambda: state_file() is not None),
        ("after 1 finished question", lambda: K.checkpoint_lines(root) >= 1),
        ("after 3 finished questions", lambda: K.checkpoint_lines(root) >= 3),
        ("mid-question 6", _mid_question(root, 5)),
        ("after the last question (generation metrics, MLflow logging, artifacts)",
         lambda: K.checkpoint_lines(root) >= K.N_QUESTIONS),
    ]
    seen = []
    for i, (label, ready) in enumerate(points):
        proc = K.spawn(root, *K.RUN_ARGS, log=root / f"run-kill-{i}.log")
        assert K.kill_when(proc, ready), f"{label}: the run finished before the kill point"
        seen.append((label, K.checkpoint_lines(root), K.mlflow_runs(root)))
        assert len({rid for rid, _, _ in K.mlflow_runs(root)}) <= 1, (label, seen)  # resumed, never a second run
    got = K.run_outcome(root, K.hublab(root, *K.RUN_ARGS).stdout)
    assert got["n_records"] == K.N_QUESTIONS, seen
    assert got["csv_questions"] == reference_run["csv_questions"]
    assert got["records"] == reference_run["records"]
    assert got["metrics"] == reference_run["metrics"]
    assert got["mlflow_metrics"] == reference_run["mlflow_metrics"]
    # every question's trace is stored before its checkpoint line: none lost to a kill (issue #29)
    assert got["traced"] == reference_run["traced"] and len(got["traced"]) == K.N_QUESTIONS, seen
    assert [r for r, _, _ in got["runs"]] == [got["run_id"]], seen
    assert got["mlflow_status"] == "FINISHED" and [s for _, s, _ in got["runs"]] == ["FINISHED"], seen
