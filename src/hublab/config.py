"""Project settings from ``params.yaml`` and the name → file mapping for graphs and datasets.

Graph and dataset names (``gv1``…``gv4``, ``gv3_orkg``, ``reduced_gv1``) are what ``--graph`` and
``--dataset`` accept everywhere; this module is the one place that turns them into paths.

Where HubLab reads and writes (``hublab info`` prints it) is one rule, :func:`project_root`: the project folder is
``$HUBLAB_ROOT``, else the nearest folder from the current one up that holds a ``params.yaml`` (the repository is
such a project), else the checkout HubLab is installed from in development mode (``pip install -e``), else HubLab's
home: ``$HUBLAB_HOME``, else ``$XDG_DATA_HOME/hublab`` (``~/.local/share/hublab``). Every run, index, cache, MLflow
record and report is written under the project folder (``params.yaml: paths`` relative to it). A project without
its own ``params.yaml`` or ``pipelines/`` reads the defaults the package ships (:func:`defaults_root`): the built-in
pipelines, the parameter defaults and the example graphs.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from hublab.errors import InputError

#: The graph (and dataset) built from the ORKG export: ``snapshot.name`` unless params.yaml names it otherwise.
ORKG_GRAPH = "gv3_orkg"
GRAPH_NAMES = ("gv1", "gv2", "gv3", "gv4", ORKG_GRAPH)


#: the checkout this package was installed from (an editable install: src/hublab/ -> the repo root)
_INSTALLED_FROM = Path(__file__).resolve().parents[2]
#: the defaults a built package ships (pipelines/, params.yaml, examples/: copied in by setup.py's build step)
PACKAGED_DEFAULTS = Path(__file__).resolve().parent / "_defaults"


def defaults_root() -> Path | None:
    """Where the built-in pipelines, the parameter defaults and the example graphs are read from when the project
    has none of its own: the installed package's ``hublab/_defaults``, else the checkout HubLab is installed from;
    None when neither has them."""
    for candidate in (PACKAGED_DEFAULTS, _INSTALLED_FROM):
        if (candidate / "params.yaml").is_file() and (candidate / "pipelines").is_dir():
            return candidate
    return None


def home() -> Path:
    """HubLab's home project, used outside any project folder: ``$HUBLAB_HOME``, else ``$XDG_DATA_HOME/hublab``,
    else ``~/.local/share/hublab``."""
    env = os.environ.get("HUBLAB_HOME")
    if env:
        return Path(env).expanduser().resolve()
    data = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return (Path(data).expanduser() / "hublab").resolve()


def project_root() -> Path:
    """The project folder (the module's rule): $HUBLAB_ROOT, else the nearest parent of the cwd holding params.yaml,
    else the checkout HubLab is installed from (so ``hublab run … --graph my.ttl`` works from a folder of the user's
    own), else HubLab's home (:func:`home`)."""
    env = os.environ.get("HUBLAB_ROOT")
    if env:
        return Path(env).resolve()
    here = Path.cwd().resolve()
    for p in (here, *here.parents):
        if (p / "params.yaml").exists():
            return p
    if (_INSTALLED_FROM / "params.yaml").is_file() and (_INSTALLED_FROM / "pipelines").is_dir():
        return _INSTALLED_FROM
    return home()


def project_tracking_uri(root: Path) -> str:
    """The project's own MLflow store: sqlite under ``mlruns/`` (MLflow 3 refuses the file store)."""
    return f"sqlite:///{(root / 'mlruns' / 'mlflow.db').resolve()}"


#: project URIs HubLab set: ``mlflow.set_tracking_uri`` exports them as ``$MLFLOW_TRACKING_URI``, which must then
#: not be mistaken for the user's choice (a copied checkout would write into the old one's store)
OWN_TRACKING_URIS: set[str] = set()


def tracking_uri(root: Path) -> str:
    """``$MLFLOW_TRACKING_URI`` when the user set it, else the project's sqlite store under ``mlruns/``. Lives here,
    below every package, so the model-URI resolver (embedding) and the runs read one definition."""
    env = os.environ.get("MLFLOW_TRACKING_URI")
    return env if env and env not in OWN_TRACKING_URIS else project_tracking_uri(root)


@lru_cache(maxsize=8)
def _load_params(path: str) -> dict[str, Any]:
    """``params.yaml`` checked against its schema (unknown and duplicated keys, wrong types: refused with file, line
    and key; ``hublab.params_schema``), paths expanded; read once per process and file."""
    from hublab.params_schema import load_params

    return load_params(Path(path))


@dataclass(frozen=True)
class Settings:
    root: Path
    params: dict[str, Any]

    def path(self, key: str) -> Path:
        """A path from ``params.yaml: paths.<key>``, resolved against the repo root."""
        paths = self.params.get("paths", {})
        if key not in paths:
            raise InputError(f"missing key 'paths.{key}'", file=str(self.root / "params.yaml"))
        p = Path(paths[key])
        return p if p.is_absolute() else (self.root / p)

    def section(self, name: str) -> dict[str, Any]:
        return dict(self.params.get(name, {}) or {})

    def with_section(self, name: str, **values: Any) -> Settings:
        """These settings with ``values`` set in section ``name`` (a per-call option over ``params.yaml``)."""
        return Settings(self.root, {**self.params, name: {**self.section(name), **values}})

    # ---- names -> files ----
    def graph_names(self) -> list[str]:
        """What ``--graph`` accepts: the rebuilt variants and the ORKG snapshot."""
        variants = [str(v) for v in self.section("graphs").get("variants", GRAPH_NAMES[:4])]
        return [*variants, str(self.section("snapshot").get("name", ORKG_GRAPH))]

    def dataset_names(self) -> list[str]:
        """What ``--dataset`` accepts by name (a path to a KGQA file is accepted too)."""
        ds = self.section("datasets")
        names = [str(n) for n in (ds.get("files") or {})]
        for extra in ("reduced", "orkg"):
            if (ds.get(extra) or {}).get("name"):
                names.append(str(ds[extra]["name"]))
        return names or list(GRAPH_NAMES)

    def graph_file(self, name: str) -> Path:
        valid = self.graph_names()
        if name not in valid:
            raise InputError(f"unknown graph {name!r}; valid: {', '.join(valid)}", field="--graph")
        if name == self.section("snapshot").get("name", ORKG_GRAPH):
            return self.path("snapshots") / f"{name}.ttl"
        return self.path("graphs") / f"{name}.ttl"

    def dataset_file(self, name: str) -> Path:
        return self.path("datasets") / f"{name}.jsonl"

    def pipelines_dir(self) -> Path:
        """The project's ``pipelines/``, else the shipped built-in pipelines (:func:`defaults_root`)."""
        own = self.root / "pipelines"
        shipped = defaults_root()
        return own if own.is_dir() or shipped is None else shipped / "pipelines"

    def pipeline_files(self) -> list[Path]:
        return sorted(self.pipelines_dir().glob("*.yaml"))

    def pipeline_file(self, arg: str | Path) -> Path:
        """A pipeline as every command takes it: a YAML path, or a name as ``hublab list`` prints it
        (``hublink_local`` → ``pipelines/hublink_local.yaml``; ``tuned/bm25`` → ``pipelines/tuned/bm25.yaml``).
        Neither: an error listing the valid names."""
        path = Path(arg)
        try:
            if path.exists():
                return path
            named = self.pipelines_dir() / f"{arg}.yaml"
            if path.suffix not in (".yaml", ".yml") and named.is_file():
                # as the user would have typed it from the project root
                return Path(os.path.relpath(named)) if named.is_relative_to(Path.cwd().resolve()) else named
        except OSError:  # a name the file system refuses (too long ...): the loader says what is wrong with it
            return path
        stems = [p.stem for p in self.pipeline_files()]
        names = ", ".join(stems) or "none (no pipelines/*.yaml)"
        import difflib

        close = difflib.get_close_matches(path.stem, stems, n=1)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        what = ("pipeline file not found" if path.suffix in (".yaml", ".yml") else f"pipeline not found: {str(arg)!r}")
        raise InputError(f"{what}; valid names (hublab list): {names}, or a path to a pipeline YAML{hint}",
                         file=str(path) if path.suffix in (".yaml", ".yml") else None)

    def graph_for_dataset(self, name: str) -> str:
        """The graph a dataset's golden triples refer to (``reduced_gv1`` → ``gv1``)."""
        reduced = self.section("datasets").get("reduced", {})
        if name == reduced.get("name"):
            return str(reduced.get("graph", "gv1"))
        return name

    def index_dir(self) -> Path:
        return self.path("indices")

    def tracking_uri(self) -> str:
        """The MLflow store runs of this checkout log to (:func:`tracking_uri`)."""
        return tracking_uri(self.root)

    def cache_dir(self) -> Path:
        """``paths.cache``; ``.cache`` under the project when a project's own params.yaml does not set it (a user's
        params.yaml may hold only ``user_graphs``, and a large graph is still kept in the cache)."""
        if "cache" not in self.params.get("paths", {}):
            return self.root / ".cache"
        return self.path("cache")


def settings(root: Path | None = None) -> Settings:
    """The project's settings: its ``params.yaml``, else the shipped defaults (whose example graphs are read where
    they were shipped; everything written still goes under ``root``)."""
    root = (root or project_root()).resolve()
    own = root / "params.yaml"
    shipped = defaults_root()
    if own.is_file() or shipped is None:
        return Settings(root, _load_params(str(own)))
    return Settings(root, _shipped_params(str(shipped)))


@lru_cache(maxsize=2)
def _shipped_params(folder: str) -> dict[str, Any]:
    """The shipped ``params.yaml`` with its declared graphs' relative files made absolute under ``folder`` (they
    were shipped there, not into the project)."""
    params = _load_params(str(Path(folder) / "params.yaml"))
    user = dict(params.get("user_graphs") or {})

    def shipped(source: Any) -> Any:
        if isinstance(source, str) and "://" not in source and not Path(source).is_absolute():
            return str(Path(folder) / source)
        return source

    user["graphs"] = {name: {**spec, "source": shipped(spec.get("source"))} if isinstance(spec, dict) else spec
                      for name, spec in (user.get("graphs") or {}).items()}
    for key in ("index", "runs", "compare"):
        user[key] = [{**e, **{k: shipped(e[k]) for k in ("source", "dataset") if k in e}}
                     if isinstance(e, dict) else e for e in (user.get(key) or [])]
    return {**params, "user_graphs": user}
