"""Results across a suite of collections: :class:`TransferResult` (a configuration or a studied
system's knobs tuned across collections, validated leave-one-collection-out, and the decision
that recommends it) and :class:`AdaptiveResult` (a per-query policy validated the same way).
Plain values: they rebuild a ``Config`` or a ``Policy`` (value types, :mod:`rrfbench.fusion.config` and :mod:`rrfbench.results.policy`) when asked.

Called from: ``adaptive.validation``, ``results.dataset``, ``tuning.transfer``,
``workflows.suite``.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields

import pandas as pd

from .policy import Policy
from .values import (
    SCHEMA_VERSION,
    StaticResult,
    _ci,
    _config,
    _flat,
    check_which,
    plain,
    ranked,
)


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
    # "tests", "rule", ...} (rrfbench.tuning.stability.stability); empty in files written before it
    stability: dict = field(default_factory=dict)
    # the recommendation as a decision (rrfbench.tuning.decisions): {"rule", "take_change",
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
    """A query-adaptive policy validated across a suite (:mod:`rrfbench.adaptive.validation`): the LOCO
    table against the static default, the verdict, the headroom and the policy itself (portable
    JSON, :class:`rrfbench.results.policy.Policy`)."""

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
    # (rrfbench.tuning.stability.verdict_stability); empty in files written before it
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
        """The learned policy as a :class:`rrfbench.results.policy.Policy` ."""
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
        df = ranked(df.assign(_key=df.collection.astype(str) + "\x1f" + df.qid.astype(str)),
                    "delta", "_key").drop(columns="_key")
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
