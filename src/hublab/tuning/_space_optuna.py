"""How a search space's factors appear in Optuna: a distribution per factor (a range, or categorical choices) and the
mapping between config values and parameter values, for TPE and NSGA-II."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from hublab.errors import InputError
from hublab.tuning._space_base import Factor, decode_value, encode_value

#: significant digits a sampled float is used and written with: TPE's arithmetic (numpy's vectorised math) differs
#: between CPUs in the last bits, so unrounded, a tuned pipeline differed in its 17th digit from one machine to another
FLOAT_DIGITS = 12


def _is_primitive(v: Any) -> bool:
    return v is None or isinstance(v, bool | int | float | str)


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _is_number(v: Any) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool)


@dataclass(frozen=True)
class Param:
    """How a factor appears in Optuna: its distribution, and how config values map to parameter values
    (identity, except lists/dicts such as LLM configs, which are categorical JSON strings)."""

    path: str
    distribution: Any  # optuna.distributions.BaseDistribution
    encoded: bool = False

    def to_param(self, value: Any) -> Any:
        if self.encoded:
            return encode_value(value)
        if isinstance(value, bool) or not _is_number(value):
            return value
        from optuna.distributions import IntDistribution

        return int(value) if isinstance(self.distribution, IntDistribution) else float(value)

    def to_value(self, param: Any) -> Any:
        """The config value of a parameter value; a sampled float rounded to :data:`FLOAT_DIGITS` significant digits."""
        if self.encoded and isinstance(param, str):
            return decode_value(param)
        if isinstance(param, float) and type(self.distribution).__name__ == "FloatDistribution":
            return float(f"{param:.{FLOAT_DIGITS}g}")
        return param

    def suggest(self, trial: Any) -> Any:
        """``trial.suggest_*`` with this distribution (a fixed/enqueued value is returned as is)."""
        from optuna.distributions import CategoricalDistribution, FloatDistribution, IntDistribution

        d = self.distribution
        if isinstance(d, IntDistribution):
            return trial.suggest_int(self.path, d.low, d.high, step=d.step, log=d.log)
        if isinstance(d, FloatDistribution):
            return trial.suggest_float(self.path, d.low, d.high, step=d.step, log=d.log)
        assert isinstance(d, CategoricalDistribution)
        return trial.suggest_categorical(self.path, d.choices)


def _gcd_step(values: list[int]) -> int:
    import math

    lo = min(values)
    g = 0
    for v in values:
        g = math.gcd(g, v - lo)
    return g or 1


def optuna_param(f: Factor, base: Any) -> Param:
    """The Optuna distribution of a factor.

    * an explicit range (``low``/``high``) → ``IntDistribution``/``FloatDistribution`` with its step/log;
    * all listed values (and the base value) integers → ``IntDistribution`` over their span, step = the
      largest step that hits every value (10, 20, 30 → step 10);
    * numbers → ``FloatDistribution`` over their span; booleans/strings/None → ``CategoricalDistribution``
      of the native values; lists/dicts → categorical over their JSON encodings.
    ``kind: categorical`` keeps a numeric list categorical (TPE then only tries the listed values).
    """
    from optuna.distributions import CategoricalDistribution, FloatDistribution, IntDistribution

    values = list(f.values) + ([] if base is None else [base])
    if f.kind != "categorical" and (f.low is not None or all(_is_number(v) for v in values)):
        nums = [v for v in values if _is_number(v)]
        if len(nums) != len(values):
            raise InputError(f"factor {f.path}: numeric range but non-numeric values {values!r}", field=f.path)
        lo = min([*nums, *([f.low] if f.low is not None else [])])
        hi = max([*nums, *([f.high] if f.high is not None else [])])
        ints = all(_is_int(v) for v in [*nums, lo, hi]) and (f.step is None or _is_int(f.step))
        if f.kind == "int" and not ints:
            raise InputError(f"factor {f.path}: kind int but non-integer values {values!r}", field=f.path)
        if ints and f.kind != "float":
            if f.log:
                return Param(f.path, IntDistribution(int(lo), int(hi), log=True))
            step = int(f.step) if f.step is not None else (_gcd_step([int(v) for v in nums]) if nums else 1)
            if any((int(v) - int(lo)) % step for v in nums) or (int(hi) - int(lo)) % step:
                step = _gcd_step([int(v) for v in [*nums, lo, hi]])
            return Param(f.path, IntDistribution(int(lo), int(hi), step=step))
        return Param(f.path, FloatDistribution(float(lo), float(hi), log=f.log,
                                               step=None if f.log or f.step is None else float(f.step)))
    if f.kind in ("int", "float"):
        raise InputError(f"factor {f.path}: kind {f.kind} needs numeric values", field=f.path)
    encoded = not all(_is_primitive(v) for v in values)
    choices: list[Any] = []
    for v in values:
        c = encode_value(v) if encoded else v
        if c not in choices:
            choices.append(c)
    return Param(f.path, CategoricalDistribution(choices), encoded)
