"""``hublab info``: where HubLab reads and writes here (the one rule of :mod:`hublab.config`), and its version."""

from __future__ import annotations

import json
import os
from pathlib import Path

import typer

from hublab.cli.app import AS_JSON, app


def _why(root: Path) -> str:
    from hublab.config import _INSTALLED_FROM, home

    if os.environ.get("HUBLAB_ROOT"):
        return "$HUBLAB_ROOT"
    here = Path.cwd().resolve()
    if root in (here, *here.parents) and (root / "params.yaml").is_file():
        return "the nearest folder up from here with a params.yaml"
    if root == _INSTALLED_FROM:
        return "the checkout HubLab is installed from (development install)"
    if root == home():
        return "HubLab's home ($HUBLAB_HOME, else $XDG_DATA_HOME/hublab or ~/.local/share/hublab): no project here"
    return "given"


@app.command("info")
def info_cmd(as_json: bool = AS_JSON) -> None:
    """Where HubLab reads and writes from this folder: the project folder and why it is the one, its settings and
    pipelines (its own or the shipped defaults), and where runs, indices, caches and MLflow records go."""
    from hublab import __version__
    from hublab.config import defaults_root, settings

    st = settings()
    own = st.root / "params.yaml"
    doc = {"version": __version__, "project": str(st.root), "why": _why(st.root),
           "params": str(own) if own.is_file() else f"{defaults_root()}/params.yaml (shipped defaults)",
           "pipelines": str(st.pipelines_dir()), "mlflow": st.tracking_uri(), "indices": str(st.index_dir()),
           "cache": str(st.cache_dir()), "runs": str(st.root / "outputs" / "runs"),
           "reports": str(st.root / "reports")}
    if as_json:
        typer.echo(json.dumps(doc, indent=1))
        return
    width = max(map(len, doc))
    for key, value in doc.items():
        typer.echo(f"{key:<{width}}  {value}")
