"""Result objects: what a sweep or a preset tuning found, built once and only read afterwards.

:class:`SweepResult` (a fusion sweep on one dataset) and :class:`PresetResult` (a studied
system tuned within its own knobs) are frozen dataclasses. They are built in one place,
:mod:`rrfbench.tuning`; report, export, regress, the CLI and the notebooks read their fields.
``to_json()`` / ``from_json()`` round-trip them through ``best.json`` with a
``schema_version``; :func:`load_result` reads any saved result and refuses a file written by an
older rrfbench with a one-line message that says how to regenerate it.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path

from .errors import InputError

SCHEMA_VERSION = 2


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


@dataclass(frozen=True)
class SweepResult:
    """A fusion sweep on one dataset, tuned honestly (see :mod:`rrfbench.tuning`)."""

    dataset: str
    fingerprint: str
    runs: tuple[str, ...]
    metric: str
    protocol: Protocol
    config: dict                       # Config.to_json() plus "label"
    tuned: Estimate                    # on the evaluation queries
    tune_value: float                  # the chosen configuration on the tuning queries
    baselines: dict                    # "best_single", "rrf60_equal" -> Comparison
    singles: dict                      # run name -> mean on the evaluation queries
    optimism: dict                     # where the choice ranks had the grid been tuned on eval
    grid_size: int
    family_best: dict                  # family -> {"label", "tune", "eval"}
    per_query: dict                    # "qids", "tuned", "best_single", "rrf60_equal"
    chosen_per_fold: tuple = ()
    assumptions: tuple = ()
    specs: tuple = ()                  # the retriever spec of each run (e.g. "fts5:phrase")
    provenance: dict = field(default_factory=dict)
    tests: dict = field(default_factory=lambda: dict(TESTS))
    kind: str = "sweep"
    schema_version: int = SCHEMA_VERSION

    @property
    def label(self) -> str:
        return self.config["label"]

    def config_obj(self):
        """The chosen configuration as a :class:`rrfbench.engine.Config`."""
        from .engine import Config

        return Config.from_json(self.config)

    def to_json(self) -> dict:
        return plain({f.name: getattr(self, f.name) for f in fields(self)})

    @classmethod
    def from_json(cls, d: dict) -> SweepResult:
        d = dict(d)
        d["protocol"] = Protocol.from_json(d["protocol"])
        d["tuned"] = Estimate.from_json(d["tuned"])
        d["baselines"] = {k: Comparison.from_json(v) for k, v in d["baselines"].items()}
        for key in ("runs", "chosen_per_fold", "assumptions", "specs"):
            d[key] = tuple(d.get(key, ()))
        return cls(**d)


@dataclass(frozen=True)
class PresetResult:
    """A studied system on one dataset: as shipped vs tuned within its own knobs."""

    preset: str
    system: str
    dataset: str
    fingerprint: str
    metric: str
    protocol: Protocol
    knobs: dict                        # name -> {"default", "range", "fixed", "grid"}
    streams: dict                      # role -> retriever spec
    shipped: dict                      # {"params", "metrics"} on the evaluation queries
    config: dict                       # the tuned knob values
    tuned: Estimate                    # tuning metric on the evaluation queries
    tuned_metrics: dict                # every reported metric of the tuned params
    vs_shipped: Comparison             # the shipped values as the baseline
    tune_value: float
    grid_size: int
    per_query: dict                    # "qids", "tuned", "shipped"
    fidelity: tuple = ()               # ({"item", "status", "note"}, ...)
    chosen_per_fold: tuple = ()
    cache_key: str = ""
    provenance: dict = field(default_factory=dict)
    tests: dict = field(default_factory=lambda: dict(TESTS))
    kind: str = "preset"
    schema_version: int = SCHEMA_VERSION

    def tuned_knobs(self) -> dict:
        """The knobs tuning could change, with their tuned values."""
        return {k: v for k, v in self.config.items()
                if k in self.knobs and not self.knobs[k].get("fixed")}

    def to_json(self) -> dict:
        return plain({f.name: getattr(self, f.name) for f in fields(self)})

    @classmethod
    def from_json(cls, d: dict) -> PresetResult:
        d = dict(d)
        d["protocol"] = Protocol.from_json(d["protocol"])
        d["tuned"] = Estimate.from_json(d["tuned"])
        d["vs_shipped"] = Comparison.from_json(d["vs_shipped"])
        for key in ("fidelity", "chosen_per_fold"):
            d[key] = tuple(d.get(key, ()))
        return cls(**d)


RESULT_TYPES = {"sweep": SweepResult, "preset": PresetResult}


def register_result_type(kind: str, cls) -> None:
    """Let :func:`load_result` read another result kind (e.g. a suite's transfer result)."""
    RESULT_TYPES[kind] = cls


def result_from_json(d: dict, path: str | Path | None = None):
    """Any result object from its JSON form; old or foreign files are refused in one line."""
    if not isinstance(d, dict):
        raise InputError("expected a JSON object (a best.json written by rrfbench)", path)
    version = d.get("schema_version")
    if version is None:
        raise InputError("written by an older rrfbench (no schema_version); regenerate it with "
                         "`rrfbench sweep DATASET` or `rrfbench tune DATASET --preset NAME`", path)
    if version != SCHEMA_VERSION:
        raise InputError(f"schema_version {version} is not {SCHEMA_VERSION} (this rrfbench); "
                         "regenerate it with the command that wrote it", path)
    kind = d.get("kind")
    if kind not in RESULT_TYPES:
        raise InputError(f"unknown result kind {kind!r}; known: {', '.join(RESULT_TYPES)}", path)
    try:
        return RESULT_TYPES[kind].from_json(d)
    except (KeyError, TypeError, ValueError) as exc:
        raise InputError(f"not a valid {kind} result ({type(exc).__name__}: {exc}); regenerate "
                         "it with the command that wrote it", path) from None


def load_result(path: str | Path):
    """A :class:`SweepResult`, :class:`PresetResult` (or registered kind) from a best.json."""
    from .runs import read_text

    path = Path(path)
    try:
        d = json.loads(read_text(path))
    except json.JSONDecodeError as exc:
        raise InputError(f"not valid JSON ({exc.msg})", path, exc.lineno) from None
    return result_from_json(d, path)


def save_result(result, path: str | Path) -> Path:
    """Write ``result.to_json()`` to ``path`` atomically."""
    from .store import write_json

    return write_json(path, result.to_json())


def specs_of(result) -> list[str]:
    """The retriever specs of a fusion result's runs (from the run names when not recorded:
    ``fts5-phrase`` -> ``fts5:phrase``)."""
    if getattr(result, "specs", ()):
        return list(result.specs)
    return [n.replace("-", ":", 1) for n in result.runs]
