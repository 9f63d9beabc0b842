"""Judging a collection to decide its fusion constants, and grading that decision by simulation.

:func:`simulate_decision` hides a collection's qrels from everything but a simulated judge
(:class:`rrfbench.judging.judges.QrelsJudge`): the candidates are the current constants (the
suite's default, RRF k=60 with equal weights), the change the suite selected on the *other*
collections (its leave-one-collection-out selection) and a few strong alternatives from the
same evidence (:func:`alternatives`); the prior is the suite's decision for that collection made
without it (the nested grading of the decision rule), and up to ``budget`` pairs are judged in
the order of a selection method (:mod:`rrfbench.judging.contest`). Only then are the full qrels
read, to say whether the decision was right (the best candidate under nDCG@10, or within 0.005
of it) and its regret. :func:`rrfbench.workflows.judging_table.simulation_table` does
it for every collection of a suite, budget and method, and writes the table, a plot and a
report.

Called from: the CLI's ``judge`` command and tests.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..core.errors import InputError
from ..core.evaluation import evaluate, evaluate_per_query
from ..core.stats import permutation_test
from ..core.store import results_dir
from ..data.datasets import load_dataset
from ..fusion.config import Config
from ..judging.contest import Contest
from ..judging.decide import METHODS, Prior
from ..judging.judges import NoisyJudge, QrelsJudge
from ..judging.log import JudgmentLog
from ..results.dataset import load_result
from ..results.shipped import shipped
from ..retrievers import parse_spec, retriever_name
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
        true_dcg = _true_dcg_difference(contest, qrels, contest.current, contest.change)
        _PREPARED[key] = (cands, qrels, contest, truth, int(len(contest.order("mtc"))), true_dcg)
    cands, qrels, contest, truth, matter, true_dcg = _PREPARED[key]
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
            "dcg10_true_change": round(true_dcg, 6),
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
