"""Resolve a registered embedder, ``models:/<name>/<version>``, to a local sentence-transformers directory.

It lives in the foundation layer, next to ``config`` (not with training, which logs and registers the model, nor in
the embedding package, which imports no MLflow: tests/tracking/test_traces.py), so loading an embedder never
imports the training or tracking layers. The project's own store is used
(:func:`hublab.config.tracking_uri`: sqlite under ``mlruns/``, or ``$MLFLOW_TRACKING_URI``); the registry lives in
the same store. A resolved version is downloaded once to
``.cache/models/mlflow/<name>/<version>/`` (a version's content never changes), so loading it again is offline
and costs nothing.
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
from pathlib import Path
from typing import Any

from hublab.errors import HubLabError

#: Subfolder in which MLflow's sentence_transformers flavour stores the model (``SENTENCE_TRANSFORMERS_DATA_PATH``).
ST_SUBDIR = "model.sentence_transformer"
_URI = re.compile(r"^models:/(?P<name>[^/@]+)(?:/(?P<version>[^/]+)|@(?P<alias>[^/]+))$")


def _uris(root: Path | None) -> tuple[Path, str]:
    from hublab.config import project_root, tracking_uri

    root = root or project_root()
    return root, tracking_uri(root)


def _version(client: Any, name: str, version: str | None, alias: str | None) -> str:
    from mlflow.exceptions import MlflowException

    try:
        if alias:
            return str(client.get_model_version_by_alias(name, alias).version)
        if version in (None, "latest"):
            versions = client.search_model_versions(f"name = '{name}'")
            if not versions:
                raise HubLabError(f"registered model {name!r} has no versions (run `hublab train`)")
            return str(max(int(v.version) for v in versions))
        return str(client.get_model_version(name, version).version)
    except MlflowException as exc:
        raise HubLabError(f"cannot resolve models:/{name}/{version or '@' + str(alias)} in the project's MLflow "
                          f"registry: {exc.message if hasattr(exc, 'message') else exc} (run `hublab train`)") from exc


def resolve_model_uri(uri: str, root: Path | None = None) -> Path:
    """``models:/<name>/<version>`` (or ``/latest``, ``@<alias>``) → local sentence-transformers directory."""
    m = _URI.match(uri)
    if not m:
        raise HubLabError(f"not a registered-model URI: {uri!r} (expected models:/<name>/<version>)")
    os.environ.setdefault("MLFLOW_DISABLE_TELEMETRY", "true")
    from mlflow import MlflowClient
    from mlflow.artifacts import download_artifacts

    from hublab.config import settings

    root, turi = _uris(root)
    client = MlflowClient(tracking_uri=turi, registry_uri=turi)
    name = m["name"]
    version = _version(client, name, m["version"], m["alias"])
    dest = settings(root).cache_dir() / "models" / "mlflow" / re.sub(r"[^A-Za-z0-9_.-]", "_", name) / version
    if (dest / ST_SUBDIR / "modules.json").exists():
        return dest / ST_SUBDIR
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{version}-", dir=dest.parent))
    try:
        # the version's own artifact location, resolved with this client: a ``models:/`` URI handed to
        # download_artifacts would be looked up in MLflow's process-global registry, not the project's
        source = client.get_model_version_download_uri(name, version)
        local = Path(download_artifacts(artifact_uri=source, dst_path=str(tmp), tracking_uri=turi))
        found = sorted(local.rglob(f"{ST_SUBDIR}/modules.json")) if local.is_dir() else []
        if not found:
            raise HubLabError(f"models:/{name}/{version} is not a sentence_transformers-flavour model")
        try:
            found[0].parent.parent.rename(dest)
        except OSError:  # another process got there first
            if not (dest / ST_SUBDIR / "modules.json").exists():
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return dest / ST_SUBDIR
