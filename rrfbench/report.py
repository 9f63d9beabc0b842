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
