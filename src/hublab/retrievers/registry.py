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
    """Every method name (the module names under ``retrievers/methods/``, plus registered plugins), sorted."""
    names = {m.name for m in pkgutil.iter_modules(methods.__path__) if not m.name.startswith("_")}
    return sorted(names | (set(_PLUGINS) if plugins else set()))


def get_retriever_class(name: str) -> type[Retriever]:
    """The one concrete :class:`Retriever` subclass defined in ``retrievers/methods/<name>``."""
    if name in _PLUGINS:
        return _PLUGINS[name]
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
    names a ``default_pipeline`` that exists under ``<root>/pipelines/``, ordered by ``compare_group``, then name."""
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
