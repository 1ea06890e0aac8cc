"""Registry of retriever methods: each module (or sub-package) in :mod:`hublab.retrievers.methods` *is*
one method, and its name is the pipeline's ``retriever.type``. Adding a method is adding a file.

The facts a method's class declares (``thesis_name``, ``uses_llm``, ``default_pipeline``, ``prompts``) are read
through here by reports, tuning, tracking and the LLM preflight (``uses_llm``: whether the pipeline's LLM is
called at all), so none of them keeps its own list of methods.

Modules are imported lazily, so a pipeline loads only the method it uses (and its heavy dependencies).
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
from pathlib import Path
from typing import Any

from hublab.errors import InputError
from hublab.retrievers import methods
from hublab.retrievers.base import Resources, Retriever, check_params_declaration

_CACHE: dict[str, type[Retriever]] = {}
_PLUGINS: dict[str, type[Retriever]] = {}
#: the entry-point group through which an installed package adds methods (docs/adding-a-retriever.md)
ENTRY_POINT_GROUP = "hublab.retrievers"
_ENTRY_POINTS: dict[str, Any] = {}
_SCANNED: list[bool] = []


def _entry_points() -> dict[str, Any]:
    """name → entry point of every installed plugin method (``[project.entry-points."hublab.retrievers"]``), read
    once per process; a plugin whose name is a built-in method's is refused, never silently shadowed."""
    if not _SCANNED:
        from importlib.metadata import entry_points

        builtin = {m.name for m in pkgutil.iter_modules(methods.__path__) if not m.name.startswith("_")}
        for ep in sorted(entry_points(group=ENTRY_POINT_GROUP), key=lambda e: e.name):
            if ep.name in builtin:
                raise InputError(f"the installed plugin {ep.value!r} names its method {ep.name!r}, a built-in method's "
                                 f"name (entry point group {ENTRY_POINT_GROUP}): rename it")
            _ENTRY_POINTS[ep.name] = ep
        _SCANNED.append(True)
    return _ENTRY_POINTS


def _load_plugin(name: str) -> type[Retriever]:
    ep = _entry_points()[name]
    try:
        cls = ep.load()
    except Exception as exc:  # noqa: BLE001 - whatever the plugin's import raises, say which plugin it was
        raise InputError(f"the plugin method {name!r} ({ep.value}) does not import: {type(exc).__name__}: {exc}",
                         field="retriever.type") from None
    if not (inspect.isclass(cls) and issubclass(cls, Retriever) and not inspect.isabstract(cls)):
        raise InputError(f"the plugin method {name!r} ({ep.value}) is not a concrete hublab Retriever class",
                         field="retriever.type")
    return register(name)(cls)


def register(name: str):
    """Register a method defined *outside* this package (a plugin, a test double) under ``name``.
    Methods inside ``retrievers/methods/`` need no registration: their file is it.

    Raises TypeError where the class declares its parameters other than as a ``params_type`` dataclass (keyword-only
    ``__init__`` arguments), which would otherwise silently not be parameters."""

    def deco(cls: type[Retriever]) -> type[Retriever]:
        check_params_declaration(cls)
        cls.name = name
        _PLUGINS[name] = cls
        return cls

    return deco


def available(*, plugins: bool = True) -> list[str]:
    """Every method name (the module names under ``retrievers/methods/``, plus registered and installed plugins:
    the ``hublab.retrievers`` entry points), sorted."""
    names = {m.name for m in pkgutil.iter_modules(methods.__path__) if not m.name.startswith("_")}
    return sorted(names | (set(_PLUGINS) | set(_entry_points()) if plugins else set()))


def get_retriever_class(name: str) -> type[Retriever]:
    """The one concrete :class:`Retriever` subclass defined in ``retrievers/methods/<name>``."""
    if name in _PLUGINS:
        return _PLUGINS[name]
    if name in _entry_points():
        return _load_plugin(name)
    if name in _CACHE:
        return _CACHE[name]
    known = available()
    if name not in known:
        raise InputError(f"unknown retriever type {name!r}; valid: {', '.join(known)}", field="retriever.type")
    mod = importlib.import_module(f"{methods.__name__}.{name}")
    found = [
        obj for obj in vars(mod).values()
        if inspect.isclass(obj) and issubclass(obj, Retriever) and not inspect.isabstract(obj)
        and obj.__module__.startswith(mod.__name__)
    ]
    if len(found) != 1:
        raise TypeError(f"{mod.__name__} must define exactly one concrete Retriever, found {found}")
    cls = found[0]
    check_params_declaration(cls)
    cls.name = name
    _CACHE[name] = cls
    return cls


def validate_retriever(name: str, params: dict[str, Any], *, source: str | None = None) -> dict[str, Any]:
    """Check a pipeline's ``retriever`` section before anything runs (see :meth:`Retriever.validate_params`)."""
    try:
        cls = get_retriever_class(name)
    except InputError as exc:
        raise InputError(exc.detail, file=source, field="retriever.type") from None
    return cls.validate_params(params, source=source)


def build_retriever(name: str, resources: Resources, params: dict[str, Any], *,
                    source: str | None = None) -> Retriever:
    return get_retriever_class(name).create(resources, validate_retriever(name, params, source=source))


def default_pipelines(root: Path) -> list[Path]:
    """The default comparison (``hublab report compare``, ``hublab tune-all``): every registered method whose class
    names a ``default_pipeline`` that exists under ``<root>/pipelines/`` (a plugin names its own file by an absolute
    path, inside its package), ordered by ``compare_group``, then name."""
    found = []
    for name in available():
        cls = get_retriever_class(name)
        path = Path(root) / "pipelines" / cls.default_pipeline if cls.default_pipeline else None
        if path is not None and path.exists():
            found.append((cls.compare_group, name, path))
    return [path for _group, _name, path in sorted(found)]


def thesis_names() -> dict[str, str]:
    """``{method: its name in the thesis's result tables}`` for every method the thesis reports."""
    return {name: cls.thesis_name for name in available() if (cls := get_retriever_class(name)).thesis_name}
