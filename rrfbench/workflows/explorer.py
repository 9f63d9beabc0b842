"""A live fusion explorer for notebooks (ipywidgets): move a slider, see the numbers.

``rrfbench.explore(dataset)`` builds the sweep engine once over the runs (bm25, fts5, dense by
default) of one split, then every control change scores the one configuration it describes:

* controls: fusion method, normalisation and missing-document policy (score fusion), one weight
  slider per run, k on a log scale (one k, or one per run), candidate depth, the metric, a query
  picker and, optionally, a tuned configuration from a ``best.json`` to compare with;
* numbers: the mean metric with its 95% bootstrap CI, the delta vs RRF k=60 with equal weights
  and vs the best single run (p-values from the paired randomisation test), a per-query
  win/loss strip against RRF k=60, and for the picked query the :func:`rrfbench.explain` table.

The values shown are those of :func:`rrfbench.fuse` / :func:`rrfbench.score_fusion` +
:func:`rrfbench.evaluate` for the same configuration (checked by the tests). Without a live
kernel (a rendered notebook) the cell shows a static summary of the current configuration
instead of an error. ``benchmarks/bench_explorer.py`` measures the slider-to-numbers latency.
"""

from __future__ import annotations

import html
import os
import time

import numpy as np

from ..core.errors import InputError, MissingDependencyError
from ..core.stats import bootstrap_ci, permutation_test
from ..fusion.config import Config
from ..fusion.functions import MISSING, NORMALISATIONS
from ..fusion.sweep import FusionEngine
from ..outputs.explanations import explain
from ..results.dataset import load_result
from .dataset import as_dataset, load_runs

CI_RESAMPLES = 10_000


def _widgets():
    try:
        import ipywidgets
    except ImportError:
        raise MissingDependencyError(
            "the explorer needs ipywidgets: pip install -e '.[notebooks]'") from None
    return ipywidgets


class Explorer:
    """See the module docstring; build one with :func:`explore`."""

    def __init__(self, dataset, runs=None, split: str = "test",
                 specs=("bm25", "fts5", "dense"), metrics=("nDCG@10", "R@100", "RR@10"),
                 best=None):
        self.dataset = as_dataset(dataset)
        self.split = split
        self.qrels = self.dataset.qrels(split)
        self.runs = list(runs) if runs is not None else load_runs(self.dataset, specs, split)
        self.names = [r.name for r in self.runs]
        self.engine = FusionEngine(self.runs, self.qrels, tuple(metrics))
        self.metrics = list(self.engine.metric_names)
        n = len(self.runs)
        refs = [Config("rrf", (60.0,) * n, (1.0,) * n, (None,) * n, 1)] + [
            Config("rrf", (60.0,) * n, tuple(1.0 if j == i else 0.0 for j in range(n)),
                   (None,) * n, 1) for i in range(n)]
        self._refs = self.engine.evaluate(refs)          # (1 + n, metrics, queries)
        self.best = best
        self._best_pq = None
        if best is not None and not getattr(best, "preset", None) and \
                list(getattr(best, "runs", ())) == self.names:
            cfg = best.config_obj()
            self._best_label = cfg.label(self.names)
            self._best_pq = self.engine.evaluate([cfg])[0]   # (metrics, queries)
        self.last_latency_ms = 0.0
        self._values: dict = {}
        self._build()
        self.update()

    # -- controls ---------------------------------------------------------------------------
    def _build(self) -> None:
        w = _widgets()
        n = len(self.runs)
        style = {"description_width": "110px"}
        self.w_method = w.Dropdown(options=["rrf", "convex", "combsum", "combmnz"], value="rrf",
                                   description="method", style=style)
        self.w_norm = w.Dropdown(options=list(NORMALISATIONS[:3]), value="minmax",
                                 description="normalisation", style=style)
        self.w_missing = w.Dropdown(options=list(MISSING), value="zero", description="missing",
                                    style=style)
        self.w_weights = [w.FloatSlider(value=1.0 / n, min=0.0, max=1.0, step=0.05,
                                        description=f"w {name}", style=style,
                                        readout_format=".2f") for name in self.names]
        self.w_k = w.FloatLogSlider(value=60, base=10, min=0, max=3, step=0.05, description="k",
                                    style=style, readout_format=".0f")
        self.w_per_run = w.Checkbox(value=False, description="one k per run")
        self.w_ks = [w.FloatLogSlider(value=60, base=10, min=0, max=3, step=0.05,
                                      description=f"k {name}", style=style, readout_format=".0f")
                     for name in self.names]
        self.w_depth = w.IntSlider(value=0, min=0, max=1000, step=10,
                                   description="depth (0 = all)", style=style)
        self.w_metric = w.Dropdown(options=self.metrics, value=self.metrics[0],
                                   description="metric", style=style)
        self.w_query = w.Dropdown(options=["(none)"] + list(self.engine.qids), value="(none)",
                                  description="explain query", style=style)
        self.out_summary = w.HTML()
        self.out_strip = w.HTML()
        self.out_explain = w.HTML()
        for ctl in [self.w_method, self.w_norm, self.w_missing, self.w_k, self.w_per_run,
                    self.w_depth, self.w_metric, self.w_query, *self.w_weights, *self.w_ks]:
            ctl.observe(self.update, names="value")
        self.widget = w.VBox([
            w.HBox([w.VBox([self.w_method, self.w_norm, self.w_missing, self.w_metric]),
                    w.VBox([*self.w_weights]),
                    w.VBox([self.w_k, self.w_per_run, *self.w_ks, self.w_depth])]),
            self.out_summary, self.out_strip, self.w_query, self.out_explain])

    def config(self) -> Config:
        """The configuration the controls describe."""
        n = len(self.runs)
        method = self.w_method.value
        weights = tuple(float(s.value) for s in self.w_weights)
        if sum(weights) <= 0:
            weights = (1.0,) * n
        if method == "rrf":
            ks = (tuple(float(round(s.value, 6)) for s in self.w_ks) if self.w_per_run.value
                  else (float(round(self.w_k.value, 6)),) * n)
            depth = (None if self.w_depth.value == 0 else int(self.w_depth.value),) * n
            return Config("rrf", ks, weights, depth, 1)
        if method != "convex":
            weights = (1.0,) * n
        return Config(method, (0.0,) * n, weights, (None,) * n, 1, self.w_norm.value,
                      self.w_missing.value)

    def set(self, **values) -> None:
        """Set controls from Python (``method``, ``norm``, ``missing``, ``weights``, ``k``,
        ``ks``, ``depth``, ``metric``, ``query``) and update once."""
        self._hold = True
        try:
            for key, v in values.items():
                if key == "weights":
                    for s, x in zip(self.w_weights, v, strict=True):
                        s.value = x
                elif key == "ks":
                    self.w_per_run.value = True
                    for s, x in zip(self.w_ks, v, strict=True):
                        s.value = x
                elif key == "k":
                    self.w_per_run.value = False
                    self.w_k.value = v
                elif hasattr(self, f"w_{key}"):
                    getattr(self, f"w_{key}").value = v
                else:
                    raise InputError(f"explorer: no control {key!r}")
        finally:
            self._hold = False
        self.update()

    # -- numbers ----------------------------------------------------------------------------
    def update(self, change=None) -> None:
        if getattr(self, "_hold", False):
            return
        t0 = time.perf_counter()
        cfg = self.config()
        m = self.metrics.index(self.w_metric.value)
        pq = self.engine.evaluate([cfg])[0, m]
        rrf60 = self._refs[0, m]
        singles = self._refs[1:, m]
        best = int(np.argmax(singles.mean(axis=1)))
        lo, hi = bootstrap_ci(pq, n_resamples=CI_RESAMPLES)
        d60, dbs = pq - rrf60, pq - singles[best]
        self._values = {
            "config": cfg, "label": cfg.label(self.names), "metric": self.w_metric.value,
            "value": float(pq.mean()), "ci95": (lo, hi),
            "rrf60": float(rrf60.mean()), "delta_rrf60": float(d60.mean()),
            "p_rrf60": permutation_test(pq, rrf60),
            "best_single": self.names[best], "best_single_value": float(singles[best].mean()),
            "delta_best_single": float(dbs.mean()), "p_best_single": permutation_test(pq, singles[best]),
            "wins": int((d60 > 0).sum()), "losses": int((d60 < 0).sum()),
            "ties": int((d60 == 0).sum()), "per_query": pq,
        }
        if self._best_pq is not None:
            bt = self._best_pq[m]
            self._values.update(tuned_label=self._best_label, tuned_value=float(bt.mean()),
                                delta_tuned=float((pq - bt).mean()),
                                p_tuned=permutation_test(pq, bt))
        self.out_summary.value = self._summary_html()
        self.out_strip.value = self._strip_svg(d60)
        self.out_explain.value = self._explain_html(cfg)
        self.last_latency_ms = 1000 * (time.perf_counter() - t0)

    def values(self) -> dict:
        """The numbers currently shown (a copy)."""
        return dict(self._values)

    def _summary_html(self) -> str:
        v = self._values
        tuned = (f"<br>tuned (best.json) <code>{html.escape(v['tuned_label'])}</code>: "
                 f"{v['tuned_value']:.4f}; current vs tuned <b>{v['delta_tuned']:+.4f}</b> "
                 f"(p {v['p_tuned']:.3g})" if "tuned_label" in v else "")
        return (f"<b>{html.escape(v['label'])}</b> on {html.escape(self.dataset.name)}/"
                f"{html.escape(self.split)} ({len(v['per_query'])} queries)<br>"
                f"{v['metric']} <b>{v['value']:.4f}</b> (95% CI {v['ci95'][0]:.4f}-"
                f"{v['ci95'][1]:.4f}) &middot; vs RRF k=60 equal {v['rrf60']:.4f}: "
                f"<b>{v['delta_rrf60']:+.4f}</b> (p {v['p_rrf60']:.3g}) &middot; vs best single "
                f"({html.escape(v['best_single'])}) {v['best_single_value']:.4f}: "
                f"<b>{v['delta_best_single']:+.4f}</b> (p {v['p_best_single']:.3g}) &middot; "
                f"{v['wins']} wins / {v['losses']} losses / {v['ties']} ties vs RRF k=60{tuned}")

    @staticmethod
    def _strip_svg(delta: np.ndarray) -> str:
        d = np.sort(delta)[::-1]
        n = max(len(d), 1)
        scale = max(float(np.abs(d).max()), 1e-9)
        width = 600 / n
        bars = []
        for i, x in enumerate(d):
            h = 30 * abs(x) / scale
            y = 30 - h if x > 0 else 30
            color = "#2ca02c" if x > 0 else "#d62728" if x < 0 else "#999"
            bars.append(f'<rect x="{i * width:.2f}" y="{y:.2f}" width="{max(width, 0.5):.2f}" '
                        f'height="{max(h, 0.5):.2f}" fill="{color}"/>')
        return ('<svg width="600" height="60" xmlns="http://www.w3.org/2000/svg">'
                + "".join(bars) + '<line x1="0" y1="30" x2="600" y2="30" stroke="black" '
                'stroke-width="0.5"/></svg><br><small>per-query delta vs RRF k=60, sorted '
                '(green: wins, red: losses)</small>')

    def _explain_html(self, cfg: Config) -> str:
        q = self.w_query.value
        if q == "(none)":
            return ""
        best = int(np.argmax(self._refs[1:, 0].mean(axis=1)))
        table = explain(self.runs, cfg, q, self.qrels, top=10, best=best)
        text = self.dataset.queries.set_index("qid").text.get(q, "")
        return (f"<b>query {html.escape(q)}</b>: {html.escape(text)}"
                + table.round(4).to_html(index=False, na_rep=""))

    # -- display ----------------------------------------------------------------------------
    def static_summary(self) -> str:
        """What a rendered notebook shows without a live kernel."""
        return ("<div><i>rrfbench explorer (needs a live kernel to move the controls); current "
                "configuration:</i><br>" + self._summary_html() + "</div>")

    def _repr_mimebundle_(self, include=None, exclude=None):
        bundle = self.widget._repr_mimebundle_(include=include, exclude=exclude) or {}
        bundle = dict(bundle)
        bundle["text/html"] = self.static_summary()
        bundle["text/plain"] = (f"rrfbench explorer: {self._values['label']} "
                                f"{self._values['metric']} {self._values['value']:.4f}")
        return bundle


def explore(dataset, runs=None, split: str = "test", specs=("bm25", "fts5", "dense"),
            best=None) -> Explorer:
    """A live fusion explorer over ``runs`` (or the cached runs of ``specs``) on ``split``;
    ``best`` (a result object or a best.json path) names a tuned configuration to compare."""
    if isinstance(best, (str, os.PathLike)):
        best = load_result(best)
    return Explorer(dataset, runs, split, specs, best=best)
