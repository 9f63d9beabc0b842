"""The simulation table: every collection of a suite x selection method x budget (and noisy
judges), for free fusion, a studied system or an engine mode, or all of them; its summary,
plot, report and the README's headline.

Each row is one :func:`rrfbench.workflows.judge.simulate_decision` (the decision with that many
judgments, graded with the full qrels). :func:`simulation_table` writes
``results/judging/<suite>/`` (a system's: ``systems/<name>/``; other free-fusion streams:
``streams/<names>/``); :func:`simulation_all` runs it for every fusion and writes the table over
all of them (``all/``).

Called from: the CLI's ``judge --simulate --all`` and tests.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

import pandas as pd

from ..core.errors import InputError
from ..core.parallel import process_imap
from ..core.progress import progress
from ..core.store import results_dir, write_figure, write_json, write_text
from ..judging.decide import METHODS
from ..retrievers import retriever_name
from ..systems import engines, presets
from .cache import _quiet
from .judge import (
    ALTERNATIVES,
    BUDGETS,
    KAPPAS,
    LOSS_TOL,
    RIGHT_TOL,
    SPECS,
    check_streams,
    simulate_decision,
)
from .suite import suite_members, transfer_dir


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
