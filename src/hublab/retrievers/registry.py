"""Registry of retriever types: ``@register("hublink")`` on a Retriever subclass makes it buildable
from a pipeline YAML by ``retriever_type``."""

from __future__ import annotations

import importlib
from typing import Any

from hublab.errors import InputError
from hublab.retrievers.base import Resources, Retriever

_REGISTRY: dict[str, type[Retriever]] = {}

# Modules that register retrievers when imported (lazy, so unused heavy deps are not loaded).
_MODULES = {
    "fixed": "hublab.retrievers.simple",
    "vector": "hublab.retrievers.simple",
    "hublink": "hublab.retrievers.hublink.retriever",
    "difar": "hublab.retrievers.difar",
    "bm25": "hublab.retrievers.lexical",
    "hybrid": "hublab.retrievers.lexical",
    "vss": "hublab.retrievers.vss",
    "fidelis": "hublab.retrievers.fidelis",
    "mindmap": "hublab.retrievers.mindmap",
    "tog": "hublab.retrievers.tog",
    "structgpt": "hublab.retrievers.structgpt",
    "four_step_focus": "hublab.retrievers.four_step_focus",
}


def register(name: str):
    def deco(cls: type[Retriever]) -> type[Retriever]:
        _REGISTRY[name] = cls
        cls.name = name
        return cls

    return deco


def get_retriever_class(name: str) -> type[Retriever]:
    if name not in _REGISTRY and name in _MODULES:
        importlib.import_module(_MODULES[name])
    if name not in _REGISTRY:
        known = sorted(set(_REGISTRY) | set(_MODULES))
        raise InputError(f"unknown retriever_type {name!r}; known: {', '.join(known)}", field="retriever_type")
    return _REGISTRY[name]


def build_retriever(name: str, resources: Resources, params: dict[str, Any]) -> Retriever:
    return get_retriever_class(name)(resources, **params)


def available() -> list[str]:
    return sorted(set(_REGISTRY) | set(_MODULES))
