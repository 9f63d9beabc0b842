"""The ground floor of the result types: the values every result holds (a protocol, an estimate
with its interval, a paired comparison), the text helpers their tables share, and what every
result with one configuration has in common. Imports nothing that computes.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields

import pandas as pd

from ..core.errors import InputError
from ..fusion.config import Config

SCHEMA_VERSION = 2


def _config(d: dict) -> Config:
    """A configuration dict as a :class:`rrfbench.fusion.config.Config` (a value: loading or
    reading a saved result computes nothing, no engine, retriever or policy fitting is imported;
    ``tests/results/test_results.py`` checks)."""
    return Config.from_json(d)


@dataclass(frozen=True)
class Protocol:
    """How a configuration was chosen and where it was scored.

    ``holdout``: tuned on the queries of ``tune_split``, reported on ``eval_split``.
    ``cv``: ``folds``-fold cross-validation over the queries of ``eval_split`` (= ``tune_split``):
    each query is scored by the configuration chosen on the other folds.
    """

    kind: str
    tune_split: str
    eval_split: str
    folds: int = 0
    seed: int = 0
    reason: str = ""

    def describe(self) -> str:
        if self.kind == "holdout":
            return f"tuned on split {self.tune_split!r}, evaluated on split {self.eval_split!r}"
        return (f"{self.folds}-fold cross-validation over the queries of split "
                f"{self.eval_split!r} (seed {self.seed}): each query is scored by the "
                "configuration chosen on the other folds")

    def to_json(self) -> dict:
        return asdict(self)

    @classmethod
    def from_json(cls, d: dict) -> Protocol:
        return cls(**d)


@dataclass(frozen=True)
class Estimate:
    """A mean over queries with its 95% percentile-bootstrap interval."""

    value: float
    ci95: tuple[float, float]
    n_queries: int

    @classmethod
    def from_json(cls, d: dict) -> Estimate:
        return cls(float(d["value"]), tuple(d["ci95"]), int(d["n_queries"]))


@dataclass(frozen=True)
class Comparison:
    """A baseline on the same queries: its mean and CI, and the paired tests of tuned vs it."""

    name: str
    value: float
    ci95: tuple[float, float]
    delta: float          # tuned - baseline
    p_value: float        # paired randomisation (sign-flip) test
    p_value_t: float      # paired t-test

    @classmethod
    def from_json(cls, d: dict) -> Comparison:
        return cls(d["name"], float(d["value"]), tuple(d["ci95"]), float(d["delta"]),
                   float(d["p_value"]), float(d["p_value_t"]))


TESTS = {"ci": "percentile bootstrap of the mean, 10000 resamples, seed 0",
         "p_value": "paired randomisation (sign-flip) test, 10000 resamples, seed 0, two-sided",
         "p_value_t": "paired t-test, two-sided"}


def _ci(c, sign: str = "") -> str:
    """A 95% interval as text, 4 decimals: ``[0.6700, 0.7500]``."""
    return f"[{c[0]:{sign}.4f}, {c[1]:{sign}.4f}]"


def _flat(v) -> str | float:
    """A scalar cell from a recorded value (a dict becomes ``key=value, ...``)."""
    if isinstance(v, dict):
        return ", ".join(f"{k}={x:.4g}" if isinstance(x, float) else f"{k}={x}"
                         for k, x in v.items() if not isinstance(x, (dict, list, tuple)))
    return v


# Values a person reads are shown at 4 decimals, well above the noise of the numbers behind
# them (a float32 encoding's last bits move a metric by ~1e-7); tables are ordered by what is
# shown, never by the hidden digits (:func:`ranked`).
DISPLAY_DIGITS = 4


def ranked(df, by: str | None = None, label: str | None = "label", digits: int = DISPLAY_DIGITS,
           ascending: bool = False):
    """``df``'s rows ordered as a person reads them: by ``by`` rounded to ``digits`` (the
    precision shown; best first unless ``ascending``), rows equal there by ``label`` ascending
    (a column, or the index when ``label`` is None or not a column), then by position. Two
    values equal up to float noise are shown equal and always in the same order, on every CPU.
    A Series is ordered the same way (by its values, ties by its index)."""
    if isinstance(df, pd.Series):
        name = df.name if df.name is not None else "value"
        return ranked(df.to_frame(name), name, None, digits, ascending)[name].rename(df.name)
    key = df[by].round(digits)
    tie = df[label] if label is not None and label in df.columns else df.index.to_series(
        index=df.index)
    order = pd.DataFrame({"v": key.to_numpy(), "t": tie.astype(str).to_numpy(),
                          "i": range(len(df))})
    order = order.sort_values(["v", "t", "i"], ascending=[ascending, True, True],
                              kind="mergesort")
    return df.iloc[order.i.to_numpy()]


WHICH = ("config", "recommended")


def check_which(which: str) -> str:
    """``which`` names a configuration of a result: ``config`` (selected) or ``recommended``."""
    if which not in WHICH:
        raise InputError(f"--which: {which!r} is not one of {', '.join(WHICH)}")
    return which


def plain(obj):
    """JSON-ready: dataclasses to dicts, tuples to lists."""
    if hasattr(obj, "to_json"):
        return obj.to_json()
    if hasattr(obj, "__dataclass_fields__"):
        return {f.name: plain(getattr(obj, f.name)) for f in fields(obj)}
    if isinstance(obj, dict):
        return {str(k): plain(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [plain(v) for v in obj]
    return obj


class StaticResult:
    """What every result with one configuration (no per-query policy) shares."""

    def policy_for(self, which: str = "config"):
        """A static result holds no per-query policy: ``None``."""
        check_which(which)
        return None
