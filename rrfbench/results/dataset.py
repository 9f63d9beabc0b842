"""Result objects: what a sweep or a preset tuning found, built once and only read afterwards.

:class:`SweepResult` (a fusion sweep on one dataset) and :class:`PresetResult` (a studied
system tuned within its own knobs) are frozen dataclasses. They are built in one place,
:mod:`rrfbench.tuning.holdout`; report, export, regress, the CLI and the notebooks read their fields.
``to_json()`` / ``from_json()`` round-trip them through ``best.json`` with a
``schema_version``; :func:`load_result` reads any saved result and refuses a file written by an
older rrfbench with a one-line message that says how to regenerate it.

Plain values on the ground floor: this module imports nothing that computes. A result rebuilds
the engine's ``Config`` or a ``Policy`` only when asked (:meth:`SweepResult.config_obj`,
:meth:`AdaptiveResult.policy_obj`).

Called from: ``api``, ``cli``, ``outputs.exporters``, ``outputs.report``, ``tuning.advice``,
``tuning.holdout``, ``workflows.cache``, ``workflows.commands``, ``workflows.dataset``,
``workflows.demo``, ``workflows.engine_table``, ``workflows.explorer``.
"""


from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path

import pandas as pd

from ..core.errors import InputError
from ..core.runs import read_text
from ..core.store import write_json
from .suite import AdaptiveResult, TransferResult
from .values import (
    SCHEMA_VERSION,
    TESTS,
    Comparison,
    Estimate,
    Protocol,
    StaticResult,
    _ci,
    _config,
    check_which,
    plain,
    ranked,
)


@dataclass(frozen=True)
class RetrieverScores:
    """Single retrievers scored on their splits: one row per (collection,) retriever and split,
    with its metrics, the judged queries it answered, its retrieval time and whether it came
    from the cache. The one table of single retrievers: the CLI, report.md and the notebooks
    show :meth:`table`."""

    title: str
    rows: tuple
    metrics: tuple = ()
    kind: str = "retrievers"

    def table(self, cached: bool = True, timing: bool = True) -> pd.DataFrame:
        """The rows as a DataFrame (``cached=False`` drops the cache column, for reports;
        ``timing=False`` the retrieval time, for outputs that must read the same every run)."""
        drop = ([] if cached else ["cached"]) + ([] if timing else ["retrieve_s"])
        return pd.DataFrame(list(self.rows)).drop(columns=drop, errors="ignore")

    def to_json(self) -> list:
        return [dict(r) for r in self.rows]


@dataclass(frozen=True)
class StudiedSystems:
    """The studied systems on one dataset, each as shipped vs tuned within its own knobs
    (:class:`PresetResult` each). The one studied-systems table: :meth:`table`."""

    dataset: str
    results: tuple

    def table(self) -> pd.DataFrame:
        """One row per system (:meth:`PresetResult.row`)."""
        return pd.DataFrame([r.row() for r in self.results])

    def by_name(self) -> dict:
        return {r.preset: r for r in self.results}


@dataclass(frozen=True)
class EngineTable:
    """What each engine's fusion costs: per engine and fusion mode, its default's score, the
    score tuned within its own knobs on held-out queries (a holdout or cross-validation on a
    dataset; leave-one-collection-out on a suite), and the gap to the best free fusion of the
    same two streams. The one engine table: :meth:`table`."""

    scope: str                         # a dataset's name, or "suite <name>"
    metric: str
    rows: tuple
    free: dict                         # "dense+bm25" -> {"label", "value", "source"}
    kind: str = "engines"

    def table(self) -> pd.DataFrame:
        m = self.metric
        return pd.DataFrame([{
            "engine": r["engine"], "mode": r["mode"], f"default {m}": r["default"],
            f"tuned {m} (held out)": r["tuned"], "gain vs default": r["gain"],
            "p (vs default)": r["p_value"], "free fusion (same streams)": r["free"],
            "gap to free fusion": r["gap"], "recommended": r["recommended"],
            "verified against": r["version"],
            "live round trip": "yes" if r["live"] else "no (not run against a live engine)"}
            for r in self.rows])

    def best_modes(self) -> pd.DataFrame:
        """Per engine, its best mode (tuned, held out) and what it costs against free fusion."""
        t = self.table()
        m = f"tuned {self.metric} (held out)"
        best = ranked(t, m, "mode").groupby("engine", sort=False)
        return best.head(1).reset_index(drop=True)[["engine", "mode", m, "gap to free fusion"]]

    def to_json(self) -> dict:
        return asdict(self)

    @classmethod
    def from_json(cls, d: dict) -> EngineTable:
        return cls(**{**d, "rows": tuple(d["rows"])})


@dataclass(frozen=True)
class SweepResult(StaticResult):
    """A fusion sweep on one dataset, tuned honestly (see :mod:`rrfbench.tuning.holdout`)."""

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

    preset = None                      # a fusion result: no studied system

    @property
    def label(self) -> str:
        return self.config["label"]

    def config_for(self, which: str = "config") -> dict:
        """The configuration to apply: one dataset's result has one (``which`` is accepted for
        every result kind alike: ``config`` or ``recommended``)."""
        check_which(which)
        return self.config

    def label_for(self, which: str = "config") -> str:
        check_which(which)
        return self.label

    def config_obj(self, which: str = "config"):
        """The chosen configuration as a :class:`rrfbench.fusion.config.Config`."""
        return _config(self.config_for(which))

    def validated_on(self) -> str | None:
        """Why a default for unseen data needs more than this result (``None``: a suite)."""
        return self.dataset

    def summary(self) -> pd.DataFrame:
        """The tuned configuration vs the baselines on the evaluation queries: one row each
        (the table the CLI, report.md and notebook 02 show)."""
        m = self.metric
        ev, bs, r60 = self.tuned, self.baselines["best_single"], self.baselines["rrf60_equal"]
        rows = [{"system": f"tuned: {self.label}", f"{m} (eval)": ev.value, "95% CI": _ci(ev.ci95),
                 "delta vs tuned": None, "p (randomisation)": None, "p (t-test)": None}]
        for name, b in ((f"best single run ({bs.name})", bs), ("RRF k=60, equal weights", r60)):
            rows.append({"system": name, f"{m} (eval)": b.value, "95% CI": _ci(b.ci95),
                         "delta vs tuned": b.delta, "p (randomisation)": b.p_value,
                         "p (t-test)": b.p_value_t})
        return pd.DataFrame(rows)

    def families(self) -> pd.DataFrame:
        """The best configuration of each fusion family (tuning value, evaluation value)."""
        m = self.metric
        return pd.DataFrame([{"family": fam, f"tune {m}": row["tune"], f"eval {m}": row["eval"],
                              "configuration": row["label"]}
                             for fam, row in self.family_best.items()])

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
class PresetResult(StaticResult):
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

    def config_for(self, which: str = "config") -> dict:
        """The tuned knob values (``which`` as for every result kind)."""
        check_which(which)
        return self.config

    def label_for(self, which: str = "config") -> str:
        check_which(which)
        return f"{self.preset} tuned"

    def validated_on(self) -> str | None:
        return self.dataset

    def tuned_knobs(self) -> dict:
        """The knobs tuning could change, with their tuned values."""
        return {k: v for k, v in self.config.items()
                if k in self.knobs and not self.knobs[k].get("fixed")}

    def knobs_label(self) -> str:
        """The tuned knobs as ``name=value, ...``."""
        return ", ".join(f"{k}={v}" for k, v in self.tuned_knobs().items())

    def row(self) -> dict:
        """One row of the studied-systems table (shipped vs tuned on the evaluation queries;
        :meth:`StudiedSystems.table` builds the table from them)."""
        m, p = self.metric, self.protocol
        return {"preset": self.preset, f"shipped {m}": self.shipped["metrics"][m],
                f"tuned {m}": self.tuned.value, "95% CI (tuned)": _ci(self.tuned.ci95),
                "p vs shipped": self.vs_shipped.p_value,
                "shipped R@100": self.shipped["metrics"].get("R@100", float("nan")),
                "tuned R@100": self.tuned_metrics.get("R@100", float("nan")),
                "tuned knobs": self.knobs_label(),
                "protocol": (f"{p.tune_split} -> {p.eval_split}" if p.kind == "holdout"
                             else f"{p.folds}-fold CV")}

    def summary(self) -> pd.DataFrame:
        """Shipped vs tuned: two rows, the tuning metric and R@100."""
        m = self.metric
        return pd.DataFrame([
            {"": "shipped", m: self.shipped["metrics"][m],
             "R@100": self.shipped["metrics"].get("R@100", float("nan"))},
            {"": "tuned", m: self.tuned.value, "R@100": self.tuned_metrics.get("R@100", float("nan"))}])

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


# Every result kind, declared here and nowhere else: loading a best.json never depends on what
# was imported before.
RESULT_TYPES = {"sweep": SweepResult, "preset": PresetResult, "transfer": TransferResult,
                "adaptive": AdaptiveResult}


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
    """A :class:`SweepResult`, :class:`PresetResult` or :class:`TransferResult` from a best.json."""
    path = Path(path)
    try:
        d = json.loads(read_text(path))
    except json.JSONDecodeError as exc:
        raise InputError(f"not valid JSON ({exc.msg})", path, exc.lineno) from None
    return result_from_json(d, path)


# provenance fields that say when and from which commit a result was written, not what it is
_STAMPS = ("created", "git_commit")


def _without_stamps(d: dict) -> dict:
    prov = {k: v for k, v in (d.get("provenance") or {}).items() if k not in _STAMPS}
    return {**d, "provenance": prov}


def save_result(result, path: str | Path) -> Path:
    """Write ``result.to_json()`` to ``path`` atomically; a saved file that already holds the
    same result (everything but its write time and commit) is left as it is, so recomputing an
    unchanged result leaves a clean ``git status``."""
    path = Path(path)
    d = result.to_json()
    if path.exists():
        try:
            old = json.loads(path.read_text())
        except (OSError, ValueError):
            old = None
        if isinstance(old, dict) and json.loads(json.dumps(_without_stamps(d), default=str)) \
                == _without_stamps(old):
            return path
    return write_json(path, d)


def specs_of(result) -> list[str]:
    """The retriever specs of a fusion result's runs (from the run names when not recorded:
    ``fts5-phrase`` -> ``fts5:phrase``)."""
    if getattr(result, "specs", ()):
        return list(result.specs)
    return [n.replace("-", ":", 1) for n in result.runs]
