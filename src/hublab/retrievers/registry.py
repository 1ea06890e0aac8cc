"""Registry of retriever methods: each module (or sub-package) in :mod:`hublab.retrievers.methods` *is*
one method, and its name is the pipeline's ``retriever.type``. Adding a method is adding a file.

The facts a method's class declares (``thesis_name``, ``uses_llm``, ``default_pipeline``, ``prompts``) are read
through here by reports, tuning, tracking and the LLM preflight (``uses_llm``: whether the pipeline's LLM is
called at all), so none of them keeps its own list of methods.

Modules are imported lazily, so a pipeline loads only the method it uses (and its heavy dependencies). Installed
plugins (the ``hublab.retrievers`` entry points) are listed from their metadata, and a plugin's code is imported
only when its method is named: an installed plugin that raises, stalls or misbehaves at import cannot touch a run of
another method. Built-in names always mean the built-in method; a plugin that tries to take one is refused.
"""

from __future__ import annotations

import contextlib
import importlib
import inspect
import pkgutil
import re
import sys
import threading
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from hublab.errors import InputError
from hublab.retrievers import methods
from hublab.retrievers.base import Resources, Retriever, check_params_declaration

_CACHE: dict[str, type[Retriever]] = {}
_PLUGINS: dict[str, type[Retriever]] = {}
#: the entry-point group through which an installed package adds methods (docs/adding-a-retriever.md)
ENTRY_POINT_GROUP = "hublab.retrievers"
#: a plugin method's name: it becomes part of folder and run names, as a built-in's module name does
_PLUGIN_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_-]{0,63}")
_ENTRY_POINTS: dict[str, Any] = {}
#: plugin method name → why it cannot be used (a duplicate name, a failed import, a refused registration): decided
#: once per process, so a broken plugin's import code runs at most once
_BROKEN: dict[str, str] = {}
#: one line per installed entry point that is never used (it names a built-in method, or is not a valid name)
_IGNORED: list[str] = []
#: the name each loaded plugin's class came from: its entry point (None for a class given to :func:`register`)
_ORIGIN: dict[str, Any] = {}
#: the entry point being imported (its import code may call :func:`register`), and refusals made meanwhile
_LOADING: dict[int, Any] = {}
_REFUSALS: list[str] = []
_SCANNED: list[bool] = []


@lru_cache(maxsize=1)
def builtin_names() -> frozenset[str]:
    """The built-in methods: the module names under ``retrievers/methods/`` (no import)."""
    return frozenset(m.name for m in pkgutil.iter_modules(methods.__path__) if not m.name.startswith("_"))


def _one_line(text: object, limit: int = 300) -> str:
    flat = " ".join(str(text).split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def _who(ep: Any) -> str:
    """``plugin 'x' (distribution hublab-x 0.1.0, entry point mod:Cls)``: how every message names a plugin."""
    dist = getattr(ep, "dist", None)
    made = f"distribution {dist.name} {dist.version}, " if dist is not None else ""
    return f"plugin {ep.name!r} ({made}entry point {ep.value})"


def _entry_points() -> dict[str, Any]:
    """name → entry point of every usable installed plugin method, read once per process from the packages'
    metadata (nothing of a plugin is imported). One that names a built-in method is ignored (listed by
    :func:`plugin_problems`); a name two distributions declare is refused when it is used."""
    if not _SCANNED:
        from importlib.metadata import entry_points

        _SCANNED.append(True)
        try:
            found = sorted(entry_points(group=ENTRY_POINT_GROUP), key=lambda e: (e.name, e.value))
        except Exception as exc:  # noqa: BLE001 - damaged package metadata must not stop a built-in method's run
            _IGNORED.append(f"the installed plugins' metadata could not be read: {_one_line(exc)}")
            found = []
        for ep in found:
            if ep.name in builtin_names():
                _IGNORED.append(f"{_who(ep)} is ignored: {ep.name!r} is a built-in method, which a plugin cannot "
                                "replace (rename its entry point)")
            elif not _PLUGIN_NAME.fullmatch(ep.name):
                _IGNORED.append(f"{_who(ep)} is ignored: a method name is letters, digits, '_' and '-' (at most "
                                "64), as it names folders and runs")
            elif ep.name in _ENTRY_POINTS:
                _BROKEN[ep.name] = (f"the plugin method {ep.name!r} is declared by two installed plugins, "
                                    f"{_who(_ENTRY_POINTS[ep.name])} and {_who(ep)}: uninstall one")
            else:
                _ENTRY_POINTS[ep.name] = ep
    return _ENTRY_POINTS


def _load_plugin(name: str) -> type[Retriever]:
    """Import the plugin's module (once; its failure is remembered) and check its class."""
    if name in _BROKEN:
        raise InputError(_BROKEN[name], field="retriever.type")
    ep = _ENTRY_POINTS[name]
    refused = len(_REFUSALS)
    problem = None
    _LOADING[threading.get_ident()] = ep
    try:  # what its import code prints goes to stderr: stdout may be a --json answer
        with contextlib.redirect_stdout(sys.stderr):
            cls = ep.load()
    except (Exception, SystemExit) as exc:  # noqa: BLE001 - whatever the plugin's import raises, name the plugin
        problem = f"{_who(ep)} does not import: {type(exc).__name__}: {_one_line(exc)}"
    finally:
        _LOADING.pop(threading.get_ident(), None)
    if len(_REFUSALS) > refused:  # a refusal the plugin's import code caught and went on from still refuses it
        problem = _REFUSALS[refused]
    elif problem is None and not (inspect.isclass(cls) and issubclass(cls, Retriever) and not inspect.isabstract(cls)):
        problem = f"{_who(ep)} is not a concrete hublab Retriever class"
    elif problem is None and _is_builtin_class(cls):
        problem = f"{_who(ep)} is refused: it names the built-in class {cls.__module__}.{cls.__qualname__}, which " \
                  "would be renamed (subclass it instead)"
    elif problem is None:
        try:
            check_params_declaration(cls)
        except TypeError as exc:
            problem = f"{_who(ep)} is refused: {_one_line(exc, 500)}"
    if problem is not None:
        _BROKEN[name] = problem
        raise InputError(problem, field="retriever.type")
    cls.name = name
    _PLUGINS[name] = cls
    _ORIGIN[name] = ep
    return cls


def _is_builtin_class(cls: type) -> bool:
    """A class defined in ``retrievers/methods/``: registering it under another name would rename the built-in."""
    return str(getattr(cls, "__module__", "")).startswith(f"{methods.__name__}.")


def _refuse_name(name: str, cls: type) -> None:
    """A plugin (or any caller) never takes a built-in method's name, and a plugin never takes another installed
    plugin's: the run would carry the other method's name (and its checkpoints) with this one's answers."""
    loading = _LOADING.get(threading.get_ident())
    who = _who(loading) if loading is not None else f"the class {cls.__module__}.{cls.__qualname__}"
    if name in builtin_names():
        why = f"{name!r} is the built-in method's name, which a plugin cannot replace: register it under its own name"
    elif not isinstance(name, str) or not _PLUGIN_NAME.fullmatch(name):
        why = "a method name is letters, digits, '_' and '-' (at most 64), as it names folders and runs"
    elif _is_builtin_class(cls):
        why = f"{cls.__qualname__} is a built-in method's class, which would be renamed (subclass it instead)"
    elif loading is not None and name in _entry_points() and _ENTRY_POINTS[name] is not loading:
        why = f"{name!r} is the method of {_who(_ENTRY_POINTS[name])}"
    else:
        return
    message = f"{who} registers the method {name!r}, refused: {why}"
    _REFUSALS.append(message)
    raise InputError(message, field="retriever.type")


def register(name: str):
    """Register a method defined *outside* this package (a plugin, a test double) under ``name``.
    Methods inside ``retrievers/methods/`` need no registration: their file is it.

    Raises TypeError where the class declares its parameters other than as a ``params_type`` dataclass (keyword-only
    ``__init__`` arguments), which would otherwise silently not be parameters; InputError where ``name`` is a
    built-in method's (or, from a plugin's import code, another installed plugin's)."""

    def deco(cls: type[Retriever]) -> type[Retriever]:
        check_params_declaration(cls)
        _refuse_name(name, cls)
        cls.name = name
        _PLUGINS[name] = cls
        _ORIGIN.setdefault(name, None)
        return cls

    return deco


def available(*, plugins: bool = True, usable: bool = False) -> list[str]:
    """Every method name (the module names under ``retrievers/methods/``, plus registered and installed plugins:
    the ``hublab.retrievers`` entry points, read from metadata, none imported), sorted; ``usable``: without the
    plugins known not to load (after :func:`plugin_problems`, every one that does not)."""
    names = set(builtin_names())
    if plugins:
        names |= set(_PLUGINS) | set(_entry_points()) | set(_BROKEN)
    return sorted(names - set(_BROKEN) if usable else names)


def get_retriever_class(name: str) -> type[Retriever]:
    """The method's class: a built-in's one concrete :class:`Retriever` subclass in ``retrievers/methods/<name>``,
    else a registered plugin's, else an installed plugin's (imported now, the first time it is named)."""
    if name in builtin_names():
        return _builtin(name)
    if name in _PLUGINS:
        return _PLUGINS[name]
    _entry_points()
    if name in _BROKEN:
        raise InputError(_BROKEN[name], field="retriever.type")
    if name in _ENTRY_POINTS:
        return _load_plugin(name)
    raise InputError(f"unknown retriever type {name!r}; valid: {', '.join(available())}", field="retriever.type")


def _builtin(name: str) -> type[Retriever]:
    if name in _CACHE:
        return _CACHE[name]
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


#: how long ``hublab list`` waits for one plugin's import before it reports the plugin as stalled and goes on
LIST_IMPORT_DEADLINE_S = 20.0


def plugin_problems(deadline_s: float | None = None) -> list[str]:
    """One line per installed plugin that cannot be used (``hublab list``): each named plugin is imported here, so
    one that fails to is reported, never raised, and one whose import stalls is reported after ``deadline_s``
    (its import goes on in a daemon thread, which ends with the process)."""
    deadline_s = LIST_IMPORT_DEADLINE_S if deadline_s is None else deadline_s
    names = sorted(set(_entry_points()) | set(_BROKEN))  # the scan first: it finds the ignored entry points
    lines = list(_IGNORED)
    for name in names:
        outcome: list[str | None] = []

        def load(name: str = name, outcome: list[str | None] = outcome) -> None:
            try:
                get_retriever_class(name)
                outcome.append(None)
            except InputError as exc:
                outcome.append(exc.detail)

        stdout = sys.stdout
        worker = threading.Thread(target=load, name=f"hublab-plugin-{name}", daemon=True)
        worker.start()
        worker.join(deadline_s)
        if worker.is_alive():
            sys.stdout = stdout  # the stalled import's redirection of its prints must not take this command's
            _BROKEN.setdefault(name, f"{_who(_ENTRY_POINTS[name])} did not finish importing in {deadline_s:g} s")
            lines.append(_BROKEN[name])
        elif outcome and outcome[0] is not None:
            lines.append(outcome[0])
    return lines


@dataclass(frozen=True)
class PluginCode:
    """What identifies a plugin method's code in a run's identity: its origin (``distribution==version``, or the
    module of a class given to :func:`register`) and the source files of its package."""

    origin: str
    paths: tuple[Path, ...]


def plugin_code(name: str) -> PluginCode | None:
    """None for a built-in method (its code is HubLab's own source tree); else the plugin's origin and the files
    (the ``*.py`` under each returned folder) whose bytes are its code: the entry point's top-level package, the
    class's, and the distribution's listed modules."""
    if name in builtin_names():
        return None
    cls = get_retriever_class(name)
    ep = _ORIGIN.get(name)
    modules = [cls.__module__]
    if ep is not None:
        dist = getattr(ep, "dist", None)
        origin = f"{dist.name}=={dist.version}" if dist is not None else f"entry point {ep.value}"
        # the entry point's whole top-level package, and the class's (when it lives in another one)
        modules = sorted({ep.module.split(".")[0], cls.__module__.split(".")[0]})
    else:
        origin = f"module {cls.__module__}"
    paths: list[Path] = []
    for mod_name in modules:
        mod = sys.modules.get(mod_name)
        if mod is None:
            continue
        if ep is not None and getattr(mod, "__path__", None):
            paths += [Path(p) for p in mod.__path__]
        elif getattr(mod, "__file__", None):
            paths.append(Path(mod.__file__))
    paths += _distribution_sources(getattr(ep, "dist", None))
    return PluginCode(origin, tuple(paths))


def _distribution_sources(dist: Any) -> list[Path]:
    """The ``*.py`` files an installed distribution lists (its RECORD): modules of its other top-level packages that
    the plugin's code may import. An editable install lists none of its sources (its folder is hashed instead)."""
    try:
        files = sorted(str(f) for f in (dist.files or []) if str(f).endswith(".py")) if dist is not None else []
        return [Path(dist.locate_file(f)) for f in files if "__pycache__" not in f]
    except Exception:  # noqa: BLE001 - unreadable metadata: the package folder is still hashed
        return []


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
    path, inside its package), ordered by ``compare_group``, then name. The default list names every installed
    plugin, so each is imported here; one that cannot be is an error naming it (name the pipelines instead)."""
    found = []
    for name in available():
        cls = get_retriever_class(name)
        path = Path(root) / "pipelines" / cls.default_pipeline if cls.default_pipeline else None
        if path is not None and path.exists():
            found.append((cls.compare_group, name, path))
    return [path for _group, _name, path in sorted(found)]


def thesis_names() -> dict[str, str]:
    """``{method: its name in the thesis's result tables}`` for every built-in method the thesis reports (a plugin
    is not in the thesis: no plugin is imported for this)."""
    return {name: cls.thesis_name for name in sorted(builtin_names()) if (cls := _builtin(name)).thesis_name}
