"""Judging a collection to decide its fusion constants, and grading that decision by simulation.

:func:`simulate_decision` hides a collection's qrels from everything but a simulated judge
(:class:`rrfbench.judging.judges.QrelsJudge`): the candidates are the current constants (the
suite's default, RRF k=60 with equal weights), the change the suite selected on the *other*
collections (its leave-one-collection-out selection) and a few strong alternatives from the
same evidence (:func:`alternatives`); the prior is the suite's decision for that collection made
without it (the nested grading of the decision rule), and up to ``budget`` pairs are judged in
the order of a selection method (:mod:`rrfbench.judging.contest`). Only then are the full qrels
read, to say whether the decision was right (the best candidate under nDCG@10, or within 0.005
of it) and its regret. :func:`simulation_table` does it for every
collection of a suite, budget and method, and writes the table, a plot and a report.

Called from: the CLI's ``judge`` command and tests.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from ..core.errors import InputError
from ..core.evaluation import evaluate, evaluate_per_query
from ..core.parallel import process_imap
from ..core.progress import progress
from ..core.stats import permutation_test
from ..core.store import results_dir, write_figure, write_json, write_text
from ..data.datasets import load_dataset
from ..fusion.config import Config
from ..judging.contest import Contest
from ..judging.decide import METHODS, Prior
from ..judging.judges import NoisyJudge, QrelsJudge
from ..judging.log import JudgmentLog
from ..results.dataset import load_result
from ..results.shipped import shipped
from ..retrievers import parse_spec, retriever_name
from ..systems import engines, presets
from ..systems.registry import get_system
from ..tuning.holdout import choose_protocol
from .cache import _quiet
from .dataset import kind_dir, load_runs, preset_runs, sweep_grid
from .suite import suite_members, transfer_dir

SPECS = ("bm25", "fts5", "dense")   # free fusion's streams: the suite's
BUDGETS = (0, 25, 50, 100, 200, 400)
ALTERNATIVES = 2      # strong alternatives beside the suite's change (see alternatives())
RIGHT_TOL = 0.005     # a decision within this much nDCG@10 of the better candidate is right
LOSS_TOL = 0.01       # a decision that loses more than this against the current constants loses
KAPPAS = (0.6,)       # the noisy judges of the simulation table (assessors: kappa 0.5-0.65)
METRIC = "nDCG@10"


@dataclass(frozen=True)
class Candidates:
    """The decision to make: the current constants, the change, the suite's own decision for
    this collection (``prior_take``, made without it), where it comes from, and the prior
    (:class:`~rrfbench.judging.decide.Prior`) the judgments update."""

    current: dict
    change: dict
    prior_take: bool
    source: str
    prior: Prior
    system: str | None = None     # a studied system or engine mode (None: free fusion)
    alternatives: tuple = ()      # (config, Prior, label): strong alternatives, see alternatives()


def alternatives(r, collection: str, by_label: dict, exclude: Sequence[str],
                 n: int = None) -> tuple:
    """A few strong alternatives from the suite's leave-one-collection-out evidence: every other
    collection's own selection (the transfer matrix's rows), scored by its mean nDCG@10 gain
    over the default on the collections that are neither this one nor its source (so the gain
    is out of sample twice); the ``n`` best (default :data:`ALTERNATIVES`) whose labels are not
    in ``exclude`` (the current constants and the change), each with that evidence as its
    prior."""
    n = ALTERNATIVES if n is None else n
    tm = r.transfer_matrix
    cols, delta = list(tm["collections"]), tm["delta"]
    source = {row["collection"]: row["in_domain"]["label"] for row in r.loco}
    scored = []
    for i, src in enumerate(cols):
        label = source.get(src)
        if src == collection or label is None or label not in by_label:
            continue
        gains = [delta[i][j] for j, c in enumerate(cols) if c not in (collection, src)]
        if len(gains) < 2:
            continue
        scored.append((-float(np.mean(gains)), label, src, gains))
    out, seen = [], set(exclude)
    for neg, label, src, gains in sorted(scored):
        if label in seen:
            continue
        seen.add(label)
        out.append((by_label[label], Prior(-neg, float(np.std(gains, ddof=1)), len(gains),
                    f"{label} (selected on {src}) on {len(gains)} other collections"), label))
        if len(out) == n:
            break
    return tuple(out)


def suite_candidates(suite: str, collection: str) -> Candidates:
    """The candidates and the prior for ``collection`` from the suite's saved result: for a
    member of the suite, its leave-one-collection-out selection, the rule's nested decision and
    the other collections' LOCO gains; for any other collection, the recommendation and every
    collection's LOCO gain."""
    path = transfer_dir(suite) / "best.json"
    r = _suite_result(suite, "best.json", f"{path}: no suite result; run rrfbench sweep "
                      f"--suite {suite} first")
    grid = {c.label(list(r.runs)): c for c in sweep_grid(len(r.specs))}
    current = r.default["config"]
    rows = {row["collection"]: row for row in r.loco}
    rule = r.decision["rule"]
    gains = [row["default"]["delta"] for c, row in rows.items() if c != collection]
    prior = Prior(float(np.mean(gains)), float(np.std(gains, ddof=1)) if len(gains) > 1 else 0.0,
                  len(gains), f"the LOCO gains of suite {suite} on {len(gains)} other collections")
    if collection in rows:
        label = rows[collection]["selected"]
        if label not in grid:
            raise InputError(f"{path}: the selection {label!r} is not in the default grid")
        took = r.decision["grading"]["rules"][rule]["per_collection"][collection]["took_change"]
        alts = alternatives(r, collection, {k: c.to_json() for k, c in grid.items()},
                            [current.get("label", ""), label])
        return Candidates(current, grid[label].to_json(), bool(took), (
            f"suite {suite} without {collection}: selected {label}, rule {rule!r} "
            f"{'takes' if took else 'keeps the default over'} it"), prior, None, alts)
    alts = alternatives(r, collection, {k: c.to_json() for k, c in grid.items()},
                        [current.get("label", ""), r.label])
    return Candidates(current, r.config, bool(r.decision["take_change"]),
                      f"suite {suite}: recommendation {r.label}, rule {rule!r}", prior, None, alts)


def system_candidates(suite: str, name: str, collection: str,
                      settings: dict | None = None) -> Candidates:
    """The candidates for a studied system or an engine mode ``name`` (``-p``): its shipped
    knobs (with ``settings``, the team's own values, over them) against what the suite's
    result for ``name`` selects (for a member of the suite: without it), and the prior from
    the other collections' LOCO gains of that selection over the shipped knobs."""
    space = get_system(name)
    path = transfer_dir(suite) / kind_dir(name) / name / "best.json"
    how = "engines" if kind_dir(name) == "engines" else "tune"
    r = _suite_result(suite, f"{kind_dir(name)}/{name}/best.json", (
        f"{path}: no suite result for {name}; run rrfbench {how} --suite {suite} "
        f"{'--engine ' + space.engine if how == 'engines' else '-p ' + name} first"))
    current = space.defaults() | dict(settings or {})
    space.check(current)
    rows = {row["collection"]: row for row in r.loco}
    gains = [row["default"]["delta"] for c, row in rows.items() if c != collection]
    prior = Prior(float(np.mean(gains)), float(np.std(gains, ddof=1)) if len(gains) > 1 else 0.0,
                  len(gains), f"the LOCO gains of {name} on {len(gains)} other collections of "
                  f"suite {suite} (over its shipped knobs)")
    rule = r.decision["rule"]
    own = f"; current: your --set {settings}" if settings else ""
    by_label = {knobs_label(space, g): g for g in space.grid()}
    if collection in rows:
        label = rows[collection]["selected"]
        if label not in by_label:
            raise InputError(f"{path}: the selection {label!r} is not in {name}'s grid")
        took = r.decision["grading"]["rules"][rule]["per_collection"][collection]["took_change"]
        alts = alternatives(r, collection, by_label, [knobs_label(space, current), label])
        return Candidates(current, by_label[label], bool(took), (
            f"{name}, suite {suite} without {collection}: selected {label}, rule {rule!r} "
            f"{'takes' if took else 'keeps the shipped knobs over'} it{own}"), prior, name, alts)
    change = space.defaults() | dict(r.config)
    alts = alternatives(r, collection, by_label, [knobs_label(space, current),
                                                  knobs_label(space, change)])
    return Candidates(current, change, bool(r.decision["take_change"]),
                      f"{name}, suite {suite}: recommendation {r.label}, rule {rule!r}{own}",
                      prior, name, alts)


def _suite_result(suite: str, relative: str, missing: str):
    """``transfer/<suite>/<relative>`` under the results root, else the copy shipped with the
    package (:mod:`rrfbench.results.shipped`: a team's folder has no suite results), else
    ``missing`` as the error."""
    path = transfer_dir(suite) / relative
    if path.exists():
        return load_result(path)
    r = shipped(suite, relative)
    if r is None:
        raise InputError(missing)
    return r


def knobs_label(space, params: dict) -> str:
    """A system's tunable knobs as the suite's results label them (``k=value, ...``)."""
    return ", ".join(f"{k.name}={params[k.name]}" for k in space.knobs if not k.fixed and k.grid)


def against_current(result, dataset, current: str, metric: str = METRIC) -> dict:
    """``sweep DATASET --current``: the team's current fusion (:func:`parse_current`, over the
    sweep's own streams, in order) on the sweep's evaluation queries, against the tuned
    configuration's per-query values there (what the sweep reports, per fold under
    cross-validation), with a paired permutation test."""
    specs = list(result.specs)
    names = [retriever_name(x) for x in specs]
    own = parse_current(current, len(specs), names)
    runs = load_runs(dataset, specs, result.protocol.eval_split)
    qids = [str(q) for q in result.per_query["qids"]]
    per_q = evaluate_per_query(Config.from_json(own).fuse(runs),
                               dataset.qrels(result.protocol.eval_split), [metric])[metric]
    mine = per_q.reindex(qids).fillna(0.0).to_numpy()
    tuned = np.asarray(result.per_query["tuned"], dtype=float)
    return {"current": own["label"], "metric": metric, "current_value": float(mine.mean()),
            "tuned": result.label, "tuned_value": float(tuned.mean()),
            "delta": float(tuned.mean() - mine.mean()), "p_value": permutation_test(tuned, mine),
            "queries": len(qids), "split": result.protocol.eval_split}


def check_streams(streams: Sequence[str] | None) -> tuple[str, ...]:
    """Free fusion's streams: three retriever specs standing for the suite's bm25, fts5 and
    dense, in that order (the suite's configurations weight them by position)."""
    streams = tuple(streams or SPECS)
    if len(streams) != len(SPECS):
        raise InputError(f"-r: free fusion fuses {len(SPECS)} streams, in the suite's order "
                         f"({', '.join(SPECS)}); got {len(streams)}: {', '.join(streams)}")
    for spec in streams:
        parse_spec(spec)
    return streams


def parse_current(text: str, n_runs: int = len(SPECS), names: Sequence[str] = SPECS) -> dict:
    """A team's current fusion written as rrfbench labels it (``rrf k=60 w=0.3,0.3,0.4``,
    ``rrf k=60 w=1,1,1 depth=100,100,100 base=0``, ``convex minmax w=0.2,0.3,0.5
    missing=zero``, ``combsum zscore missing=min``): the configuration as JSON, checked for
    ``n_runs`` streams (``names``, in order); a wrong word or count is one line naming it."""
    words = text.split()
    if not words:
        raise InputError("--current: empty; e.g. 'rrf k=60 w=1,1,1'")
    method, rest = words[0].lower(), words[1:]
    d: dict = {"method": method}
    if method != "rrf" and rest and "=" not in rest[0]:
        d["norm"], rest = rest[0], rest[1:]
    for w in rest:
        key, eq, val = w.partition("=")
        if not eq or not val:
            raise InputError(f"--current: {w!r} is not key=value (in {text!r})")
        if key not in ("k", "w", "depth", "base", "missing", "limit"):
            raise InputError(f"--current: unknown key {key!r} in {text!r} (k, w, depth, base, "
                             "missing, limit)")
        try:
            nums = [float(x) for x in val.split(",")] if key in ("k", "w", "depth") else None
            if key == "k":
                d["k"] = nums * n_runs if len(nums) == 1 else nums
            elif key == "w":
                d["weights"] = nums
            elif key == "depth":
                d["depth"] = [int(x) for x in nums]
            elif key == "base":
                d["rank_base"] = int(val)
            elif key == "missing":
                d["missing"] = val
            else:
                d["limit"] = int(val)
        except ValueError:
            raise InputError(f"--current: {w!r}: not a number") from None
    d.setdefault("weights", [1.0] * n_runs)
    if method == "rrf":
        d.setdefault("k", [60.0] * n_runs)
        d.setdefault("depth", [None] * n_runs)
    for key, short in (("k", "k"), ("weights", "w"), ("depth", "depth")):
        if key in d and len(d[key]) != n_runs:
            raise InputError(f"--current: {len(d[key])} values of {short} for {n_runs} streams "
                             f"({', '.join(names)}); give one per stream, in that order")
    if method != "rrf":
        d.update(k=[60.0] * n_runs, depth=[None] * n_runs)
    try:
        cfg = Config.from_json(d)
        cfg.check(n_runs)
    except InputError as exc:
        raise InputError(f"--current: {text!r}: {exc}") from None
    return cfg.to_json() | {"label": cfg.label(list(names))}


def candidates(suite: str, collection: str, system: str | None = None,
               settings: dict | None = None, current: str | None = None) -> Candidates:
    """Free fusion's candidates (:func:`suite_candidates`) or a system's (``system``).
    ``current``: the team's own fusion (:func:`parse_current`) as free fusion's current
    constants. The suite measured its change against RRF k=60, not against that fusion, so its
    advice says nothing about the pair: the advice alone keeps the team's fusion
    (``prior_take`` False) and only judgments can move it."""
    if system is None:
        if settings:
            raise InputError("--set: knob values need -p SYSTEM (free fusion's current "
                             "constants are RRF k=60; yours: --current)")
        c = suite_candidates(suite, collection)
        if current is None:
            return c
        own = parse_current(current)
        if Config.from_json(own) == Config.from_json(c.current):
            return c
        alts = tuple(a for a in c.alternatives if Config.from_json(a[0]) != Config.from_json(own))
        return Candidates(own, c.change, False, f"{c.source}; current: your --current "
                          f"{own['label']} (the suite's advice was measured against RRF k=60, "
                          "so without judgments yours stays)", c.prior, None, alts)
    if current is not None:
        raise InputError("--current: for free fusion; a system's own values: -p SYSTEM --set "
                         "knob=value")
    return system_candidates(suite, system, collection, settings)


def fused_candidates(cands: Candidates, dataset, split: str,
                     log: Callable[[str], None] = _quiet,
                     queries: Sequence[str] | None = None,
                     streams: Sequence[str] = SPECS) -> Contest:
    """The candidates' runs on ``split`` as a :class:`~rrfbench.judging.contest.Contest`
    (current, change, alternatives; labelled), with their priors; ``queries``: those the
    decision is about (default: the split's); ``streams``: free fusion's three streams in the
    suite's order (bm25, fts5, dense), a team's own in their place (:func:`check_streams`)."""
    configs = [cands.current, cands.change, *(c for c, _, _ in cands.alternatives)]
    if cands.system is None:
        runs = load_runs(dataset, list(check_streams(streams)), split, log=log)
        fused = [Config.from_json(c).fuse(runs) for c in configs]
        labels = [c.get("label") or Config.from_json(c).label(list(SPECS)) for c in configs]
    else:
        space = get_system(cands.system)
        runs = preset_runs(space, dataset, split)
        fused = [space.run(runs, c) for c in configs]
        labels = [f"{cands.system} {knobs_label(space, c)}" for c in configs]
    if labels[0] == labels[1]:                  # --set equal to the change: tell them apart
        labels[0] += " (current)"
    priors = {labels[1]: cands.prior} | {lab: p for (_, p, _), lab in
                                         zip(cands.alternatives, labels[2:], strict=True)}
    if queries is None:
        queries = list(dataset.split_queries(split).qid)
    return Contest(dict(zip(labels, fused, strict=True)), priors, cands.prior_take, queries)


def simulate_decision(dataset, protocol, suite: str = "en", budgets: Sequence[int] = BUDGETS,
                      method: str = "sample", seed: int = 0, log_dir: str | Path | None = None,
                      log: Callable[[str], None] = _quiet, system: str | None = None,
                      settings: dict | None = None, kappa: float | None = None,
                      current: str | None = None, streams: Sequence[str] = SPECS) -> list[dict]:
    """One row per budget (see the module docstring): the decision with that many judgments;
    ``kappa``: a noisy simulated judge (:class:`~rrfbench.judging.judges.NoisyJudge`) instead
    of the qrels' own grades."""
    if method not in METHODS:
        raise InputError(f"--method: {method!r} is not one of {', '.join(METHODS)}")
    streams = check_streams(streams)
    key = (dataset.name, protocol.eval_split, suite, system, repr(settings), current, streams)
    if key not in _PREPARED:
        _PREPARED.clear()                     # one collection and fusion at a time
        cands = candidates(suite, dataset.name, system, settings, current)
        qrels = dataset.qrels(protocol.eval_split)   # read by the judge and, at the end, the grader
        contest = fused_candidates(cands, dataset, protocol.eval_split, log, sorted(qrels.qids),
                                   streams)
        truth = {lab: evaluate(run, qrels, [METRIC])[METRIC] for lab, run in contest.runs.items()}
        _PREPARED[key] = (cands, qrels, contest, truth, int(len(contest.order("mtc"))))
    cands, qrels, contest, truth, matter = _PREPARED[key]
    queries = sorted(qrels.qids)
    max_grade = int(max(qrels.df.relevance.max(), 1))
    judge = QrelsJudge(qrels) if kappa is None else NoisyJudge(
        qrels, kappa, _marginal(contest, qrels), seed)
    tag = "" if kappa is None else f".kappa{kappa:g}"
    stem = f"{dataset.name}.{system}.{method}{tag}" if system else f"{dataset.name}.{method}{tag}"
    path = Path(log_dir or results_dir() / "judging" / "logs") / f"{stem}.jsonl"
    if path.exists():
        path.unlink()                                   # a simulation starts from no judgments
    jl = JudgmentLog(path, queries, None, range(0, max_grade + 1))
    best = max(truth.values())
    cur, chg = contest.current, contest.change
    out, asked = [], {}
    fixed = None if method == "sample" else contest.order(method, seed)
    advice = None
    for budget in sorted(budgets):
        order = contest.order(method, seed, budget) if fixed is None else fixed
        for row in order.iloc[:budget].itertuples():
            key = (row.qid, row.docid)
            if key not in asked:
                asked[key] = judge.grade(row.qid, row.docid)
                jl.add(row.qid, row.docid, asked[key], judge.name, why=row.why)
        judged = {(q, d): asked[(q, d)] for q, d in
                  zip(order.qid[:budget], order.docid[:budget], strict=True)}
        v = contest.verdict(judged, max_grade, method)
        est, post, ht = v.estimate, v.posterior, v.sampled
        loss = truth[cur] - truth[v.chosen]
        right = bool(best - truth[v.chosen] <= RIGHT_TOL)
        if advice is None:                      # the smallest budget: 0, the advice alone
            advice = (loss, right) if budget == 0 else (float("nan"), False)
        out.append({
            "collection": dataset.name, "system": system or "free fusion", "method": method,
            "streams": "+".join(retriever_name(x) for x in streams) if system is None else "",
            "judge": "qrels" if kappa is None else f"kappa {kappa:g}",
            "budget": budget, "judgments": len(judged),
            "decision": v.chosen, "current": cur, "take_change": v.take_change,
            "took": "current" if v.chosen == cur else "change" if v.chosen == chg else "alternative",
            "prior_take_change": cands.prior_take, "prior": cands.source, "why": v.why,
            "estimate_dcg10": None if est is None else round(est.judged_only, 6),
            "se_dcg10": None if est is None else round(est.se, 6),
            "estimate_ndcg10": None if est is None else round(est.ndcg, 6),
            "se_ndcg10": None if est is None else round(est.ndcg_se, 6),
            "unbiased_dcg10": None if ht is None or not ht.sampled else round(ht.mean, 6),
            "unbiased_se_dcg10": None if ht is None or not ht.sampled else round(ht.se, 6),
            "posterior_gain": round(post[0], 6), "posterior_sd": round(post[1], 6),
            "stop": v.settled,
            "settled": bool(est is not None and est.settled),
            "judged_at_10": None if est is None else {k: round(x, 4) for k, x in est.judged_at_10.items()},
            "candidates": len(contest.labels), "alternatives": contest.alternatives,
            "ndcg10_current": round(truth[cur], 6), "ndcg10_change": round(truth[chg], 6),
            "ndcg10_best_alternative": round(max((truth[a] for a in contest.alternatives),
                                                 default=float("nan")), 6),
            "dcg10_true_change": round(_true_dcg_difference(contest, qrels, cur, chg), 6),
            "ndcg10_decision": round(truth[v.chosen], 6),
            "right": right,
            "right_of_two": bool(max(truth[cur], truth[chg]) - truth[v.chosen] <= RIGHT_TOL),
            "regret": round(best - truth[v.chosen], 6),
            "loss_vs_current": round(loss, 6),
            "loses": bool(loss > LOSS_TOL),
            "caused_loss": bool(loss > LOSS_TOL and loss > advice[0] + 1e-12),
            "harm": bool(advice[1] and not right),
            "pairs_that_matter": matter,
        })
    return out


# the last collection and fusion's candidates, fused runs and truth: every method and judge of
# the simulation table reuses them (fusing and evaluating is most of a simulation's time)
_PREPARED: dict = {}


def _marginal(contest: Contest, qrels) -> dict[int, float]:
    """The qrels' grades on the pairs that could be asked (what a noisy judge draws from)."""
    g = {(str(q), str(d)): int(r) for q, d, r in
         zip(qrels.df.qid, qrels.df.docid, qrels.df.relevance, strict=True)}
    u = contest.order("mtc")
    counts: dict[int, float] = {}
    for key in zip(u.qid, u.docid, strict=True):
        r = max(g.get(key, 0), 0)
        counts[r] = counts.get(r, 0.0) + 1.0
    return counts or {0: 1.0}


def _true_dcg_difference(contest: Contest, qrels, a: str, b: str) -> float:
    """The mean DCG@10 difference ``b - a`` under the full qrels (what the unbiased estimate
    estimates)."""
    g = {(str(q), str(d)): max(int(r), 0) for q, d, r in
         zip(qrels.df.qid, qrels.df.docid, qrels.df.relevance, strict=True)}
    t = contest.comparison(a, b).table
    y = [gr * dl for gr, dl in zip((g.get(k, 0) for k in zip(t.qid, t.docid, strict=True)),
                                   t.delta, strict=True)]
    return float(np.sum(y)) / max(len(contest.queries), 1)


def judge_simulated(name: str | None, suite: str = "en", budget: int = 200, method: str = "mtc",
                    log: Callable[[str], None] = _quiet, system: str | None = None,
                    settings: dict | None = None, current: str | None = None,
                    streams: Sequence[str] = SPECS) -> dict:
    """``rrfbench judge DATASET --simulate``: the decision with ``budget`` simulated judgments
    (a collection of the suite is judged against the suite's decision made without it; any
    other collection against the suite's recommendation)."""
    if name is None:
        raise InputError("judge: name a collection (or --all)")
    if budget < 0:
        raise InputError(f"--budget: {budget} is not a count of judgments (0 or more)")
    members = {d.name: (d, p) for d, p in suite_members(suite)}
    ds, pr = members.get(name) or (None, None)
    if ds is None:
        ds = load_dataset(name)
        pr = choose_protocol(ds.splits)
    return simulate_decision(ds, pr, suite, sorted({0, budget}), method, log=log, system=system,
                             settings=settings, current=current, streams=streams)[-1]


def simulation_table(suite: str = "en", budgets: Sequence[int] = BUDGETS,
                     methods: Sequence[str] = METHODS, out: str | Path | None = None,
                     log: Callable[[str], None] = _quiet, system: str | None = None,
                     kappas: Sequence[float] = KAPPAS,
                     streams: Sequence[str] = SPECS) -> pd.DataFrame:
    """Every collection x method x budget, and the default method with each noisy judge of
    ``kappas``; writes ``results/judging/<suite>/`` (with ``system``:
    ``results/judging/<suite>/systems/<system>/``; with other free-fusion ``streams``:
    ``results/judging/<suite>/streams/<their run names>/``): simulation.csv, summary.json,
    simulation.png and report.md."""
    streams = check_streams(streams)
    if system is not None and streams != SPECS:
        raise InputError("-r: free fusion's streams; a system's roles take --stream role=spec")
    members = suite_members(suite)
    rows = []
    sub = f"systems/{system}" if system else "" if streams == SPECS else \
        "streams/" + "+".join(retriever_name(x) for x in streams)
    tmp = Path(out or results_dir() / "judging" / suite / sub)
    for ds, pr in progress(members, desc=f"judging simulation ({suite}, {system or 'free fusion'})",
                           unit="collection"):
        for m in methods:
            rows += simulate_decision(ds, pr, suite, budgets, m, log_dir=tmp / "logs", log=log,
                                      system=system, streams=streams)
        for kappa in kappas:
            rows += simulate_decision(ds, pr, suite, budgets, METHODS[0], log_dir=tmp / "logs",
                                      log=log, system=system, kappa=kappa, streams=streams)
    t = pd.DataFrame(rows)
    summary = simulation_summary(t)
    out = tmp
    out.mkdir(parents=True, exist_ok=True)
    write_text(out / "simulation.csv", _csv(t))
    write_json(out / "summary.json", summary.round(4).to_dict("records"))
    _plot(summary, out / "simulation.png", suite)
    write_text(out / "report.md", _report(t, summary, suite, system))
    return t


def _csv(t: pd.DataFrame) -> str:
    keep = [c for c in t.columns if c not in ("judged_at_10", "prior", "why", "alternatives")]
    return t[keep].to_csv(index=False, float_format="%.4f")


def simulation_summary(t: pd.DataFrame) -> pd.DataFrame:
    """Per judge, method and budget: decisions right among all the candidates (of how many),
    right between the first two (the current constants and the suite's change), mean regret,
    the worst loss against the current constants, decisions that lose more than
    :data:`LOSS_TOL` against them (``loses``), those whose loss the judgments caused (the
    advice alone lost less: ``caused``), right advice-alone decisions the judgments made wrong
    (``harmed``), alternatives taken, judgments used on average."""
    t = t.assign(alternative=t.took == "alternative")
    if "judge" not in t:
        t = t.assign(judge="qrels")
    return (t.groupby(["judge", "method", "budget"], sort=True)
            .agg(right=("right", "sum"), of=("right", "size"),
                 right_of_two=("right_of_two", "sum"), mean_regret=("regret", "mean"),
                 worst_loss=("loss_vs_current", "max"), loses=("loses", "sum"),
                 caused=("caused_loss", "sum"), harmed=("harm", "sum"),
                 alternatives=("alternative", "sum"), judgments=("judgments", "mean"))
            .reset_index())


def every_system(suite: str = "en") -> list[str | None]:
    """Free fusion (``None``), the studied systems and every engine mode with a suite result."""
    names = [None, *presets.PRESETS]
    names += [n for n in engines.SPACES if (transfer_dir(suite) / "engines" / n / "best.json").exists()]
    return names


def simulation_all(suite: str = "en", budgets: Sequence[int] = BUDGETS,
                   methods: Sequence[str] = METHODS, kappas: Sequence[float] = KAPPAS,
                   systems: Sequence[str | None] | None = None,
                   log: Callable[[str], None] = _quiet) -> pd.DataFrame:
    """:func:`simulation_table` for free fusion, the studied systems and the engine modes, and
    the table over all of them: ``results/judging/<suite>/all/`` (summary.json, by_system.csv,
    report.md; the rows are each fusion's own ``simulation.csv``)."""
    systems = every_system(suite) if systems is None else systems
    jobs = [(suite, tuple(budgets), tuple(methods), None, _quiet, s, tuple(kappas))
            for s in systems]
    parts = list(progress(process_imap(simulation_table, jobs), total=len(jobs),
                          desc="judging simulation: every fusion", unit="fusion"))
    t = pd.concat(parts, ignore_index=True)
    out = results_dir() / "judging" / suite / "all"
    out.mkdir(parents=True, exist_ok=True)
    summary = simulation_summary(t)   # the rows themselves: each fusion's own simulation.csv
    write_json(out / "summary.json", summary.round(4).to_dict("records"))
    by = _by_system(t)
    write_text(out / "by_system.csv", by.to_csv(index=False, float_format="%.4f"))
    write_text(out / "report.md", _report_all(t, summary, by, suite))
    return t


def _by_system(t: pd.DataFrame, method: str = METHODS[0], budget: int = 200) -> pd.DataFrame:
    """Per fusion, for the default method and the qrels' judge: right at 0 and at ``budget``."""
    g = t[(t.method == method) & (t.judge == "qrels")]
    rows = []
    for name, h in g.groupby("system", sort=False):
        a, z = h[h.budget == budget], h[h.budget == 0]
        rows.append({"system": name, "collections": len(z), "right_advice": int(z.right.sum()),
                     f"right_{budget}": int(a.right.sum()),
                     "right_of_two_advice": int(z.right_of_two.sum()),
                     f"right_of_two_{budget}": int(a.right_of_two.sum()),
                     "loses_any_budget": int(h.loses.sum()),
                     "caused_any_budget": int(h.caused_loss.sum()),
                     "harmed_any_budget": int(h.harm.sum()),
                     f"worst_loss_{budget}": float(a.loss_vs_current.max())})
    return pd.DataFrame(rows)


def _plot(summary: pd.DataFrame, path: Path, suite: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(9, 3.4))
    for (judge, m), g in summary.groupby(["judge", "method"]):
        label = m if judge == "qrels" else f"{m}, judge {judge}"
        style = "-" if judge == "qrels" else ":"
        axes[0].plot(g.budget, g.right / g["of"], style, marker="o", label=label)
        axes[1].plot(g.budget, g.mean_regret, style, marker="o", label=label)
    axes[0].set(xlabel="judgments per collection", ylabel="share of decisions right",
                title=f"suite {suite}: decision right", ylim=(0, 1.05))
    axes[1].set(xlabel="judgments per collection", ylabel="mean regret (nDCG@10)",
                title="regret")
    axes[0].legend(fontsize=7)
    fig.tight_layout()
    write_figure(path, fig)
    plt.close(fig)


_RULES = ("The decision with judgments, for `sample` (the default): the pairs are a priority "
          "sample (probability proportional to what a grade moves the DCG@10 difference, times "
          "the square root of the best discount a candidate gives the document), half the "
          "budget on the current constants against the suite's change first; each comparison's "
          "mean DCG@10 difference is estimated by Horvitz-Thompson, unbiased whatever was judged "
          "(rrfbench/judging/sampling.py); the suite's advice stands unless the one-sided 95% "
          "bound of that estimate contradicts it, and an alternative is taken only when its "
          "bound clears 0 against the current constants and against the decision so far "
          "(Bonferroni over the alternatives; rrfbench/judging/contest.py). For `mtc`, `pool` "
          "and `random` (the baselines, as before): the judged-only estimate (unjudged documents "
          "not relevant) and the prior combined by their precisions, the change taken when the "
          "posterior gain is above 0, alternatives when the posterior puts 95% on them.")


def _summary_lines(summary: pd.DataFrame) -> list[str]:
    lines = ["| judge | method | budget | right | right of two | mean regret | worst loss vs "
             f"current | loses > {LOSS_TOL} | caused by judgments | right advice made wrong "
             "| alternatives taken |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in summary.itertuples():
        lines.append(f"| {r.judge} | {r.method} | {r.budget} | {r.right} of {r.of} | "
                     f"{r.right_of_two} of {r.of} | {r.mean_regret:.4f} | {r.worst_loss:+.4f} | "
                     f"{r.loses} | {r.caused} | {r.harmed} | {r.alternatives} |")
    return lines


def _report(t: pd.DataFrame, summary: pd.DataFrame, suite: str, system: str | None = None) -> str:
    current = f"{system}'s shipped knobs" if system else "RRF k=60, equal weights"
    lines = [f"# Deciding with a few judgments: suite {suite}" + (f", {system}" if system else ""),
             "", f"Per collection: the current constants ({current}) against the change "
             "the suite selected on the other collections, then up to "
             f"{ALTERNATIVES} strong alternatives (the other collections' own selections with the "
             "largest mean gain on the rest, the transfer matrix); the prior is the suite's "
             "decision made without the collection; a simulated judge answers from the real "
             "qrels (or, in the `kappa` rows, disagrees with them at that Cohen's kappa), which "
             "nothing else reads until the decision is graded (right: the best of all the "
             f"candidates under nDCG@10, or within {RIGHT_TOL}; right of two: the better of the "
             "current constants and the change; loses: more than "
             f"{LOSS_TOL} nDCG@10 below the current constants; caused: it loses and the advice "
             "alone lost less; right advice made wrong: the advice alone was right and the "
             "decision is not). These figures are in-sample for the rules' design: the rules "
             "were written knowing these collections (docs/judging.md).", "",
             *_summary_lines(summary), "", _RULES, "",
             "How often the estimate's sign agrees with the truth where the two differ by more "
             f"than {RIGHT_TOL} nDCG@10 (judged-only estimate for the baselines, the unbiased "
             "DCG@10 estimate for `sample`):", "",
             "| judge | method | " + " | ".join(str(b) for b in sorted(t.budget.unique()) if b) + " |",
             "|---|---|" + "---|" * int((t.budget.unique() > 0).sum())]
    judge_col = t["judge"] if "judge" in t else pd.Series("qrels", index=t.index)
    for (j, m), g in t[t.budget > 0].groupby([judge_col[t.budget > 0], "method"]):
        true = g.ndcg10_change - g.ndcg10_current
        est = g.unbiased_dcg10.fillna(0.0) if m == "sample" else g.estimate_ndcg10
        ok = (true.abs() <= RIGHT_TOL) | ((est > 0) == (true > 0))
        per = ok.groupby(g.budget).agg(["sum", "size"])
        lines.append(f"| {j} | {m} | " + " | ".join(f"{int(a)} of {int(b)}" for a, b in
                                                    zip(per["sum"], per["size"], strict=True)) + " |")
    lines += ["", "![decision right and regret against budget](simulation.png)", ""]
    return "\n".join(lines) + "\n"


def _report_all(t: pd.DataFrame, summary: pd.DataFrame, by: pd.DataFrame, suite: str) -> str:
    n_sys = t.system.nunique()
    lines = [f"# Deciding with a few judgments: every fusion of suite {suite}", "",
             f"Free fusion, the studied systems and the engine modes ({n_sys} fusions) on each "
             "collection of the suite, every selection method and budget, and the default method "
             "with a noisy judge; per fusion: `results/judging/" + suite + "/systems/<name>/`. "
             "In-sample: the rules were designed knowing these collections.", "",
             f"**{headline(summary)}**", "", *_summary_lines(summary), "", _RULES, "",
             f"Per fusion ({METHODS[0]}, the qrels' judge, 200 judgments against the advice "
             "alone; loses, caused and harmed counted over every budget):", "",
             "| fusion | collections | right (advice) | right (200) | right of two (advice) | "
             "right of two (200) | loses | caused | harmed | worst loss (200) |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for r in by.itertuples():
        lines.append(f"| {r.system} | {r.collections} | {r.right_advice} | {r.right_200} | "
                     f"{r.right_of_two_advice} | {r.right_of_two_200} | {r.loses_any_budget} | "
                     f"{r.caused_any_budget} | {r.harmed_any_budget} | {r.worst_loss_200:+.4f} |")
    return "\n".join(lines) + "\n"


def headline(summary: pd.DataFrame, method: str = METHODS[0], budget: int = 200,
             judge: str = "qrels") -> str:
    s = summary.set_index(["judge", "method", "budget"])
    a, z = s.loc[(judge, method, budget)], s.loc[(judge, method, 0)]
    return (f"with {budget} judgments ({method}), the decision was right on {int(a.right)} of "
            f"{int(a['of'])} cases and lost more than {LOSS_TOL} nDCG@10 against the current "
            f"constants on {int(a.loses)} ({int(a.caused)} caused by the judgments); the suite's "
            f"advice alone: right on {int(z.right)} of {int(z['of'])}, losing on {int(z.loses)}")
