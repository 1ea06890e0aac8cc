"""The thesis's one-factor-at-a-time procedure (§9.1.1): base once, then each factor's other values
with every other factor at base; per-factor winners by Recall, Hits@10 breaking ties (§9.1.2)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from hublab.tuning.space import SearchSpace, encode_value, get_path, same_value, set_path


@dataclass(frozen=True)
class OfatTrial:
    """One configuration of the OFAT grid. ``factor`` is None for the base configuration."""

    factor: str | None
    value: Any
    overrides: dict[str, Any] = field(default_factory=dict)

    @property
    def key(self) -> str:
        return "base" if self.factor is None else f"{self.factor}={encode_value(self.value)}"


def base_values(space: SearchSpace, base_cfg: dict[str, Any]) -> dict[str, Any]:
    """The base value of every factor, read from the base config (None when the config lacks it)."""
    return {f.path: get_path(base_cfg, f.path, None) for f in space.factors}


def ofat_trials(space: SearchSpace, base_cfg: dict[str, Any]) -> list[OfatTrial]:
    """Exactly the OFAT trial list: the base, then each factor's non-base values in the given order."""
    base = base_values(space, base_cfg)
    trials = [OfatTrial(None, None, {})]
    seen = {encode_value({})}
    for f in space.factors:
        for v in f.values:
            if same_value(v, base[f.path]):
                continue
            overrides = {f.path: v}
            sig = encode_value(overrides)
            if sig in seen:
                continue
            seen.add(sig)
            trials.append(OfatTrial(f.path, v, overrides))
    return trials


def apply_overrides(base_cfg: dict[str, Any], overrides: dict[str, Any]) -> dict[str, Any]:
    cfg = base_cfg
    for path, value in overrides.items():
        cfg = set_path(cfg, path, value)
    return cfg


@dataclass
class FactorRow:
    factor: str
    value: Any
    is_base: bool
    recall: float | None
    hits: float | None
    delta_recall_pct: float | None
    delta_hits_pct: float | None
    chosen: bool = False


def _pct(value: float | None, base: float | None) -> float | None:
    if value is None or base is None or base == 0:
        return None
    return 100.0 * (value - base) / base


def ofat_table(
    space: SearchSpace,
    base_cfg: dict[str, Any],
    scores: dict[str, tuple[float | None, float | None]],
    *,
    tie_tolerance: float = 5e-4,
) -> tuple[list[FactorRow], dict[str, Any]]:
    """Thesis-shaped table (value, Recall, Hits@10, Δ% vs base) and the chosen value per factor.

    ``scores`` maps OfatTrial.key -> (recall, hits@10). Rule (§9.1.2): highest Recall; values within
    ``tie_tolerance`` of the best Recall are separated by Hits@10; a remaining tie keeps the base.
    """
    base = base_values(space, base_cfg)
    base_recall, base_hits = scores.get("base", (None, None))
    rows: list[FactorRow] = []
    chosen: dict[str, Any] = {}
    for f in space.factors:
        frows: list[FactorRow] = []
        for v in f.values:
            is_base = same_value(v, base[f.path])
            key = "base" if is_base else OfatTrial(f.path, v).key
            recall, hits = scores.get(key, (None, None))
            frows.append(FactorRow(f.name, v, is_base, recall, hits,
                                   None if is_base else _pct(recall, base_recall),
                                   None if is_base else _pct(hits, base_hits)))
        if base[f.path] is not None and not any(r.is_base for r in frows):
            # Base value outside the listed range (e.g. alpha 5 vs range 0,3,6,9): show it as its own row.
            frows.insert(0, FactorRow(f.name, base[f.path], True, base_recall, base_hits, None, None))
        scored = [r for r in frows if r.recall is not None]
        if scored:
            best_recall = max(r.recall for r in scored)  # type: ignore[type-var]
            top = [r for r in scored if best_recall - r.recall <= tie_tolerance]  # type: ignore[operator]
            best_hits = max((r.hits if r.hits is not None else float("-inf")) for r in top)
            top = [r for r in top if (r.hits if r.hits is not None else float("-inf")) == best_hits]
            pick = next((r for r in top if r.is_base), top[0])
            pick.chosen = True
            chosen[f.path] = pick.value
        rows.extend(frows)
    return rows, chosen
