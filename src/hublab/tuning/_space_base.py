"""The search space's data: factors addressed by dotted paths into the pipeline config, the space that holds them,
their values' stable encoding, and reading and setting a dotted path. Every source of factors and every sampler
builds on these."""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass, field
from typing import Any

#: ``get_path``'s "no default": a missing path raises ``KeyError``
MISSING = object()


@dataclass(frozen=True)
class Factor:
    """One factor: a config path and the values it takes (JSON-serialisable).

    ``values`` is the OFAT grid (and, for TPE/NSGA-II, the choices or the range they span). ``low``/``high``
    (with ``step``/``log``) declare a numeric range for TPE/NSGA-II explicitly; ``kind`` forces the Optuna
    distribution (``int``, ``float``, ``categorical``) instead of inferring it from the values.
    """

    path: str
    values: tuple[Any, ...]
    label: str = ""
    notes: str = ""
    low: float | None = None
    high: float | None = None
    step: float | None = None
    log: bool = False
    kind: str = ""

    @property
    def name(self) -> str:
        return self.label or self.path.rsplit(".", 1)[-1]

    def encoded(self) -> list[str]:
        """Values as stable strings (Optuna categorical choices must be primitives)."""
        return [encode_value(v) for v in self.values]


@dataclass
class SearchSpace:
    factors: list[Factor] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)  # (factor, why) not applicable here

    def by_path(self) -> dict[str, Factor]:
        return {f.path: f for f in self.factors}


def space_record(space: SearchSpace) -> dict[str, dict[str, Any]]:
    """The space as a study records it (JSON, factor path -> its values and range): what a joining worker or a
    resume must match, so that one study never mixes trials drawn from two spaces."""
    return {f.path: {"values": [encode_value(v) for v in f.values], "low": f.low, "high": f.high, "step": f.step,
                     "log": f.log, "kind": f.kind} for f in sorted(space.factors, key=lambda f: f.path)}


def encode_value(value: Any) -> str:
    return json.dumps(value, sort_keys=True)


def same_value(a: Any, b: Any) -> bool:
    """Equal as parameter values: numbers by value (a YAML ``5`` and a config's ``5.0`` are one grid point, not a
    base row plus a duplicate trial), everything else by its JSON encoding (``True`` is not ``1``)."""
    num = (int, float)
    if isinstance(a, num) and isinstance(b, num) and not isinstance(a, bool) and not isinstance(b, bool):
        return a == b
    return encode_value(a) == encode_value(b)


def decode_value(text: str) -> Any:
    return json.loads(text)


def get_path(cfg: dict[str, Any], path: str, default: Any = MISSING) -> Any:
    node: Any = cfg
    for part in path.split("."):
        if not isinstance(node, dict) or part not in node:
            if default is MISSING:
                raise KeyError(path)
            return default
        node = node[part]
    return node


def set_path(cfg: dict[str, Any], path: str, value: Any) -> dict[str, Any]:
    """Return a deep copy of ``cfg`` with ``path`` set (intermediate dicts created)."""
    out = copy.deepcopy(cfg)
    node = out
    parts = path.split(".")
    for part in parts[:-1]:
        nxt = node.get(part)
        if not isinstance(nxt, dict):
            nxt = {}
            node[part] = nxt
        node = nxt
    node[parts[-1]] = copy.deepcopy(value)
    return out
