"""Result objects: what a sweep or a preset tuning found, built once and only read afterwards.

:class:`SweepResult` (a fusion sweep on one dataset) and :class:`PresetResult` (a studied
system tuned within its own knobs) are frozen dataclasses. They are built in one place,
:mod:`rrfbench.tuning`; report, export, regress, the CLI and the notebooks read their fields.
``to_json()`` / ``from_json()`` round-trip them through ``best.json`` with a
``schema_version``; :func:`load_result` reads any saved result and refuses a file written by an
older rrfbench with a one-line message that says how to regenerate it.

Plain values on the ground floor: this module imports nothing that computes. A result rebuilds
the engine's ``Config`` or a ``Policy`` only when asked (:meth:`SweepResult.config_obj`,
:meth:`AdaptiveResult.policy_obj`).
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path

import pandas as pd

from .errors import InputError
from .runs import read_text
from .store import write_json

SCHEMA_VERSION = 2


def _config(d: dict):
    """A configuration dict as a :class:`rrfbench.engine.Config`. The engine is imported here,
    when asked, not with this module: loading or reading a saved result computes nothing (no
    engine, retriever or policy fitting is imported; ``tests/test_results.py`` checks)."""
    from .engine import Config

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
class SweepResult(StaticResult):
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
        """The chosen configuration as a :class:`rrfbench.engine.Config`."""
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


def decision_line(r) -> str:
    """A suite or adaptive result's recommendation in one line: what to use, the expected gain
    on a new collection and the rule's track record (empty when not recorded)."""
    dec = getattr(r, "decision", None) or {}
    if not dec:
        return ""
    g = dec["recommended_gain"] if dec["take_change"] else dec["change_gain"]
    what = (f"use {r.recommended['label']}: expected gain on a new collection "
            f"{g['value']:+.4f} {r.metric} (95% CI of the mean {_ci(g['ci95'], '+')}, one new "
            f"collection {_ci(g['prediction95'], '+')})" if dec["take_change"] else
            f"keep {r.recommended['label']}: the change would give {g['value']:+.4f} (95% CI "
            f"{_ci(g['ci95'], '+')})")
    tr = dec.get("track_record")
    record = (f"; this kind of advice was right on {tr['right']} of {tr['of']} left-out "
              f"collections (rule {dec['rule']}, nested leave-one-collection-out)" if tr else
              f"; rule {dec['rule']} ({(dec.get('grading') or {}).get('refused', 'not graded')})")
    return f"recommendation: {what}{record}"


@dataclass(frozen=True)
class TransferResult(StaticResult):
    """A suite result: LOCO table, verdict, the selected and the recommended configuration."""

    suite: str
    collections: tuple
    family: str                        # "fusion" or a preset's name
    metric: str
    objective: str
    rule: str
    protocols: dict                    # collection -> Protocol (as JSON)
    config: dict                       # selected on all collections (fuse --config applies it)
    label: str
    default: dict                      # {"config", "label"}: RRF k=60 equal, or shipped values
    recommended: dict                  # {"config", "label", "reason"}
    verdict: str
    verdict_reason: str
    loco: tuple                        # one row per collection
    summary: dict
    transfer_matrix: dict              # {"collections", "delta", "value"}
    characteristics: tuple             # per collection: stats and the k it prefers
    grid_size: int
    runs: tuple = ()                   # fusion: the run names the configuration weights
    specs: tuple = ()                  # fusion: the retriever spec of each run
    per_collection: dict = field(default_factory=dict)  # values of config/recommended/default
    preset: str | None = None          # preset: its name
    knobs: dict = field(default_factory=dict)
    k_curves: dict = field(default_factory=dict)
    families: dict = field(default_factory=dict)   # per fusion family: LOCO summary + verdict
    assumptions: tuple = ()
    provenance: dict = field(default_factory=dict)
    tests: dict = field(default_factory=dict)
    # how often selection and verdict hold on resampled / perturbed queries: {"B", "seed",
    # "stability", "verdict_before", "share_same_verdict", "share_same_config",
    # "share_same_family", "share_supporting", "per_collection", "schemes", "perturbation",
    # "tests", "rule", ...} (rrfbench.stability.stability); empty in files written before it
    stability: dict = field(default_factory=dict)
    # the recommendation as a decision (rrfbench.decisions): {"rule", "take_change",
    # "change_gain", "recommended_gain", "track_record", "grading", "rules_answer", ...}
    decision: dict = field(default_factory=dict)
    kind: str = "transfer"
    schema_version: int = SCHEMA_VERSION

    @property
    def dataset(self) -> str:
        return f"suite {self.suite} ({', '.join(self.collections)})"

    def config_for(self, which: str = "config") -> dict:
        """``config``: selected on all collections; ``recommended``: what the verdict supports
        (the selected configuration, or the default when the evidence is not there)."""
        check_which(which)
        return self.config if which == "config" else self.recommended["config"]

    def label_for(self, which: str = "config") -> str:
        check_which(which)
        return self.label if which == "config" else self.recommended["label"]

    def config_obj(self, which: str = "config"):
        return _config(self.config_for(which))

    def validated_on(self) -> str | None:
        return None  # validated leave-one-collection-out across the suite

    def what(self) -> str:
        """``free fusion (bm25 + dense)`` or ``preset titan``."""
        return (f"free fusion ({' + '.join(self.runs)})" if self.family == "fusion"
                else f"preset {self.family}")

    def loco_table(self) -> pd.DataFrame:
        """The leave-one-collection-out table: one row per collection, selected on the others
        and scored on it, vs the default (and, when recorded, the stability of the choice and
        multiplicity-adjusted p-values)."""
        stability = getattr(self, "stability", None)
        rows = []
        for row in self.loco:
            d = row["default"]
            bs = row.get("best_single")
            ind = row.get("in_domain") or {}
            out = {"collection": row["collection"], "queries": row.get("n_queries"),
                   "selected on the others": row["selected"], "LOCO": row["loco"]["value"],
                   "default": d["value"], "delta": d["delta"],
                   "delta 95% CI": _ci(d["delta_ci95"], "+") if "delta_ci95" in d else None,
                   "p": d["p_value"]}
            for key, v in d.items():  # multiplicity-adjusted p-values, when recorded
                if key.startswith("p_value_") and isinstance(v, (int, float)):
                    out["p " + key[len("p_value_"):].replace("_", " ")] = v
            out["outcome"] = d["outcome"]
            out["best single (others)"] = (f"{bs['name']} {bs['value']:.4f}" if bs else None)
            out["in-domain"] = ind.get("value")
            out["in-domain protocol"] = ind.get("protocol")
            st = row.get("stability")
            if st is None and isinstance(stability, dict):
                st = stability.get(row["collection"], stability.get("per_collection", {}).get(
                    row["collection"]) if isinstance(stability.get("per_collection"), dict) else None)
            if st:
                out["stability"] = _flat(st)
            rows.append(out)
        return pd.DataFrame(rows)

    def macro(self) -> pd.DataFrame:
        """One row: the macro LOCO summary, the verdict and the recommended default (concat the
        rows of several suite results to compare free fusion with the studied systems)."""
        s = self.summary
        mac = s["macro"]
        row = {"family": self.family, "default": self.default["label"],
               "LOCO macro": mac["loco"], "default macro": mac["default"], "gain": s["gain"],
               "gain 95% CI (collections)": (_ci(s["gain_ci95_collections"], "+")
                                             if "gain_ci95_collections" in s else None),
               "p (queries)": s["p_value_queries"], "p (collections)": s["p_value_collections"],
               "W/T/L": f"{s['wins']}/{s['ties']}/{s['losses']}"}
        st = self.stability
        if st:  # how often the verdict and the selection hold on resampled / perturbed queries
            row["stability"] = st.get("stability")
            row["same verdict"] = st.get("share_same_verdict")
            row["same config"] = st.get("share_same_config")
        row |= {"verdict": self.verdict, "recommended": self.recommended["label"]}
        return pd.DataFrame([row])

    def families_table(self) -> pd.DataFrame:
        """Each fusion family on its own (the same LOCO protocol, the grid restricted)."""
        return pd.DataFrame([{"family": fam, "selected on all": f["selected"],
                              "LOCO macro": f["macro_loco"], "gain vs default": f["gain"],
                              "p (queries)": f["p_value_queries"],
                              "p (collections)": f["p_value_collections"],
                              "W/T/L": f"{f['wins']}/{f['ties']}/{f['losses']}",
                              "stability": (f.get("stability") or {}).get("stability"),
                              "verdict": f["verdict"]} for fam, f in self.families.items()])

    def matrix(self) -> pd.DataFrame:
        """Transfer matrix: tuned on the row's collection, delta vs the default on the column's."""
        tm = self.transfer_matrix
        return pd.DataFrame(tm["delta"], index=pd.Index(tm["collections"], name="tuned on"),
                            columns=list(tm["collections"]))

    def characteristics_table(self) -> pd.DataFrame:
        """Per collection: its statistics and the RRF k it prefers."""
        return pd.DataFrame(list(self.characteristics))

    def to_json(self) -> dict:
        return plain({f.name: getattr(self, f.name) for f in fields(self)})

    @classmethod
    def from_json(cls, d: dict) -> TransferResult:
        d = dict(d)
        for key in ("collections", "loco", "characteristics", "runs", "assumptions", "specs"):
            d[key] = tuple(d.get(key, ()))
        return cls(**d)



@dataclass(frozen=True)
class AdaptiveResult:
    """A query-adaptive policy validated across a suite (:mod:`rrfbench.adaptive`): the LOCO
    table against the static default, the verdict, the headroom and the policy itself (portable
    JSON, :class:`rrfbench.policies.Policy`)."""

    suite: str
    collections: tuple
    metric: str
    runs: tuple
    specs: tuple
    feature_set: str
    n_candidates: int
    kinds: tuple
    rule: str
    policy: dict                       # Policy.to_json(), trained on every collection
    static: dict                       # {"config", "label"}: the static default (candidate 0)
    default: dict                      # {"config", "label"}: RRF k=60, equal weights
    recommended: dict                  # {"policy": bool, "label", "reason"[, "config"]}
    verdict: str
    verdict_reason: str
    loco: tuple
    summary: dict
    kinds_table: dict = field(default_factory=dict)
    importances: dict = field(default_factory=dict)
    protocols: dict = field(default_factory=dict)
    assumptions: tuple = ()
    tests: dict = field(default_factory=dict)
    provenance: dict = field(default_factory=dict)
    preset: str | None = None
    # {"stability", "share_supporting", "schemes", "verdict_before", "rule", "held_fixed", ...}
    # (rrfbench.stability.verdict_stability); empty in files written before it
    stability: dict = field(default_factory=dict)
    decision: dict = field(default_factory=dict)   # as TransferResult.decision
    kind: str = "adaptive"
    schema_version: int = SCHEMA_VERSION

    @property
    def dataset(self) -> str:
        return f"suite {self.suite} ({', '.join(self.collections)})"

    @property
    def label(self) -> str:
        return self.policy_obj().describe()

    def policy_obj(self):
        """The learned policy as a :class:`rrfbench.policies.Policy` (imported when asked)."""
        from .policies import Policy

        return Policy.from_json(self.policy)

    def policy_for(self, which: str = "config"):
        """``config``: the learned policy; ``recommended``: the policy when the verdict supports
        it, else ``None`` (the static default of :meth:`config_for` applies)."""
        check_which(which)
        if which == "config" or self.recommended.get("policy"):
            return self.policy_obj()
        return None

    def config_for(self, which: str = "config") -> dict:
        """The static configuration behind ``which``: the policy's fallback (candidate 0) for
        ``config``, the recommended static default when the policy is not recommended."""
        check_which(which)
        if which == "recommended" and not self.recommended.get("policy"):
            return self.recommended["config"]
        return self.policy["candidates"][0]

    def label_for(self, which: str = "config") -> str:
        check_which(which)
        return self.label if self.policy_for(which) else self.recommended["label"]

    def config_obj(self, which: str = "config"):
        return _config(self.config_for(which))

    def validated_on(self) -> str | None:
        return None  # validated leave-one-collection-out across the suite

    def what(self) -> str:
        return f"adaptive fusion ({' + '.join(self.runs)})"

    def loco_table(self) -> pd.DataFrame:
        """One row per collection: the policy trained on the others, vs the static default
        selected on the others, RRF k=60 and the oracles."""
        rows = []
        dl = self.default_short()
        for r in self.loco:
            st = r["static"]
            rows.append({"collection": r["collection"], "queries": r["n_queries"],
                         "policy": r["policy"], "switched": r["switched"],
                         "adaptive": r["adaptive"]["value"], "static": st["value"],
                         "delta": st["delta"], "delta 95% CI": _ci(st["delta_ci95"], "+"),
                         "p": st["p_value"], "p holm": st["p_value_holm"],
                         "outcome": st["outcome"],
                         "W/T/L queries": "/".join(map(str, r["wins_ties_losses"])),
                         dl: r["default"]["value"], f"delta vs {dl}": r["default"]["delta"],
                         "oracle K": r["oracle"]["candidates"], "oracle grid": r["oracle"]["grid"],
                         "captured": r["oracle"]["captured"], "static (others)": st["label"]})
        return pd.DataFrame(rows)

    def macro(self) -> pd.DataFrame:
        s, m = self.summary, self.summary["macro"]
        return pd.DataFrame([{
            "adaptive": m["adaptive"], "static": m["static"], self.default_short(): m["default"],
            "gain": s["gain"], "gain 95% CI (collections)": _ci(s["gain_ci95_collections"], "+"),
            "p (queries)": s["p_value_queries"], "p (collections)": s["p_value_collections"],
            f"gain vs {self.default_short()}": s["gain_vs_default"], "oracle K": m["oracle_candidates"],
            "oracle grid": m["oracle_grid"], "captured": s["captured"],
            "W/T/L": f"{s['wins']}/{s['ties']}/{s['losses']}", "verdict": self.verdict,
            "stability": self.stability.get("stability", float("nan")),
            "recommended": self.recommended["label"]}])

    def stability_line(self) -> str:
        """The verdict's stability in one line (empty when not recorded)."""
        st = self.stability
        if not st:
            return ""
        sch = st["schemes"]
        before = st.get("verdict_before", self.verdict)
        return (f"stability: '{before}' holds in {sch['bootstrap']['share_supporting'][before]:.0%}"
                f" of {st['B']} query bootstraps and {sch['noise']['share_supporting'][before]:.0%}"
                f" of {st['B']} CPU-size noise perturbations (choices held fixed); below "
                f"{st['min_share']:.0%} a verdict is weakened or unstable")

    def default_short(self) -> str:
        """The comparator's short name: ``RRF k=60`` (free fusion) or ``shipped`` (a preset)."""
        return "shipped" if self.preset else "RRF k=60"

    def kinds_frame(self) -> pd.DataFrame:
        """Each policy kind on its own (its threshold still chosen on training collections)."""
        return pd.DataFrame([{"kind": k, "LOCO gain vs static": v["gain"],
                              "p (queries)": v["p_value_queries"], **v["per_collection"]}
                             for k, v in self.kinds_table.items()])

    def per_query_frame(self) -> pd.DataFrame:
        """Every evaluation query of every LOCO fold: the chosen candidate, the policy's and the
        static default's metric, and the delta."""
        frames = []
        for r in self.loco:
            pq = r.get("per_query")
            if not pq:
                continue
            df = pd.DataFrame({"collection": r["collection"], "qid": pq["qids"],
                               "chosen": [r["candidates"][j] for j in pq["chosen"]],
                               "adaptive": pq["adaptive"], "static": pq["static"]})
            frames.append(df.assign(delta=df.adaptive - df.static))
        return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()

    def movers(self, n: int = 5) -> pd.DataFrame:
        """The ``n`` queries the policy helped most and the ``n`` it hurt most (LOCO)."""
        df = self.per_query_frame()
        if df.empty:
            return df
        df = df.sort_values(["delta", "collection", "qid"], ascending=[False, True, True])
        return pd.concat([df.head(n).assign(effect="helped"),
                          df[df.delta < 0].tail(n).iloc[::-1].assign(effect="hurt")],
                         ignore_index=True)

    def importances_frame(self, top: int = 15) -> pd.DataFrame:
        return pd.DataFrame(list(self.importances.items())[:top],
                            columns=["feature", "permutation importance"])

    def to_json(self) -> dict:
        return plain({f.name: getattr(self, f.name) for f in fields(self)})

    @classmethod
    def from_json(cls, d: dict) -> AdaptiveResult:
        d = dict(d)
        for key in ("collections", "loco", "runs", "assumptions", "specs", "kinds"):
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


def save_result(result, path: str | Path) -> Path:
    """Write ``result.to_json()`` to ``path`` atomically."""
    return write_json(path, result.to_json())


def specs_of(result) -> list[str]:
    """The retriever specs of a fusion result's runs (from the run names when not recorded:
    ``fts5-phrase`` -> ``fts5:phrase``)."""
    if getattr(result, "specs", ()):
        return list(result.specs)
    return [n.replace("-", ":", 1) for n in result.runs]
