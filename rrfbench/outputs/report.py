"""``report.md`` and the files beside it: what a person reads after a sweep or preset tuning.

Everything here reads result objects (:mod:`rrfbench.results.dataset`); nothing builds or changes one.
A report is assembled from named sections (``report.<name>.md``), so the sweep and the preset
table can be regenerated independently.

Called from: ``cli``, ``workflows.dataset``, ``workflows.demo``, ``workflows.engine_table``,
``workflows.suite``.
"""

from __future__ import annotations

import hashlib
import json
import math
import numbers
from pathlib import Path

import pandas as pd

from ..core.stats import spearman
from ..core.store import write_json, write_text
from ..results.dataset import PresetResult, SweepResult, save_result
from ..tuning.decisions import RULE_TEXT
from . import plots


def ci(c) -> str:
    return f"[{c[0]:.4f}, {c[1]:.4f}]"


def pval(p) -> str:
    return "<0.0001" if p < 1e-4 else f"{p:.4f}"


def cell(column: str, v, signed: bool = False) -> str:
    """One table cell as text, the same in the terminal and in report.md: numbers to 4
    decimals, p-values as :func:`pval`, deltas and gains signed, missing values empty."""
    if v is None or type(v).__name__ == "NAType":
        return ""
    if isinstance(v, (bool, str)) or isinstance(v, numbers.Integral):
        return str(v)
    if not isinstance(v, numbers.Real):
        return str(v)
    v = float(v)
    if math.isnan(v):
        return ""
    c = str(column)
    if c == "p" or c.startswith(("p ", "p(")):
        return pval(v)
    if signed or c.startswith(("delta", "gain", "expected gain", "gap")) or c.endswith("vs default"):
        return f"{v:+.4f}"
    return f"{v:.4f}"


def cells(df, signed: bool = False) -> tuple[list[str], list[list[str]]]:
    """A DataFrame's column names and its rows as text (:func:`cell`): what the CLI's rich
    tables and report.md's markdown tables both show."""
    cols = [str(c) for c in df.columns]
    return cols, [[cell(c, _py(v), signed) for c, v in zip(cols, row, strict=True)]
                  for row in df.itertuples(index=False)]


def md_table(df, bold_first: bool = False, code=(), index: bool = False,
             signed: bool = False) -> str:
    """A DataFrame as a markdown table (cells as :func:`cell`); ``code`` columns in backticks,
    ``bold_first`` sets the first row in bold, ``signed`` signs every number."""
    cols, rows = cells(df.reset_index() if index else df, signed)
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for i, row in enumerate(rows):
        row = [f"`{t}`" if t and c in code else t for c, t in zip(cols, row, strict=True)]
        lines.append("| " + " | ".join(f"**{t}**" if t and bold_first and i == 0 else t
                                       for t in row) + " |")
    return "\n".join(lines)


def _py(v):
    """numpy scalars as Python numbers (ints stay ints)."""
    return v.item() if hasattr(v, "item") and not isinstance(v, (str, bytes)) else v


def sweep_section(r: SweepResult, plots: dict[str, str]) -> str:
    m = r.metric
    ev = r.tuned
    bs, r60 = r.baselines["best_single"], r.baselines["rrf60_equal"]
    won = ev.value > max(bs.value, r60.value)
    verdict = ("The tuned configuration beats both baselines on the evaluation queries"
               if won else "The tuned configuration does **not** beat both baselines on the "
               "evaluation queries")
    sig = [n for n, b in (("best single run", bs), ("RRF k=60 equal weights", r60))
           if b.p_value < 0.05 and b.delta > 0]
    lines = [
        f"## Fusion sweep: {r.dataset} ({' + '.join(r.runs)})",
        "",
        f"Metric **{m}**; {r.protocol.describe()} ({r.protocol.reason}); {r.grid_size} "
        "configurations.",
        "",
        f"Chosen configuration: `{r.label}`",
        "",
        md_table(r.summary(), bold_first=True),
        "",
        f"{verdict} ({'significant at 0.05 against: ' + ', '.join(sig) if sig else 'no difference significant at 0.05'}).",
        "",
        "Single runs on the evaluation queries: " + ", ".join(
            f"{n} {v:.4f}" for n, v in r.singles.items()) + ".",
        "",
        "**Optimism gap.** Had the grid been tuned on the evaluation queries themselves, the "
        f"best value would have been {r.optimism['best_on_eval']:.4f} "
        f"(`{r.optimism['best_on_eval_label']}`); the honestly tuned configuration ranks "
        f"{r.optimism['rank_on_eval_grid']} of {r.optimism['grid_size']} there "
        f"(gap {r.optimism['gap']:.4f}).",
        "",
    ]
    if r.assumptions:
        lines += ["**Assumptions.** " + " ".join(f"{a.rstrip('.')}." for a in r.assumptions), ""]
    if r.family_best:
        lines += ["Best configuration of each fusion family (on the tuning queries; "
                  "evaluation value of that configuration):", "",
                  md_table(r.families(), code=("configuration",)), ""]
    for title, path in plots.items():
        lines += [f"![{title}]({path})", ""]
    return "\n".join(lines)


def knob_str(r: PresetResult) -> str:
    return r.knobs_label()


def presets_section(systems) -> str:
    """The studied systems on a dataset (:class:`rrfbench.results.dataset.StudiedSystems`): the table
    and each system's fidelity list."""
    lines = [f"## Studied systems: as shipped vs tuned within their own knobs ({systems.dataset})",
             "", "Each system's fusion arithmetic (formula, rank base, weights, candidate depths, "
             "tie order, trimming, fallback) is reproduced on rrfbench runs and was checked "
             "against independent implementations; what around it is assumed or not modelled is "
             "listed below per system. Tuned only over the knobs the system exposes, within their "
             "ranges. R@100 is bounded by the system's own result limit.", ""]
    if systems.results:
        lines.append(md_table(systems.table()))
    lines += ["", "Fidelity (what each preset reproduces, and how):", ""]
    for r in systems.results:
        items = "; ".join(f"*{f['status']}*: {f['item']}" + (f" ({f['note']})" if f["note"] else "")
                          for f in r.fidelity)
        lines.append(f"- **{r.preset}**: {items}")
    lines.append("")
    return "\n".join(lines)


def write_report(out_dir: Path, sections: dict[str, str]) -> Path:
    """Write ``out_dir/report.md`` from named sections (kept as ``report.<name>.md``)."""
    out_dir = Path(out_dir)
    for name, text in sections.items():
        write_text(out_dir / f"report.{name}.md", text)
    parts = sorted(out_dir.glob("report.*.md"))
    # the answer first (a suite's recommendation), then free fusion, then the studied systems
    order = {"advice": -1, "retrievers": 0, "sweep": 1, "presets": 2, "transfer": 3,
             "adaptive": 3, "engines": 10}
    parts.sort(key=lambda p: order.get(p.name.split(".")[1], 9))
    body = "\n".join(p.read_text() for p in parts)
    return write_text(out_dir / "report.md", f"# rrfbench report: {out_dir.name}\n\n{body}")


def retrievers_section(dataset: str, scores) -> str:
    """The single retrievers (:class:`rrfbench.results.dataset.RetrieverScores`) as a report section."""
    if not scores.rows:
        return ""
    return (f"## Single retrievers ({dataset})\n\n"
            + md_table(scores.table(cached=False, timing=False)) + "\n")


def write_sweep_outputs(result: SweepResult, table, eval_table, out: Path) -> dict[str, str]:
    """best.json, per_query.csv, PNG plots and report.md under ``out``; returns the plots."""
    out = Path(out)
    names, metric = list(result.runs), result.metric
    split = result.protocol.eval_split
    tune_split = result.protocol.tune_split
    save_result(result, out / "best.json")
    write_text(out / "per_query.csv", pd.DataFrame(result.per_query).to_csv(index=False))
    # plots are drawn from the tables and the result: when neither changed, keep the PNGs
    d = result.to_json()
    d.pop("provenance", None)
    digest = hashlib.sha256(json.dumps([d, len(table), float(table[metric].sum())],
                                       sort_keys=True, default=str).encode()).hexdigest()[:16]
    stamp = out / "plots.json"
    if stamp.exists():
        old = json.loads(stamp.read_text())
        if old.get("digest") == digest and all((out / f).exists() for f in old["plots"].values()):
            write_report(out, {"sweep": sweep_section(result, old["plots"])})
            return old["plots"]
    made = {}
    pairs = [(a, b) for i, a in enumerate(names) for b in names[i + 1:]]
    for a, b in pairs[:3]:
        p = out / f"heatmap_{a}_{b}.png"
        plots.heatmap_k_weight(table, names, metric, pair=(a, b), path=p, split=tune_split)
        made[f"{metric} over k x weight: {a} + {b} (split {tune_split})"] = p.name
    plots.k_curves(table, names, metric, path=out / "k_curves.png", split=tune_split)
    made[f"{metric} vs k (split {tune_split})"] = "k_curves.png"
    if len(names) == 3:
        plots.ternary(table, names, metric, path=out / "ternary.png", split=tune_split)
        made[f"weights simplex (split {tune_split})"] = "ternary.png"
    bs = result.baselines["best_single"]
    plots.win_loss(result.per_query["tuned"], result.per_query["best_single"], metric, bs.name,
                   path=out / "win_loss.png", split=split)
    made[f"per-query wins/losses vs best single run (split {split})"] = "win_loss.png"
    plots.method_comparison(table, metric, path=out / "methods.png", split=tune_split)
    made[f"fusion families (split {tune_split})"] = "methods.png"
    plots.close_all()
    write_json(stamp, {"digest": digest, "plots": made})
    write_report(out, {"sweep": sweep_section(result, made)})
    return made


# --------------------------------------------------------------------------- suites
def transfer_section(r, plots: dict[str, str]) -> str:
    """The LOCO table, verdict, transfer matrix and collection characteristics of a suite."""
    what = r.what() + (" within its own knobs" if r.family != "fusion" else "")
    m = r.metric
    s = r.summary
    lines = [f"## Transfer across collections: suite `{r.suite}`, {what}", "",
             f"Collections: {', '.join(r.collections)}. Metric **{m}**. Selection: objective "
             f"`{r.objective}`, rule `{r.rule}`; {r.grid_size} grid points. Default: "
             f"{r.default['label']}.", "",
             f"**Verdict: {r.verdict}.** {r.verdict_reason}.", "",
             *_rules(r),
             f"- Selected on all collections: `{r.label}`",
             f"- Recommended default: `{r.recommended['label']}` ({r.recommended['reason']})", "",
             "### Leave-one-collection-out", "",
             "Each row: selected on the *other* collections, evaluated on this collection's "
             "evaluation split; p-values are paired randomisation tests on its queries; "
             "in-domain: tuned on the collection itself (optimistic).", "",
             md_table(r.loco_table(), code=("selected on the others",))]
    mac = s["macro"]
    lines += ["",
              "Macro means (each collection weighs the same): LOCO "
              f"{mac['loco']:.4f}, default {mac['default']:.4f}"
              + (f", best single {mac['best_single']:.4f}" if "best_single" in mac else "")
              + f", in-domain {mac['in_domain']:.4f}. Significant wins / ties / losses vs the "
              f"default: {s['wins']} / {s['ties']} / {s['losses']}.", "",
              md_table(r.macro(), code=("default", "recommended")), ""]
    if r.families:
        lines += ["### Each fusion family on its own", "",
                  "The same LOCO protocol with the grid restricted to one family (the default "
                  "stays RRF k=60 with equal weights).", "",
                  md_table(r.families_table(), code=("selected on all",)), ""]
    lines += ["### Transfer matrix", "",
              f"Tuned on the row's collection (its tuning split), evaluated on the column's "
              f"evaluation split: {m} delta vs the default there (diagonal: in-domain).", "",
              md_table(r.matrix(), index=True, signed=True), ""]
    chars = list(r.characteristics)
    if chars:
        cols = ["collection"] + [c for c in ("docs", "eval_queries", "relevant_per_query",
                                             "query_words", "doc_words", "best_rrf_k",
                                             "in_domain_label") if c in chars[0]]
        lines += ["### What the collections have in common", "",
                  md_table(r.characteristics_table()[cols], code=("in_domain_label",))]
        if "best_rrf_k" in chars[0] and len(chars) > 2:
            for k in ("relevant_per_query", "query_words", "doc_words", "docs"):
                rho = spearman([c[k] for c in chars], [c["best_rrf_k"] for c in chars])
                lines.append(f"\nSpearman correlation of the preferred RRF k (equal weights, "
                             f"tuning queries) with {k}: {rho:+.2f} ({len(chars)} collections; "
                             "descriptive, not a test).")
        lines.append("")
    if r.assumptions:
        lines += ["Protocols and assumptions: " + "; ".join(r.assumptions) + ".", ""]
    for title, path in plots.items():
        lines += [f"![{title}]({path})", ""]
    return "\n".join(lines)


def _rules(r) -> list[str]:
    """How the verdict was reached: the multiplicity rule, the selection rule, the stability
    check (recorded in the result's ``tests``), each on its own line."""
    out = []
    for key, title in (("multiplicity", "Multiplicity"), ("selection_rule", "Selection rule"),
                       ("stability", "Stability")):
        if r.tests.get(key):
            out.append(f"- {title}: {r.tests[key]}")
    st = r.stability
    if st:
        out.append(f"- Stability of this verdict: {st['stability']:.0%} of {st['B']} resamples "
                   f"support it (same verdict {st['share_same_verdict']:.0%}, same selected "
                   f"configuration {st['share_same_config']:.0%}; seed {st['seed']})")
    return out + ([""] if out else [])


def write_transfer_outputs(result, out: Path) -> dict[str, str]:
    """best.json, report.md and the plots of a suite result under ``out``."""
    out = Path(out)
    save_result(result, out / "best.json")
    made = {}
    plots.forest(result, path=out / "forest.png")
    made["delta vs the default per collection (95% CI): LOCO and in-domain"] = "forest.png"
    plots.transfer_heatmap(result, path=out / "transfer_matrix.png")
    made["transfer matrix: tuned on row, evaluated on column"] = "transfer_matrix.png"
    if result.k_curves:
        plots.k_curves_collections(result, path=out / "k_curves.png")
        made["RRF (equal weights) vs k, per collection"] = "k_curves.png"
    plots.close_all()
    write_report(out, {"transfer": transfer_section(result, made)})
    return made


def _sentence(text: str) -> str:
    """``text`` with its first letter upper-cased (the rest as written)."""
    return text[:1].upper() + text[1:]


def adaptive_section(r, plots_made: dict[str, str]) -> str:
    """The LOCO table of a query-adaptive policy, its verdict, headroom and share captured."""
    s = r.summary
    pol = r.policy_obj()
    lines = [f"## Query-adaptive fusion: suite `{r.suite}`, {' + '.join(r.runs)}", "",
             f"Collections: {', '.join(r.collections)}. Metric **{r.metric}**. Per held-out "
             f"collection, on the other collections' tuning splits only: the static default "
             f"(rule `{r.rule}`), {r.n_candidates} candidate configurations (the static default "
             "and the grid points that most raise the per-query oracle on the training "
             f"queries; the weight kinds use the static default's weight family instead), and a "
             f"policy (kinds tried: {', '.join(r.kinds)}; kind and hedge "
             "threshold chosen by leave-one-collection-out inside the training collections; "
             f"`constant` = no kind gained there, so the static default) reading "
             f"{len(pol.features)} {r.feature_set} query features (no qrels). Then the held-out "
             "collection's evaluation queries are each fused with their chosen candidate.", "",
             f"**Verdict: {r.verdict}.** {r.verdict_reason}.", "",
             *([f"- Multiplicity: {r.tests.get('multiplicity', 'none')}.",
                f"- {_sentence(r.stability_line())}. {_sentence(r.stability['held_fixed'])}."]
               if r.stability else []),
             f"- Target: {s['target']}: {'met' if s['target_met'] else 'not met'} "
             f"(gain {s['gain']:+.4f}).",
             f"- Headroom over the static default (macro): oracle over the candidates "
             f"{s['headroom_candidates']:+.4f}, oracle over the whole grid "
             f"{s['headroom_grid']:+.4f}; the policy captures {s['captured']:.1%} of the "
             "candidates' oracle gain.",
             f"- Versus {r.default['label']}: {s['gain_vs_default']:+.4f} (p "
             f"{pval(s['p_value_queries_vs_default'])}"
             " over queries).",
             f"- Policy trained on all collections: {pol.describe()}.",
             f"- Recommended: {r.recommended['label']} ({r.recommended['reason']}).", "",
             "### Leave-one-collection-out", "",
             "`switched`: share of queries fused with a candidate other than the static default; "
             "`W/T/L queries`: queries better / equal / worse than the static default; "
             "`captured`: delta over the candidates' oracle gain.", "",
             md_table(r.loco_table(), code=("static (others)", "policy")), "",
             md_table(r.macro(), code=("recommended",)), "",
             "### Each policy kind on its own", "",
             "LOCO gain over the static default when that kind is forced (its threshold still "
             "chosen on the training collections):", "",
             md_table(r.kinds_frame(), signed=True), "",
             "### Features that matter", "",
             f"{r.tests.get('importance', '')}:", "",
             md_table(r.importances_frame()), ""]
    if r.assumptions:
        lines += ["Protocols and assumptions: " + "; ".join(r.assumptions) + ".", ""]
    for title, path in plots_made.items():
        lines += [f"![{title}]({path})", ""]
    return "\n".join(lines)


def write_adaptive_outputs(result, out: Path) -> dict[str, str]:
    """best.json, report.md and the headroom plot of an adaptive result under ``out``."""
    out = Path(out)
    save_result(result, out / "best.json")
    made = {"per collection: static default, adaptive policy and the oracles [evaluation splits]":
            "headroom.png"}
    plots.headroom(result, path=out / "headroom.png")
    plots.close_all()
    write_report(out, {"adaptive": adaptive_section(result, made)})
    return made


# --------------------------------------------------------------------------- advice
def advice_section(a) -> str:
    """The answer first: each decision's recommendation, expected gain and track record; then
    how the rule was chosen (every rule graded on collections it never saw)."""
    lines = [f"## The recommendation (suite `{a.suite}`: {len(a.collections)} collections)", ""]
    lines += [f"- {line}" for line in a.headline()]
    lines += ["", md_table(a.table(), code=("use",)), ""]
    if a.pooled:
        lines += ["### How the rule was chosen: every rule graded on collections it never saw", "",
                  f"Nested leave-one-collection-out: for each collection, the whole pipeline "
                  f"(selection, its LOCO evidence, every rule's decision) ran on the other "
                  f"collections only, and the decision was scored on the left-out one against "
                  f"the better of the default and the selection there. {a.graded} decisions "
                  f"({len(a.per_family)} decision{'s' if len(a.per_family) > 1 else ''} x "
                  f"{len(a.collections)} collections). Regret: "
                  f"how much the better option beat the one the rule chose ({a.metric}). Cost: "
                  f"the regret, plus {a.loss_aversion:g} times what a change the rule took lost "
                  f"against the default (a shipped loss counts {1 + a.loss_aversion:g} times a "
                  f"declined gain: a regression in production is worse than a missed "
                  f"improvement). The rule with the lowest mean cost is `{a.best_rule}`"
                  + (" (the one used)." if a.agrees else
                     f"; the results used `{a.rule}`.") + " Rules tied at four decimals go to "
                  "the simpler one (the order of the table).", "",
                  md_table(a.rules_table().drop(columns=["rule text"])), ""]
        if a.by_loss_aversion:
            lines += ["The rule chosen at other weights of a shipped loss (0: plain regret): "
                      + ", ".join(f"{w}: `{r}`" for w, r in a.by_loss_aversion.items()) + ".",
                      ""]
        lines += ["Mean cost per decision and rule:", "",
                  md_table(a.families_table()), "",
                  "Rules: " + "; ".join(f"`{r}`: {RULE_TEXT[r]}" for r in a.pooled) + ".", ""]
    notes = [f"- `{c}`: {n}" for c, n in a.notes.items() if n]
    if notes:
        lines += ["### What is unusual about the collections", "", *notes, ""]
    return "\n".join(lines)
