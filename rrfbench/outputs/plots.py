"""Plots drawn from sweep tables and result objects (matplotlib, Agg-safe).

Each returns the Figure and, given ``path``, also saves a PNG there (atomically). Every plot
says in its title which split (set of queries) it shows.
"""

from __future__ import annotations

import os

import numpy as np
import pandas as pd

from ..core.errors import InputError
from ..core.progress import in_notebook
from ..core.store import write_figure
from ..fusion.sweep import family_labels


def _plt():
    import matplotlib

    if not os.environ.get("DISPLAY") and not in_notebook():
        matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _save(fig, path):
    if path is not None:
        write_figure(path, fig)
    return fig


def _on(split: str | None) -> str:
    return f" [split {split}]" if split else ""


def close_all() -> None:
    _plt().close("all")


def _rrf_rows(table: pd.DataFrame, names: list[str]) -> pd.DataFrame:
    t = table[table.method == "rrf"].copy()
    if "rank_base" in t:
        t = t[t.rank_base == 1]
    for n in names:
        t = t[t[f"depth_{n}"] == 0]
    ks = t[[f"k_{n}" for n in names]].to_numpy()
    t = t[(ks == ks[:, :1]).all(axis=1)]
    return t.assign(k=t[f"k_{names[0]}"])


def heatmap_k_weight(table: pd.DataFrame, names: list[str], metric: str, pair=None, path=None,
                     split: str | None = None):
    """Metric over k (rows) x weight share of ``pair[0]`` (columns), for two runs' RRF.

    With more runs, only configurations where exactly the two runs of ``pair`` have weight
    are used.
    """
    plt = _plt()
    a, b = pair or names[:2]
    t = _rrf_rows(table, names)
    others = [n for n in names if n not in (a, b)]
    for n in others:
        t = t[t[f"w_{n}"] == 0]
    t = t[(t[f"w_{a}"] + t[f"w_{b}"]) > 0]
    t = t.assign(share=(t[f"w_{a}"] / (t[f"w_{a}"] + t[f"w_{b}"])).round(3))
    grid = t.pivot_table(index="k", columns="share", values=metric, aggfunc="max")
    fig, ax = plt.subplots(figsize=(8, 4.5))
    im = ax.imshow(grid.to_numpy(), aspect="auto", origin="lower", cmap="viridis")
    ax.set_xticks(range(len(grid.columns)), [f"{x:.2g}" for x in grid.columns], rotation=45)
    ax.set_yticks(range(len(grid.index)), [f"{x:g}" for x in grid.index])
    ax.set_xlabel(f"weight share of {a} (rest: {b})")
    ax.set_ylabel("RRF k")
    best = np.unravel_index(np.nanargmax(grid.to_numpy()), grid.shape)
    ax.plot(best[1], best[0], "r*", markersize=14, label=f"best {np.nanmax(grid.to_numpy()):.4f}")
    ax.legend(loc="upper right")
    fig.colorbar(im, ax=ax, label=metric)
    ax.set_title(f"{metric}: RRF of {a} + {b}{_on(split)}")
    return _save(fig, path)


def k_curves(table: pd.DataFrame, names: list[str], metric: str, path=None, max_lines: int = 8,
             split: str | None = None):
    """Metric vs k, one line per weight vector (the best few, plus equal weights)."""
    plt = _plt()
    t = _rrf_rows(table, names)
    t = t.assign(wlabel=t[[f"w_{n}" for n in names]].apply(
        lambda r: ",".join(f"{x:g}" for x in r), axis=1))
    best_w = t.groupby("wlabel")[metric].max().sort_values(ascending=False)
    keep = list(best_w.index[:max_lines])
    eq = ",".join(["1"] * len(names))
    eq_alt = ",".join(f"{1 / len(names):g}" for _ in names)
    for cand in (eq, eq_alt):
        if cand in best_w.index and cand not in keep:
            keep.append(cand)
    fig, ax = plt.subplots(figsize=(8, 4.5))
    for wl in keep:
        s = t[t.wlabel == wl].groupby("k")[metric].max()
        ax.plot(s.index, s.values, marker="o", ms=3, label=f"w=({wl})")
    ax.set_xscale("log")
    ax.set_xlabel("RRF k (log)")
    ax.set_ylabel(metric)
    ax.set_title(f"{metric} vs k ({' / '.join(names)}){_on(split)}")
    ax.legend(fontsize=7, ncol=2)
    ax.grid(alpha=0.3)
    return _save(fig, path)


def ternary(table: pd.DataFrame, names: list[str], metric: str, k: float | None = None, path=None,
            split: str | None = None):
    """Three runs' weight simplex coloured by the metric (best over k, or at one ``k``)."""
    plt = _plt()
    if len(names) != 3:
        raise InputError(f"a ternary plot needs exactly three runs, got {len(names)}")
    t = _rrf_rows(table, names)
    if k is not None:
        t = t[t.k == k]
    w = t[[f"w_{n}" for n in names]].to_numpy()
    w = w / w.sum(axis=1, keepdims=True)
    t = t.assign(**{f"s{i}": w[:, i].round(3) for i in range(3)})
    g = t.groupby(["s0", "s1", "s2"])[metric].max().reset_index()
    x = g.s1 + 0.5 * g.s2
    y = (np.sqrt(3) / 2) * g.s2
    fig, ax = plt.subplots(figsize=(6.5, 5.5))
    sc = ax.scatter(x, y, c=g[metric], cmap="viridis", s=120, marker="h")
    i = int(np.argmax(g[metric].to_numpy()))
    ax.plot(x.iloc[i], y.iloc[i], "r*", ms=16, label=f"best {g[metric].iloc[i]:.4f}")
    for (px, py), n in zip([(0, 0), (1, 0), (0.5, np.sqrt(3) / 2)], names, strict=True):
        ax.annotate(n, (px, py), textcoords="offset points", xytext=(0, -14 if py == 0 else 6),
                    ha="center", fontweight="bold")
    ax.plot([0, 1, 0.5, 0], [0, 0, np.sqrt(3) / 2, 0], "k-", lw=0.8)
    ax.set_axis_off()
    ax.legend(loc="upper right")
    fig.colorbar(sc, ax=ax, label=metric, shrink=0.8)
    ax.set_title(f"{metric} over RRF weights ({'best k' if k is None else f'k={k:g}'}){_on(split)}")
    return _save(fig, path)


def win_loss(tuned, baseline, metric: str, baseline_name: str, path=None,
             split: str | None = None):
    """Per-query difference tuned - baseline, sorted: wins above zero, losses below."""
    plt = _plt()
    d = np.sort(np.asarray(tuned) - np.asarray(baseline))[::-1]
    fig, ax = plt.subplots(figsize=(8, 3.8))
    colors = np.where(d > 0, "tab:green", np.where(d < 0, "tab:red", "tab:gray"))
    ax.bar(np.arange(len(d)), d, color=colors, width=1.0)
    ax.axhline(0, color="k", lw=0.6)
    ax.set_xlabel("queries (sorted)")
    ax.set_ylabel(f"delta {metric}")
    ax.set_title(f"tuned vs {baseline_name}: {int((d > 0).sum())} wins, "
                 f"{int((d < 0).sum())} losses, {int((d == 0).sum())} ties{_on(split)}")
    return _save(fig, path)


def method_comparison(table: pd.DataFrame, metric: str, path=None, split: str | None = None):
    """Best value per fusion family (rrf, convex x norm x missing, combsum, combmnz)."""
    plt = _plt()
    s = table.assign(family=family_labels(table)).groupby("family")[metric].max().sort_values()
    fig, ax = plt.subplots(figsize=(7, 0.35 * len(s) + 1.2))
    ax.barh(s.index, s.values, color="tab:blue")
    ax.set_xlim(s.min() - 0.02, s.max() + 0.01)
    for i, v in enumerate(s.values):
        ax.text(v, i, f" {v:.4f}", va="center", fontsize=8)
    ax.set_xlabel(f"best {metric}")
    ax.set_title(f"fusion families (best configuration of each){_on(split)}")
    return _save(fig, path)


# --------------------------------------------------------------------------- suites
def forest(result, path=None):
    """Per collection: delta vs the default with 95% CIs, LOCO-tuned and in-domain-tuned
    (evaluation splits)."""
    plt = _plt()
    rows = list(result.loco)
    y = np.arange(len(rows))
    fig, ax = plt.subplots(figsize=(7.5, 0.55 * len(rows) + 1.6))
    for off, key, label, color in ((-0.15, "loco", "LOCO (tuned on the others)", "tab:blue"),
                                   (0.15, "in_domain", "in-domain tuned (optimistic)", "tab:orange")):
        if key == "loco":
            d = [r["default"]["delta"] for r in rows]
            lo = [r["default"]["delta_ci95"][0] for r in rows]
            hi = [r["default"]["delta_ci95"][1] for r in rows]
        else:
            d = [r["in_domain"]["delta_vs_default"] for r in rows]
            lo = [r["in_domain"]["delta_vs_default_ci95"][0] for r in rows]
            hi = [r["in_domain"]["delta_vs_default_ci95"][1] for r in rows]
        err = [np.subtract(d, lo), np.subtract(hi, d)]
        ax.errorbar(d, y + off, xerr=err, fmt="o", color=color, label=label, capsize=3)
    ax.axvline(0, color="k", lw=0.8)
    ax.set_yticks(y, [r["collection"] for r in rows])
    ax.invert_yaxis()
    ax.set_xlabel(f"delta {result.metric} vs {result.default['label']}")
    ax.set_title(f"suite {result.suite}: {result.verdict} [evaluation splits]")
    ax.legend(fontsize=8, loc="best")
    ax.grid(alpha=0.3, axis="x")
    return _save(fig, path)


def transfer_heatmap(result, path=None):
    """Tuned on A (rows), evaluated on B (columns): delta vs the default on B."""
    plt = _plt()
    tm = result.transfer_matrix
    d = np.asarray(tm["delta"])
    names = tm["collections"]
    lim = max(float(np.abs(d).max()), 1e-6)
    fig, ax = plt.subplots(figsize=(1.1 * len(names) + 2.5, 0.9 * len(names) + 1.5))
    im = ax.imshow(d, cmap="RdBu", vmin=-lim, vmax=lim)
    ax.set_xticks(range(len(names)), names, rotation=40, ha="right")
    ax.set_yticks(range(len(names)), names)
    for i in range(len(names)):
        for j in range(len(names)):
            ax.text(j, i, f"{d[i, j]:+.3f}", ha="center", va="center", fontsize=8)
    ax.set_xlabel("evaluated on (evaluation split)")
    ax.set_ylabel("tuned on (tuning split)")
    fig.colorbar(im, ax=ax, label=f"delta {result.metric} vs default")
    ax.set_title(f"transfer matrix, suite {result.suite} [tune split -> eval split]")
    return _save(fig, path)


def k_curves_collections(result, path=None):
    """RRF with equal weights vs k, one line per collection: delta vs k=60 on its
    evaluation split; a star marks the k each collection prefers on its tuning split."""
    plt = _plt()
    kc = result.k_curves
    ks = np.asarray(kc["k"])
    fig, ax = plt.subplots(figsize=(8, 4.5))
    for name, vals in kc["eval"].items():
        v = np.asarray(vals)
        ref = v[np.argmin(np.abs(ks - 60))]
        line, = ax.plot(ks, v - ref, marker="o", ms=3, label=name)
        bk = kc["best_k"].get(name)
        if bk is not None:
            i = int(np.argmin(np.abs(ks - bk)))
            ax.plot(ks[i], v[i] - ref, "*", ms=12, color=line.get_color())
    ax.axhline(0, color="k", lw=0.6)
    ax.set_xscale("log")
    ax.set_xlabel("RRF k (log), equal weights")
    ax.set_ylabel(f"delta {result.metric} vs k=60")
    ax.set_title(f"k curves per collection, suite {result.suite} [evaluation splits; star: "
                 "preferred k on tuning split]")
    ax.legend(fontsize=7, ncol=2)
    ax.grid(alpha=0.3)
    return _save(fig, path)


def headroom(result, path=None):
    """Per collection (LOCO, evaluation splits): RRF k=60 (or the shipped values), the static default, the adaptive
    policy, and the per-query oracles over the K candidates and over the whole grid."""
    plt = _plt()
    rows = list(result.loco)
    y = np.arange(len(rows))
    fig, ax = plt.subplots(figsize=(8, 0.6 * len(rows) + 1.8))
    series = ((result.default_short(), [r["default"]["value"] for r in rows], "tab:gray", "s"),
              ("static default", [r["static"]["value"] for r in rows], "tab:blue", "o"),
              ("adaptive policy", [r["adaptive"]["value"] for r in rows], "tab:red", "D"),
              (f"oracle over {result.n_candidates} candidates",
               [r["oracle"]["candidates"] for r in rows], "tab:orange", "^"),
              ("oracle over the grid", [r["oracle"]["grid"] for r in rows], "tab:green", "v"))
    for label, vals, color, marker in series:
        ax.scatter(vals, y, label=label, color=color, marker=marker, zorder=3)
    for i, r in enumerate(rows):
        ax.plot([r["static"]["value"], r["oracle"]["grid"]], [i, i], color="0.8", zorder=1)
    ax.set_yticks(y, [r["collection"] for r in rows])
    ax.invert_yaxis()
    ax.set_xlabel(f"{result.metric} (leave-one-collection-out)")
    ax.set_title(f"suite {result.suite}: adaptive fusion, {result.verdict} [evaluation splits]")
    ax.legend(fontsize=8, loc="best")
    ax.grid(alpha=0.3, axis="x")
    return _save(fig, path)


def engine_table(table, path=None):
    """Per engine mode: its default and its tuned score (held out), with the best free fusion
    of the same streams as a line: what each engine's fusion costs."""
    plt = _plt()
    rows = list(table.rows)
    y = np.arange(len(rows))
    fig, ax = plt.subplots(figsize=(8, 0.4 * len(rows) + 1.8))
    ax.scatter([r["default"] for r in rows], y, label="default", color="tab:gray", marker="s",
               zorder=3)
    ax.scatter([r["tuned"] for r in rows], y, label="tuned within its knobs (held out)",
               color="tab:blue", marker="o", zorder=3)
    for i, r in enumerate(rows):
        ax.plot([r["default"], r["tuned"]], [i, i], color="0.8", zorder=1)
    for k, (key, v) in enumerate(table.free.items()):
        ax.axvline(v["value"], color=("tab:red", "tab:orange")[k % 2], linestyle="--",
                   label=f"free fusion of {key}")
    ax.set_yticks(y, [f"{r['engine']} {r['mode']}" + ("" if r["live"] else " *")
                      for r in rows])
    ax.invert_yaxis()
    ax.set_xlabel(f"{table.metric} (held out)")
    ax.set_title(f"{table.scope}: each engine's fusion (* not run against a live engine)")
    ax.legend(fontsize=8, loc="best")
    ax.grid(alpha=0.3, axis="x")
    return _save(fig, path)
