"""``report.md``: what a person reads after a sweep (and the preset table, when there is one)."""

from __future__ import annotations

import json
from pathlib import Path

from .runs import atomic_write_text


def _ci(ci) -> str:
    return f"[{ci[0]:.4f}, {ci[1]:.4f}]"


def _p(p) -> str:
    return "<0.0001" if p < 1e-4 else f"{p:.4f}"


def sweep_section(best: dict, plots: dict[str, str]) -> str:
    m = best["metric"]
    ev, bl = best["eval"], best["baselines"]
    tune = best["tune"]
    how = (f"tuned on split `{tune['split']}`, evaluated on split `{ev['split']}`"
           if "split" in tune else f"{tune['folds']}-fold cross-validation over queries "
           f"(seed {tune.get('seed', 0)}); each query scored by the configuration chosen on the "
           "other folds")
    bs, r60 = bl["best_single"], bl["rrf60_equal"]
    won = ev["value"] > max(bs["value"], r60["value"])
    verdict = ("The tuned configuration beats both baselines on the evaluation queries"
               if won else "The tuned configuration does **not** beat both baselines on the "
               "evaluation queries")
    sig = [n for n, b in (("best single run", bs), ("RRF k=60 equal weights", r60))
           if b["p_value"] < 0.05 and ev["value"] > b["value"]]
    lines = [
        f"## Fusion sweep: {best['dataset']} ({' + '.join(best['runs'])})",
        "",
        f"Metric **{m}**; {how}; {best.get('grid_size', '?')} configurations.",
        "",
        f"Chosen configuration: `{best['config']['label']}`",
        "",
        f"| system | {m} (eval) | 95% CI | delta vs tuned | p (randomisation) | p (t-test) |",
        "|---|---|---|---|---|---|",
        f"| **tuned** | **{ev['value']:.4f}** | {_ci(ev['ci95'])} | | | |",
        f"| best single run ({bs['name']}) | {bs['value']:.4f} | {_ci(bs['ci95'])} | "
        f"{bs['delta']:+.4f} | {_p(bs['p_value'])} | {_p(bs['p_value_t'])} |",
        f"| RRF k=60, equal weights | {r60['value']:.4f} | {_ci(r60['ci95'])} | "
        f"{r60['delta']:+.4f} | {_p(r60['p_value'])} | {_p(r60['p_value_t'])} |",
        "",
        f"{verdict} ({'significant at 0.05 against: ' + ', '.join(sig) if sig else 'no difference significant at 0.05'}).",
        "",
        "Single runs on the evaluation queries: " + ", ".join(
            f"{n} {v:.4f}" for n, v in best["singles"].items()) + ".",
        "",
        "**Optimism gap.** Had the grid been tuned on the evaluation queries themselves, the "
        f"best value would have been {best['optimism']['best_on_eval']:.4f} "
        f"(`{best['optimism']['best_on_eval_label']}`); the honestly tuned configuration ranks "
        f"{best['optimism']['rank_on_eval_grid']} of {best['optimism']['grid_size']} there "
        f"(gap {best['optimism']['gap']:.4f}).",
        "",
    ]
    if "family_best" in best:
        lines += ["Best configuration of each fusion family (on the tuning queries; "
                  "eval value of that configuration):", "",
                  f"| family | tune {m} | eval {m} |", "|---|---|---|"]
        for fam, row in best["family_best"].items():
            lines.append(f"| {fam} | {row['tune']:.4f} | {row['eval']:.4f} |")
        lines.append("")
    for title, path in plots.items():
        lines += [f"![{title}]({path})", ""]
    return "\n".join(lines)


def write_report(out_dir: Path, sections: dict[str, str]) -> Path:
    """Write ``out_dir/report.md`` from named sections (stored as ``report.<name>.md`` too, so
    the sweep and the preset table can be regenerated independently)."""
    out_dir = Path(out_dir)
    for name, text in sections.items():
        atomic_write_text(out_dir / f"report.{name}.md", text)
    parts = sorted(out_dir.glob("report.*.md"))
    order = {"sweep": 0, "presets": 1}
    parts.sort(key=lambda p: order.get(p.name.split(".")[1], 9))
    body = "\n".join(p.read_text() for p in parts)
    text = f"# rrfbench report: {out_dir.name}\n\n{body}"
    atomic_write_text(out_dir / "report.md", text)
    return out_dir / "report.md"


def write_json(path: Path, obj) -> None:
    atomic_write_text(path, json.dumps(obj, indent=2, default=str) + "\n")


def write_sweep_outputs(ds, best: dict, table, eval_table, out: Path) -> dict:
    """best.json, per_query.csv, PNG plots and report.md under ``out``."""
    import pandas as pd

    from . import plots
    from .presets import provenance
    from .sweep import family_labels

    names, metric = best["runs"], best["metric"]
    best["dataset"] = ds.name
    best["fingerprint"] = ds.fingerprint
    best["provenance"] = provenance(ds)
    best["grid_size"] = int(len(table))
    fam = family_labels(table)
    best["family_best"] = {}
    for f, idx in table.groupby(fam)[metric].idxmax().items():
        best["family_best"][f] = {"tune": float(table.loc[idx, metric]),
                                  "eval": float(eval_table.loc[idx, metric]),
                                  "label": str(table.loc[idx, "label"])}
    pq = best.pop("per_query")
    pd.DataFrame(pq).to_csv(out / "per_query.csv", index=False)
    write_json(out / "best.json", best)
    made = {}
    pairs = [(a, b) for i, a in enumerate(names) for b in names[i + 1:]]
    for a, b in pairs[:3]:
        p = out / f"heatmap_{a}_{b}.png"
        plots.heatmap_k_weight(table, names, metric, pair=(a, b), path=p)
        made[f"{metric} over k x weight: {a} + {b}"] = p.name
    plots.k_curves(table, names, metric, path=out / "k_curves.png")
    made[f"{metric} vs k"] = "k_curves.png"
    if len(names) == 3:
        plots.ternary(table, names, metric, path=out / "ternary.png")
        made["weights simplex"] = "ternary.png"
    plots.win_loss(pq["tuned"], pq["best_single"], metric, best["baselines"]["best_single"]["name"],
                   path=out / "win_loss.png")
    made["per-query wins/losses vs best single run"] = "win_loss.png"
    plots.method_comparison(table, metric, path=out / "methods.png")
    made["fusion families"] = "methods.png"
    import matplotlib.pyplot as plt

    plt.close("all")
    write_report(out, {"sweep": sweep_section(best, made)})
    best["per_query"] = pq
    return best
