"""Project folders for the benchmarks that time HubLab's commands as a user types them: a folder with the
repository's ``params.yaml`` (optionally another graph-store mode) as ``HUBLAB_ROOT``, so that a command's index,
MLflow runs and outputs stay out of the repository."""

from __future__ import annotations

import shutil
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]


def project(root: Path, *, store_mode: str | None = None, share_stores: bool = False, fresh: bool = False) -> Path:
    """``root`` made a project folder and returned.

    Args:
        root: the folder (created).
        store_mode: ``user_graphs.store.mode`` in its params (``disk`` or ``memory``); None keeps the repository's.
        share_stores: its ``.cache/graph-stores`` is the repository's (a symlink), so a store one command built is
            the one the next reuses, as for a user working in one folder.
        fresh: everything in ``root`` from an earlier run (indices, runs) removed first.
    """
    if fresh:
        shutil.rmtree(root, ignore_errors=True)
    (root / ".cache").mkdir(parents=True, exist_ok=True)
    text = (ROOT / "params.yaml").read_text()
    if store_mode is not None:
        params = yaml.safe_load(text)
        params["user_graphs"]["store"] = {"mode": store_mode}
        text = yaml.safe_dump(params)
    (root / "params.yaml").write_text(text)
    if share_stores:
        stores = root / ".cache" / "graph-stores"
        (ROOT / ".cache" / "graph-stores").mkdir(parents=True, exist_ok=True)  # a cold step may have removed it
        if not stores.is_symlink():
            stores.symlink_to(ROOT / ".cache" / "graph-stores")
    return root
