"""The portable fusion policy at query time vs fusing the query with plain Python RRF (same process).

scifact test, all 300 queries, runs bm25, fts5 and dense cut to their top 100 (the policy's
depth). Per query: (a) baseline, plain Python RRF k=60 over the three lists (dict accumulate +
sort); (b) ``rrfbench/adaptive/portable/adaptive_policy.py``: the features, the utilities and the choice
(``choose``) for a hand-made trees policy (two ensembles of 100 trees of depth 3, the shape of
the ``gbm`` policy), a linear one, and one of the ``wgbm`` shape (three ensembles of 100 trees,
one per weight, snapped to the 66 points of a 0.1 weight simplex); (c) the same in node (``adaptive_policy.js``, timed inside
node with ``process.hrtime``), when node is installed. Goal: (b) under 1 ms a query.
Last line: ``ratio_vs_python_rrf: <float>`` (trees policy, Python).
"""

import json
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import numpy as np
from _common import ROOT

from rrfbench import load_dataset
from rrfbench.adaptive.features import feature_names, query_features
from rrfbench.adaptive.portable import adaptive_policy as ap
from rrfbench.workflows.dataset import load_runs

RUNS = ["bm25", "fts5", "dense"]
DEPTH = 100
K = 60
REPEAT = 7
CANDIDATES = [{"label": "rrf60", "method": "rrf", "k": [60.0] * 3, "weights": [1.0, 1.0, 1.0]},
              {"label": "rrf20 dense", "method": "rrf", "k": [20.0] * 3, "weights": [0.2, 0.2, 0.6]},
              {"label": "rrf10 lexical", "method": "rrf", "k": [10.0] * 3, "weights": [0.5, 0.4, 0.1]}]

NODE_DRIVER = r"""
const fs = require("fs");
const ap = require(process.argv[2]);
const input = JSON.parse(fs.readFileSync(process.argv[3], "utf8"));
const repeat = Number(process.argv[4]);
const qs = input.queries;
function rrf(lists) {
  const acc = new Map();
  for (const name in lists) {
    const l = lists[name];
    for (let i = 0; i < l.length; i++) acc.set(l[i][0], (acc.get(l[i][0]) || 0) + 1 / (60 + i + 1));
  }
  return Array.from(acc.entries()).sort((a, b) => b[1] - a[1]);
}
const tasks = {rrf: (q) => rrf(q.lists).length};
for (const [name, pol] of Object.entries(input.policies)) {
  tasks[name] = (q) => ap.choose(q.text, q.lists, pol) + 1;
}
// per task, the minimum over rounds of the mean per query (microseconds), the tasks
// interleaved in each round; the first round warms the JIT and is not counted
const out = {};
let sink = 0;
for (let r = 0; r < repeat + 1; r++) {
  for (const [name, fn] of Object.entries(tasks)) {
    const t0 = process.hrtime.bigint();
    for (const q of qs) sink += fn(q);
    const us = Number(process.hrtime.bigint() - t0) / 1e3 / qs.length;
    if (r > 0) out[name] = Math.min(out[name] ?? Infinity, us);
  }
}
if (sink < 0) console.error(sink);
console.log(JSON.stringify(out));
"""


def rrf(lists, k=K):
    """Plain Python RRF of one query's lists: dict accumulate + sort."""
    acc = {}
    for lst in lists.values():
        for rank, (doc, _) in enumerate(lst, 1):
            acc[doc] = acc.get(doc, 0.0) + 1.0 / (k + rank)
    return sorted(acc.items(), key=lambda kv: -kv[1])


def random_tree(rng, Z, depth=3):
    """A complete tree of ``depth``, thresholds drawn from the real standardised features."""
    n_inner, n_nodes = 2 ** depth - 1, 2 ** (depth + 1) - 1
    feat, thr = [0] * n_nodes, [-2.0] * n_nodes
    left, right = [-1] * n_nodes, [-1] * n_nodes
    for node in range(n_inner):
        f = int(rng.integers(Z.shape[1]))
        feat[node], thr[node] = f, float(np.float32(Z[int(rng.integers(len(Z))), f]))
        left[node], right[node] = 2 * node + 1, 2 * node + 2
    return {"feature": feat, "threshold": thr, "left": left, "right": right,
            "value": rng.normal(0.0, 0.01, n_nodes).tolist()}


def make_policies(X, names):
    mean, scale = X.mean(axis=0), X.std(axis=0)
    scale = np.where(scale > 0, scale, 1.0)
    Z = (X - mean) / scale
    rng = np.random.default_rng(0)
    base = {"runs": RUNS, "depth": DEPTH, "rbo_p": 0.9, "features": names,
            "candidates": CANDIDATES, "tau": 0.0}
    trees = {"type": "trees", "target": "gains", "mean": mean.tolist(), "scale": scale.tolist(),
             "ensembles": [{"init": 0.0, "rate": 0.05,
                            "trees": [random_tree(rng, Z) for _ in range(100)]} for _ in range(2)]}
    linear = {"type": "linear", "target": "gains", "mean": mean.tolist(), "scale": scale.tolist(),
              "coef": rng.normal(0.0, 0.1, (2, len(names))).tolist(),
              "intercept": [0.0, 0.0]}
    # the wgbm shape: one 100-tree ensemble per weight, snapped to the 66 points of a 0.1 simplex
    points = [[a / 10, b / 10, (10 - a - b) / 10] for a in range(11) for b in range(11 - a)]
    wtrees = {"type": "trees", "target": "weights", "mean": mean.tolist(),
              "scale": scale.tolist(), "points": points,
              "ensembles": [{"init": 1 / 3, "rate": 0.05,
                             "trees": [random_tree(rng, Z) for _ in range(100)]} for _ in range(3)]}
    wcands = [{"label": f"convex w={p}", "method": "convex", "weights": p} for p in points]
    return {"trees": {**base, "model": trees}, "linear": {**base, "model": linear},
            "weights_trees": {**base, "candidates": wcands, "model": wtrees}}


def per_query_us(tasks):
    """``{name: (fn, items)}`` -> ``{name: microseconds per item}``: the minimum over ``REPEAT``
    rounds of the mean over all items, the tasks interleaved in each round so that drift in
    the machine's load hits them all."""
    best = dict.fromkeys(tasks, float("inf"))
    for _ in range(REPEAT):
        for name, (fn, items) in tasks.items():
            t0 = time.perf_counter()
            for item in items:
                fn(item)
            best[name] = min(best[name], (time.perf_counter() - t0) / len(items) * 1e6)
    return best


def main():
    ds = load_dataset("scifact")
    runs = load_runs(ds, RUNS, "test")
    text = dict(zip(ds.queries.qid.astype(str), ds.queries.text, strict=True))
    qids = sorted(set().union(*(set(r.df.qid.astype(str)) for r in runs)))
    lists = {q: {} for q in qids}
    for r in runs:
        df = r.df[r.df["rank"] <= DEPTH]
        for q, g in df.groupby(df.qid.astype(str), sort=False):
            lists[q][r.name] = list(zip(g.docid.astype(str), g.score.astype(float), strict=True))
    queries = [{"text": text[q], "lists": lists[q]} for q in qids]
    names = feature_names(RUNS)
    X = query_features(runs, {q: text[q] for q in qids}, qids)[names].to_numpy()
    pols = make_policies(X, names)

    def baseline(q):
        return rrf(q["lists"])

    def policy(name):
        pol = pols[name]
        return lambda q: ap.choose(q["text"], q["lists"], pol)

    def feats(q):
        return ap.features(q["text"], q["lists"], pols["trees"])

    def utils(x):
        return ap.utilities(x, pols["trees"])

    xs = [feats(q) for q in queries]
    tasks = {"base": (baseline, queries), "trees": (policy("trees"), queries),
             "linear": (policy("linear"), queries), "wtrees": (policy("weights_trees"), queries),
             "feat": (feats, queries), "util": (utils, xs)}
    per_query_us({k: (fn, items[:20]) for k, (fn, items) in tasks.items()})  # warm
    t = per_query_us(tasks)
    t_base, t_trees, t_lin, t_w, t_feat, t_util = (t[k] for k in ("base", "trees", "linear",
                                                                   "wtrees", "feat", "util"))
    choices = np.bincount([ap.choose(q["text"], q["lists"], pols["trees"]) for q in queries],
                          minlength=3)
    n = len(queries)
    print(f"scifact test: {n} queries, {' + '.join(RUNS)} top {DEPTH}; per query, best of {REPEAT}")
    print(f"(a) python RRF k=60 (baseline):                {t_base:8.1f} us")
    print(f"(b) python policy, trees (2 x 100, depth 3):   {t_trees:8.1f} us  "
          f"({t_trees / t_base:.2f}x baseline; features {t_feat:.1f} us + trees {t_util:.1f} us)"
          f"  choices {choices.tolist()}")
    print(f"(b) python policy, linear:                     {t_lin:8.1f} us  "
          f"({t_lin / t_base:.2f}x baseline)")
    print(f"(b) python policy, weight trees (3 x 100, 66 points): {t_w:8.1f} us  "
          f"({t_w / t_base:.2f}x baseline)")
    print(f"(b) under 1 ms a query: trees {'yes' if t_trees < 1000 else 'NO'}, "
          f"linear {'yes' if t_lin < 1000 else 'NO'}, weight trees {'yes' if t_w < 1000 else 'NO'}")
    node = shutil.which("node")
    if node is None:
        print("(c) node not installed: JavaScript policy not timed")
    else:
        with tempfile.TemporaryDirectory() as tmp:
            tmp = Path(tmp)
            (tmp / "driver.js").write_text(NODE_DRIVER)
            (tmp / "input.json").write_text(json.dumps({"queries": queries, "policies": pols}))
            proc = subprocess.run([node, str(tmp / "driver.js"),
                                   str(ROOT / "rrfbench" / "adaptive" / "portable" / "adaptive_policy.js"),
                                   str(tmp / "input.json"), str(REPEAT)],
                                  capture_output=True, text=True, check=True)
        js = json.loads(proc.stdout)
        print(f"(c) node policy, trees:                        {js['trees']:8.1f} us  "
              f"({js['trees'] / t_base:.2f}x python baseline)")
        print(f"(c) node policy, linear:                       {js['linear']:8.1f} us  "
              f"({js['linear'] / t_base:.2f}x python baseline)")
        print(f"(c) node policy, weight trees:                 {js['weights_trees']:8.1f} us  "
              f"({js['weights_trees'] / t_base:.2f}x python baseline)")
        print(f"(c) node RRF k=60 (for scale):                 {js['rrf']:8.1f} us  "
              f"({js['rrf'] / t_base:.2f}x python baseline)")
    print(f"ratio_vs_python_rrf: {t_trees / t_base:.3f}")


if __name__ == "__main__":
    main()
