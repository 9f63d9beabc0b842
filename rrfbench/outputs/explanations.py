"""Per-query explanations and paired comparisons: "on which queries, and why".

* :func:`explain` -> one row per document of a query's fused top N: its fused rank and score,
  and for each run its rank, raw score, normalised score (score fusion) and contribution to the
  fused score (the contributions sum to the fused score), the relevance grade when qrels are
  given, and its rank in the best single run. For a studied system (preset) the rows also say
  which stage kept, cut or reordered each candidate (depth, minScore, dropoff, limit, authority).
* :func:`compare` -> per-query deltas between two configurations (or two saved results) on the
  same queries, the queries that moved most each way, and the paired tests.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..core.errors import InputError
from ..core.evaluation import evaluate_per_query
from ..core.runs import Qrels, Run
from ..core.stats import bootstrap_ci, paired_t, permutation_test
from ..fusion.config import Config
from ..fusion.functions import normalise, score_floors
from ..results.values import ranked


def _as_config(config):
    """A fusion Config from a Config, a result object, or a configuration dict."""
    if isinstance(config, Config):
        return config
    if isinstance(config, dict):
        return Config.from_json(config)
    if hasattr(config, "config_obj") and not getattr(config, "preset", None):
        return config.config_obj()
    raise InputError(f"explain: {type(config).__name__} is not a fusion configuration")


def best_single(runs, qrels: Qrels | None, metric: str = "nDCG@10") -> int:
    """Index of the best single run on ``qrels`` (by ``metric``), else 0."""
    if qrels is None or len(runs) == 1:
        return 0
    means = [evaluate_per_query(r, qrels, [metric])[metric].mean() for r in runs]
    return int(np.argmax(means))


def explain(runs, config, qid: str, qrels: Qrels | None = None, top: int = 10,
            best: int | None = None) -> pd.DataFrame:
    """How one query's fused top ``top`` came about (see the module docstring).

    ``config`` is a fusion :class:`~rrfbench.fusion.config.Config` (or a saved sweep/suite result, or
    its ``config`` dict); for a preset use :func:`explain_preset`.
    """
    cfg = _as_config(config)
    runs = list(runs)
    cfg.check(len(runs))
    qid = str(qid)
    one = [r.subset([qid]) for r in runs]
    if not any(len(r) for r in one):
        raise InputError(f"explain: query {qid!r} is in none of the runs")
    fused = cfg.fuse(one).df.head(top)
    best = best_single(runs, qrels) if best is None else best
    out = pd.DataFrame({"docid": fused.docid.to_numpy(), "fused_rank": fused["rank"].to_numpy(),
                        "fused_score": fused.score.to_numpy()})
    if cfg.method != "rrf":
        floors = score_floors(one, None, cfg.norm)
    total = np.zeros(len(out))
    present = np.zeros(len(out))
    parts = {}
    for i, run in enumerate(one):
        df = run.df
        depth = cfg.depth[i]
        cut = df if depth is None else df[df["rank"] <= depth]
        ranks = cut.set_index("docid")["rank"]
        raw = df.set_index("docid")["score"]
        out[f"{run.name}_rank"] = out.docid.map(ranks).astype("Int64")
        out[f"{run.name}_score"] = out.docid.map(raw)
        w = float(cfg.weights[i]) if cfg.method in ("rrf", "convex") else 1.0
        inlist = out[f"{run.name}_rank"].notna().to_numpy()
        if cfg.method == "rrf":
            r = out[f"{run.name}_rank"].to_numpy(dtype=float, na_value=np.nan)
            c = np.where(inlist & (w > 0), w / (cfg.k[i] + r - 1 + cfg.rank_base), 0.0)
        else:
            if w > 0 and len(cut):
                norm = pd.Series(normalise(cut, cfg.norm, floors[i]).to_numpy(), index=cut.docid)
                missing = float(norm.min()) if cfg.missing == "min" else 0.0
            else:
                norm, missing = pd.Series(dtype=float), 0.0
            nv = out.docid.map(norm).to_numpy(dtype=float)
            out[f"{run.name}_norm"] = nv
            c = np.where(inlist, w * nv, w * missing) if w > 0 else np.zeros(len(out))
            present += inlist & (w > 0)
        parts[run.name] = c
        total += c
    if cfg.method == "combmnz":
        for name in parts:
            parts[name] = parts[name] * present
    for name, c in parts.items():
        out[f"{name}_contrib"] = c
    out["contrib_sum"] = sum(parts.values())
    if qrels is not None:
        grades = qrels.df[qrels.df.qid == qid].set_index("docid")["relevance"]
        out["relevance"] = out.docid.map(grades).fillna(0).astype(int)
    full = runs[best].subset([qid]).df.set_index("docid")["rank"]
    out["best_single"] = runs[best].name
    out["best_single_rank"] = out.docid.map(full).astype("Int64")
    return out


def explain_preset(preset, runs: dict[str, Run], qid: str, params: dict | None = None,
                   qrels: Qrels | None = None, limit: int | None = None,
                   prior: dict | None = None) -> pd.DataFrame:
    """A studied system's view of one query: every candidate it saw, its contribution per
    stream, and the stage that kept or cut it (see :meth:`Preset.explain_query`)."""
    params = preset.defaults() | (params or {})
    preset.check(params)
    limit = preset.limit_for(params, limit)
    lists = preset.query_lists(runs, str(qid), params, limit)
    rows = preset.explain_query(lists, params, limit, prior)
    df = pd.DataFrame(rows)
    if qrels is not None and len(df):
        grades = qrels.df[qrels.df.qid == str(qid)].set_index("docid")["relevance"]
        df["relevance"] = df.docid.map(grades).fillna(0).astype(int)
    return df


# --------------------------------------------------------------------------- compare
@dataclass(frozen=True)
class ComparisonReport:
    """Per-query deltas of ``a`` - ``b`` and the paired tests on them."""

    table: pd.DataFrame          # qid, a, b, delta (sorted by qid)
    metric: str
    label_a: str
    label_b: str
    mean_a: float
    mean_b: float
    delta: float
    ci95: tuple                  # bootstrap CI of the mean delta
    p_value: float               # paired randomisation test
    p_value_t: float             # paired t-test
    wins: int
    losses: int
    ties: int
    n_a: int = 0                 # queries each side had before pairing (the table holds the
    n_b: int = 0                 # shared ones)

    def movers(self, n: int = 5) -> tuple[pd.DataFrame, pd.DataFrame]:
        """The ``n`` queries that moved most up (a better) and most down."""
        t = self.table
        return ranked(t, "delta", None).head(n), ranked(t, "delta", None, ascending=True).head(n)

    def overlap_line(self) -> str | None:
        """Said when the two sides did not hold the same queries."""
        n = len(self.table)
        if self.n_a in (0, n) and self.n_b in (0, n):
            return None
        return (f"partial overlap: {n} shared queries compared ({self.label_a} has {self.n_a}, "
                f"{self.label_b} has {self.n_b})")

    def overview(self) -> pd.DataFrame:
        """One row: both means, the mean delta with its CI, the paired tests, wins/losses/ties
        (the summary table; :attr:`table` holds the per-query values)."""
        return pd.DataFrame([{
            "a": self.label_a, "b": self.label_b, "queries": len(self.table),
            f"{self.metric} a": self.mean_a, f"{self.metric} b": self.mean_b,
            "delta": self.delta, "delta 95% CI": f"[{self.ci95[0]:+.4f}, {self.ci95[1]:+.4f}]",
            "p (randomisation)": self.p_value, "p (t-test)": self.p_value_t,
            "wins": self.wins, "losses": self.losses, "ties": self.ties}])

    def view(self, movers: int = 5) -> list:
        """What to show: the summary line and the queries that moved most each way."""
        up, down = self.movers(movers)
        return [self.summary(), ("a better", up), ("b better", down)]

    def summary(self) -> str:
        return (f"{self.label_a} vs {self.label_b} on {len(self.table)} queries: {self.metric} "
                f"{self.mean_a:.4f} vs {self.mean_b:.4f} (delta {self.delta:+.4f}, 95% CI "
                f"{self.ci95[0]:+.4f} to {self.ci95[1]:+.4f}; p = {self.p_value:.4g} "
                f"randomisation, {self.p_value_t:.4g} t-test); {self.wins} wins, {self.losses} "
                f"losses, {self.ties} ties")


def _per_query(x, runs, qrels, metric, name):
    """(qids, values, label) of a configuration on ``runs``/``qrels``, or of a saved result."""
    if hasattr(x, "per_query") and getattr(x, "kind", "") in ("sweep", "preset"):
        pq = x.per_query
        if not pq or "qids" not in pq:
            raise InputError(f"compare: {name} holds no per-query values")
        label = x.label_for("config")
        return list(map(str, pq["qids"])), np.asarray(pq["tuned"], float), label, x.metric
    if runs is None or qrels is None:
        raise InputError(f"compare: {name} is a configuration; pass runs= and qrels=")
    cfg = _as_config(x)
    pq = evaluate_per_query(cfg.fuse(list(runs)), qrels, [metric])
    return list(pq.index), pq[metric].to_numpy(), cfg.label([r.name for r in runs]), metric


def _same_evaluation(a, b) -> None:
    """Two saved results compare only on the same data: same dataset, same corpus and qrels
    (fingerprint) and the same evaluation split. Queries that merely share ids across
    collections are not the same queries."""
    if not all(hasattr(x, "fingerprint") and hasattr(x, "protocol") for x in (a, b)):
        return
    for what, va, vb in (("datasets", a.dataset, b.dataset),
                         ("dataset fingerprints", a.fingerprint, b.fingerprint),
                         ("evaluation splits", a.protocol.eval_split, b.protocol.eval_split)):
        if va != vb:
            raise InputError(f"compare: the results are on different {what} ({va} vs {vb}); "
                             "a paired comparison needs the same queries and judgments")


def compare(a, b, runs=None, qrels: Qrels | None = None, metric: str = "nDCG@10"
            ) -> ComparisonReport:
    """Paired comparison of two configurations (with ``runs`` and ``qrels``) or two saved
    results on the same queries."""
    _same_evaluation(a, b)
    qa, va, la, ma = _per_query(a, runs, qrels, metric, "a")
    qb, vb, lb, mb = _per_query(b, runs, qrels, metric, "b")
    if ma != mb:
        raise InputError(f"compare: the results use different metrics ({ma} vs {mb})")
    n_a, n_b = len(qa), len(qb)
    if qa != qb:
        common = sorted(set(qa) & set(qb))
        if not common:
            raise InputError("compare: the two share no queries")
        ia, ib = {q: i for i, q in enumerate(qa)}, {q: i for i, q in enumerate(qb)}
        va = np.array([va[ia[q]] for q in common])
        vb = np.array([vb[ib[q]] for q in common])
        qa = common
    d = va - vb
    table = pd.DataFrame({"qid": qa, "a": va, "b": vb, "delta": d})
    lo, hi = bootstrap_ci(d)
    return ComparisonReport(table, ma, la, lb, float(va.mean()), float(vb.mean()),
                            float(d.mean()), (lo, hi), permutation_test(va, vb), paired_t(va, vb),
                            int((d > 0).sum()), int((d < 0).sum()), int((d == 0).sum()),
                            n_a, n_b)
