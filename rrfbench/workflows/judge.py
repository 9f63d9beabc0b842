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
from ..core.evaluation import evaluate
from ..core.progress import progress
from ..core.store import results_dir, write_figure, write_json, write_text
from ..data.datasets import load_dataset
from ..fusion.config import Config
from ..judging.contest import Contest
from ..judging.decide import METHODS, Prior
from ..judging.judges import QrelsJudge
from ..judging.log import JudgmentLog
from ..results.dataset import load_result
from ..systems.registry import get_system
from ..tuning.holdout import choose_protocol
from .cache import _quiet
from .dataset import kind_dir, load_runs, preset_runs, sweep_grid
from .suite import suite_members, transfer_dir

SPECS = ("bm25", "fts5", "dense")   # free fusion's streams: the suite's
BUDGETS = (0, 25, 50, 100, 200, 400)
ALTERNATIVES = 2      # strong alternatives beside the suite's change (see alternatives())
RIGHT_TOL = 0.005     # a decision within this much nDCG@10 of the better candidate is right
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
    if not path.exists():
        raise InputError(f"{path}: no suite result; run rrfbench sweep --suite {suite} first")
    r = load_result(path)
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
    if not path.exists():
        how = "engines" if kind_dir(name) == "engines" else "tune"
        raise InputError(f"{path}: no suite result for {name}; run rrfbench {how} --suite "
                         f"{suite} {'--engine ' + space.engine if how == 'engines' else '-p ' + name} first")
    r = load_result(path)
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


def knobs_label(space, params: dict) -> str:
    """A system's tunable knobs as the suite's results label them (``k=value, ...``)."""
    return ", ".join(f"{k.name}={params[k.name]}" for k in space.knobs if not k.fixed and k.grid)


def candidates(suite: str, collection: str, system: str | None = None,
               settings: dict | None = None) -> Candidates:
    """Free fusion's candidates (:func:`suite_candidates`) or a system's (``system``)."""
    if system is None:
        if settings:
            raise InputError("--set: knob values need -p SYSTEM (free fusion's current "
                             "constants are RRF k=60)")
        return suite_candidates(suite, collection)
    return system_candidates(suite, system, collection, settings)


def fused_candidates(cands: Candidates, dataset, split: str,
                     log: Callable[[str], None] = _quiet,
                     queries: Sequence[str] | None = None) -> Contest:
    """The candidates' runs on ``split`` as a :class:`~rrfbench.judging.contest.Contest`
    (current, change, alternatives; labelled), with their priors; ``queries``: those the
    decision is about (default: the split's)."""
    configs = [cands.current, cands.change, *(c for c, _, _ in cands.alternatives)]
    if cands.system is None:
        runs = load_runs(dataset, list(SPECS), split, log=log)
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
                      method: str = "mtc", seed: int = 0, log_dir: str | Path | None = None,
                      log: Callable[[str], None] = _quiet, system: str | None = None,
                      settings: dict | None = None) -> list[dict]:
    """One row per budget (see the module docstring): the decision with that many judgments."""
    if method not in METHODS:
        raise InputError(f"--method: {method!r} is not one of {', '.join(METHODS)}")
    cands = candidates(suite, dataset.name, system, settings)
    qrels = dataset.qrels(protocol.eval_split)       # read by the judge and, at the end, the grader
    queries = sorted(qrels.qids)
    contest = fused_candidates(cands, dataset, protocol.eval_split, log, queries)
    order = contest.order(method, seed)
    max_grade = int(max(qrels.df.relevance.max(), 1))
    judge = QrelsJudge(qrels)
    stem = f"{dataset.name}.{system}.{method}" if system else f"{dataset.name}.{method}"
    path = Path(log_dir or results_dir() / "judging" / "logs") / f"{stem}.jsonl"
    if path.exists():
        path.unlink()                                   # a simulation starts from no judgments
    jl = JudgmentLog(path, queries, None, range(0, max_grade + 1))
    truth = {lab: evaluate(run, qrels, [METRIC])[METRIC] for lab, run in contest.runs.items()}
    best = max(truth.values())
    cur, chg = contest.current, contest.change
    out, done = [], 0
    for budget in sorted(budgets):
        for row in order.iloc[done:budget].itertuples():
            jl.add(row.qid, row.docid, judge.grade(row.qid, row.docid), judge.name, why=row.why)
        done = max(done, min(budget, len(order)))
        v = contest.verdict(jl.grades() if done else {}, max_grade)
        est, post = v.estimate, v.posterior
        out.append({
            "collection": dataset.name, "method": method, "budget": budget, "judgments": done,
            "decision": v.chosen, "current": cur, "take_change": v.take_change,
            "took": "current" if v.chosen == cur else "change" if v.chosen == chg else "alternative",
            "prior_take_change": cands.prior_take, "prior": cands.source, "why": v.why,
            "estimate_dcg10": None if est is None else round(est.judged_only, 6),
            "se_dcg10": None if est is None else round(est.se, 6),
            "estimate_ndcg10": None if est is None else round(est.ndcg, 6),
            "se_ndcg10": None if est is None else round(est.ndcg_se, 6),
            "posterior_gain": round(post[0], 6), "posterior_sd": round(post[1], 6),
            "stop": v.settled,
            "settled": bool(est is not None and est.settled),
            "judged_at_10": None if est is None else {k: round(x, 4) for k, x in est.judged_at_10.items()},
            "candidates": len(contest.labels), "alternatives": contest.alternatives,
            "ndcg10_current": round(truth[cur], 6), "ndcg10_change": round(truth[chg], 6),
            "ndcg10_best_alternative": round(max((truth[a] for a in contest.alternatives),
                                                 default=float("nan")), 6),
            "ndcg10_decision": round(truth[v.chosen], 6),
            "right": bool(best - truth[v.chosen] <= RIGHT_TOL),
            "right_of_two": bool(max(truth[cur], truth[chg]) - truth[v.chosen] <= RIGHT_TOL),
            "regret": round(best - truth[v.chosen], 6),
            "loss_vs_current": round(truth[cur] - truth[v.chosen], 6),
            "pairs_that_matter": int(len(contest.order("mtc"))),
        })
    return out


def judge_simulated(name: str | None, suite: str = "en", budget: int = 200, method: str = "mtc",
                    log: Callable[[str], None] = _quiet, system: str | None = None,
                    settings: dict | None = None) -> dict:
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
    return simulate_decision(ds, pr, suite, [budget], method, log=log, system=system,
                             settings=settings)[0]


def simulation_table(suite: str = "en", budgets: Sequence[int] = BUDGETS,
                     methods: Sequence[str] = METHODS, out: str | Path | None = None,
                     log: Callable[[str], None] = _quiet, system: str | None = None) -> pd.DataFrame:
    """Every collection x method x budget; writes ``results/judging/<suite>/`` (with
    ``system``: ``results/judging/<suite>/systems/<system>/``): simulation.csv, summary.json,
    simulation.png and report.md."""
    members = suite_members(suite)
    rows = []
    tmp = Path(out or results_dir() / "judging" / suite / (f"systems/{system}" if system else ""))
    for ds, pr in progress(members, desc=f"judging simulation ({suite})", unit="collection"):
        for m in methods:
            rows += simulate_decision(ds, pr, suite, budgets, m, log_dir=tmp / "logs", log=log,
                                      system=system)
    t = pd.DataFrame(rows)
    summary = simulation_summary(t)
    out = tmp
    out.mkdir(parents=True, exist_ok=True)
    keep = [c for c in t.columns if c not in ("judged_at_10", "prior", "why", "alternatives")]
    write_text(out / "simulation.csv", t[keep].to_csv(index=False, float_format="%.4f"))
    write_json(out / "summary.json", summary.round(4).to_dict("records"))
    _plot(summary, out / "simulation.png", suite)
    write_text(out / "report.md", _report(t, summary, suite, system))
    return t


def simulation_summary(t: pd.DataFrame) -> pd.DataFrame:
    """Per method and budget: decisions right among all the candidates (of how many), right
    between the first two (the current constants and the suite's change), mean regret, the
    worst loss against the current constants, alternatives taken, judgments used on average."""
    t = t.assign(alternative=t.took == "alternative")
    return (t.groupby(["method", "budget"])
            .agg(right=("right", "sum"), of=("right", "size"),
                 right_of_two=("right_of_two", "sum"), mean_regret=("regret", "mean"),
                 worst_loss=("loss_vs_current", "max"), alternatives=("alternative", "sum"),
                 judgments=("judgments", "mean"))
            .reset_index())


def _plot(summary: pd.DataFrame, path: Path, suite: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt


    fig, axes = plt.subplots(1, 2, figsize=(9, 3.4))
    for m, g in summary.groupby("method"):
        axes[0].plot(g.budget, g.right / g["of"], marker="o", label=m)
        axes[1].plot(g.budget, g.mean_regret, marker="o", label=m)
    axes[0].set(xlabel="judgments per collection", ylabel="share of decisions right",
                title=f"suite {suite}: decision right", ylim=(0, 1.05))
    axes[1].set(xlabel="judgments per collection", ylabel="mean regret (nDCG@10)",
                title="regret")
    axes[0].legend()
    fig.tight_layout()
    write_figure(path, fig)
    plt.close(fig)


def _report(t: pd.DataFrame, summary: pd.DataFrame, suite: str, system: str | None = None) -> str:
    current = f"{system}'s shipped knobs" if system else "RRF k=60, equal weights"
    lines = [f"# Deciding with a few judgments: suite {suite}" + (f", {system}" if system else ""),
             "", f"Per collection: the current constants ({current}) against the change "
             "the suite selected on the other collections, then up to "
             f"{ALTERNATIVES} strong alternatives (the other collections' own selections with the "
             "largest mean gain on the rest, the transfer matrix; none is taken without a "
             "judgment that favours it); the prior is the suite's decision "
             "made without the collection; a simulated judge answers from the real qrels, which "
             "nothing else reads until the decision is graded (right: the best of all the "
             f"candidates under nDCG@10, or within {RIGHT_TOL}; right of two: the better of the "
             "current constants and the change).", "",
             "| method | budget | right | right of two | mean regret | worst loss vs current "
             "| alternatives taken |",
             "|---|---|---|---|---|---|---|"]
    for r in summary.itertuples():
        lines.append(f"| {r.method} | {r.budget} | {r.right} of {r.of} | {r.right_of_two} of "
                     f"{r.of} | {r.mean_regret:.4f} | {r.worst_loss:+.4f} | {r.alternatives} |")
    lines += ["", "The decision with judgments: the prior (the mean and spread of the suite's LOCO "
              "gains on the other collections) and the judged nDCG@10 difference (the judged "
              "DCG@10 differences over the mean ideal DCG@10 built from the judged grades; "
              "unjudged documents not relevant; standard error floored at 0.005) combined by "
              "their precisions; the change is taken when the posterior gain is above 0; with "
              "no relevant judgment where the rankings differ, the suite's rule stands "
              "(rrfbench/judging/decide.py); each alternative then challenges the winner by the "
              "same update on the documents the two rank differently, and wins only when the "
              "posterior puts 95% on it being better (rrfbench/judging/contest.py).", "",
              "How often the judged estimate's sign agrees with the nDCG@10 difference under the "
              "full qrels (differences within 0.005 count as agreeing):", "",
              "| method | " + " | ".join(str(b) for b in sorted(t.budget.unique()) if b) + " |",
              "|---|" + "---|" * int((t.budget.unique() > 0).sum())]
    for m, g in t[t.budget > 0].groupby("method"):
        true = g.ndcg10_change - g.ndcg10_current
        ok = (true.abs() <= RIGHT_TOL) | ((g.estimate_ndcg10 > 0) == (true > 0))
        per = ok.groupby(g.budget).agg(["sum", "size"])
        lines.append(f"| {m} | " + " | ".join(f"{int(a)} of {int(b)}" for a, b in
                                              zip(per["sum"], per["size"], strict=True)) + " |")
    lines += ["", "![decision right and regret against budget](simulation.png)", ""]
    return "\n".join(lines) + "\n"


def headline(summary: pd.DataFrame, method: str = "mtc", budget: int = 200) -> str:
    s = summary.set_index(["method", "budget"])
    a, z = s.loc[(method, budget)], s.loc[(method, 0)]
    return (f"with {budget} judgments ({method}), the decision was right on {int(a.right)} of "
            f"{int(a['of'])} collections (the suite's advice alone: {int(z.right)} of {int(z['of'])})")

