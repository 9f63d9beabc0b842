"""What a suite's collections give the transfer analysis: per collection the matrices of the
tuning metric (grid points x queries) on its tuning and evaluation splits, the default's values,
the single runs' and its characteristics; gathered from one combined sweep engine per split role
(free fusion) or built by the caller (a studied system, :func:`rrfbench.tuning.transfer.preset_suite`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from ..core.errors import InputError
from ..core.runs import Qrels, Run, run_frame
from ..fusion.sweep import FusionEngine, configs_from_table, run_sweep
from ..results.values import Protocol
from .holdout import best_index, rrf60_config, single_run_configs

SEP = "\x1f"  # collection / query id separator inside a combined engine


@dataclass
class CollectionData:
    """One collection's matrices: grid points x queries of the tuning metric."""

    name: str
    protocol: Protocol
    T: np.ndarray                  # (grid, tuning queries)
    E: np.ndarray                  # (grid, evaluation queries)
    default_T: np.ndarray          # the default on the tuning queries
    default_E: np.ndarray          # ... and on the evaluation queries
    eval_qids: list
    tune_qids: list = field(default_factory=list)
    singles_T: dict = field(default_factory=dict)   # run name -> values (fusion only)
    singles_E: dict = field(default_factory=dict)
    stats: dict = field(default_factory=dict)       # collection characteristics


def combine(parts: list[tuple[str, list, object]]):
    """One engine input over several collections: runs per retriever and qrels, with query ids
    prefixed ``<collection>\\x1f``; returns (runs, qrels)."""


    n = len(parts[0][1])
    runs = []
    for r in range(n):
        frames, floors = [], set()
        for name, rs, _ in parts:
            df = rs[r].df
            frames.append(run_frame(name + SEP + df.qid.to_numpy(dtype=object),
                                    df.docid.to_numpy(dtype=object), df.score.to_numpy(),
                                    df["rank"].to_numpy()))
            floors.add(rs[r].score_floor)
        if len(floors) != 1:
            raise InputError(f"run {parts[0][1][r].name!r} declares different score floors "
                             f"across collections: {sorted(map(str, floors))}")
        runs.append(Run(pd.concat(frames, ignore_index=True), parts[0][1][r].name,
                        meta={"score_floor": floors.pop()}, _ranked=True))
    qr = []
    for name, _, qrels in parts:
        df = qrels.df
        qr.append(pd.DataFrame({"qid": name + SEP + df.qid.astype(str), "docid": df.docid,
                                "relevance": df.relevance}))
    return runs, Qrels(pd.concat(qr, ignore_index=True), "suite")


def slices(qids: Sequence[str]) -> dict[str, np.ndarray]:
    """Per collection, the positions of its queries in a combined engine's query list."""
    names = np.array([q.split(SEP, 1)[0] for q in qids], dtype=object)
    return {n: np.flatnonzero(names == n) for n in dict.fromkeys(names)}


def collection_stats(ds, protocol: Protocol) -> dict:
    """What may explain which constants a collection prefers."""
    qr = ds.qrels(protocol.eval_split).df
    rel = qr[qr.relevance > 0].groupby("qid").size()
    q = ds.split_queries(protocol.eval_split)
    doc_len = ds.corpus.text.str.split().str.len() + ds.corpus.title.str.split().str.len()
    return {"docs": int(len(ds.corpus)), "eval_queries": int(len(q)),
            "relevant_per_query": float(rel.mean()) if len(rel) else 0.0,
            "query_words": float(q.text.str.split().str.len().mean()) if len(q) else 0.0,
            "doc_words": float(doc_len.mean())}


@dataclass
class SuiteMatrices:
    """What a free-fusion suite sweep gives: per collection its matrices, the grid as labels,
    configurations (JSON) and :class:`~rrfbench.fusion.config.Config` objects, and the sweep tables."""

    colls: list
    names: list
    labels: list
    configs: list
    cfgs: list
    tables: dict
    k_curves: dict


def suite_matrices(datasets_protocols: list, load: Callable, grid, metric: str,
                   metrics: Sequence[str], out=None, progress: bool = True, map_chunks=None,
                   log: Callable[[str], None] = lambda _m: None, suite: str = "") -> SuiteMatrices:
    """One combined engine per split role, one sweep each (resumed from ``out``), sliced back
    into per-collection matrices (``load(dataset, split)``: the runs to fuse)."""
    names = None
    parts_t, parts_e = [], []
    same = all(p.tune_split == p.eval_split for _, p in datasets_protocols)
    for ds, p in datasets_protocols:
        rt = load(ds, p.tune_split)
        names = names or [r.name for r in rt]
        parts_t.append((ds.name, rt, ds.qrels(p.tune_split)))
        re_ = rt if p.eval_split == p.tune_split else load(ds, p.eval_split)
        parts_e.append((ds.name, re_, ds.qrels(p.eval_split)))
    te = FusionEngine(*combine(parts_t), tuple(metrics))
    ee = te if same else FusionEngine(*combine(parts_e), tuple(metrics))
    log(f"suite {suite}: {len(grid)} configurations x {len(datasets_protocols)} collections "
        f"({len(te.qids)} tuning queries, {len(ee.qids)} evaluation queries)")
    tt = run_sweep(te, grid, out, progress=progress, name="sweep_tune", map_chunks=map_chunks)
    et = tt if same else run_sweep(ee, grid, out, progress=progress, name="sweep_eval",
                                   map_chunks=map_chunks)
    m = te.metric_names.index(metric)
    if m != 0:
        raise InputError(f"the tuning metric must be the engine's first metric ({te.metric_names[0]})")
    pq_t = np.stack(tt.per_query.to_numpy())
    pq_e = np.stack(et.per_query.to_numpy())
    n = len(names)
    refs = single_run_configs(n) + [rrf60_config(n)]
    ref_t = te.evaluate(refs)[:, m]
    ref_e = ref_t if same else ee.evaluate(refs)[:, m]
    st, se = slices(te.qids), slices(ee.qids)
    colls = []
    for ds, p in datasets_protocols:
        a, b = st[ds.name], se[ds.name]
        colls.append(CollectionData(
            name=ds.name, protocol=p, T=pq_t[:, a], E=pq_e[:, b], default_T=ref_t[n, a],
            default_E=ref_e[n, b], eval_qids=[ee.qids[i].split(SEP, 1)[1] for i in b],
            tune_qids=[te.qids[i].split(SEP, 1)[1] for i in a],
            singles_T={nm: ref_t[i, a] for i, nm in enumerate(names)},
            singles_E={nm: ref_e[i, b] for i, nm in enumerate(names)},
            stats=collection_stats(ds, p)))
    labels = list(tt.label)
    cfgs = configs_from_table(tt, names)
    configs = [{**c.to_json(), "label": lab} for c, lab in zip(cfgs, labels, strict=True)]
    return SuiteMatrices(colls, names, labels, configs, cfgs, {"tune": tt, "eval": et},
                         _k_curves(tt, et, names, colls, metric, st, se))


def _k_curves(tt, et, names, colls, metric, st, se) -> dict:
    """Per collection, the metric of RRF with equal weights at every k of the grid (evaluation
    queries), and the k each collection prefers on its tuning queries."""
    eq = (tt.method == "rrf") & (tt.rank_base == 1) & (tt.limit == 0)
    for nm in names:
        eq &= tt[f"depth_{nm}"] == 0
    w = tt[[f"w_{nm}" for nm in names]].to_numpy()
    k = tt[[f"k_{nm}" for nm in names]].to_numpy()
    eq &= np.isclose(w, w[:, :1]).all(axis=1) & (w[:, 0] > 0) & np.isclose(k, k[:, :1]).all(axis=1)
    rows = np.flatnonzero(eq.to_numpy())
    if not len(rows):
        return {}
    ks = k[rows, 0]
    order = np.argsort(ks, kind="stable")
    rows, ks = rows[order], ks[order]
    pq_e = np.stack(et.per_query.to_numpy()[rows])
    pq_t = np.stack(tt.per_query.to_numpy()[rows])
    curves, best = {}, {}
    for c in colls:
        curves[c.name] = pq_e[:, se[c.name]].mean(axis=1).tolist()
        best[c.name] = float(ks[best_index(pq_t[:, st[c.name]].mean(axis=1))])
    return {"k": ks.tolist(), "eval": curves, "best_k": best}
