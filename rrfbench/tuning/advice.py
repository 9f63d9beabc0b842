"""The answer first: one recommendation per decision of a suite, with its rule's track record.

A suite's results hold one decision each (:mod:`rrfbench.tuning.decisions`): free fusion vs RRF k=60
(``results/transfer/<suite>/best.json``), each studied system's tuned vs shipped knobs
(``.../presets/<name>/best.json``), the adaptive policies vs their static defaults
(``results/adaptive/<suite>/...``). :class:`Advice` gathers them: per decision what to use, the
expected gain on a new collection with its intervals and how often the rule's advice was right
on collections it never saw; and the rules graded over every decision together (the pooled
nested-LOCO table), which says whether the rule rrfbench uses is still the lowest-cost one
(regret, a shipped loss counted twice: :func:`rrfbench.tuning.decisions.cost`).
A plain value: :func:`gather` reads saved results, nothing here computes a result.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path

import pandas as pd

from ..core.errors import InputError
from ..core.runs import read_text
from ..results.dataset import load_result
from ..results.values import _ci
from .decisions import LOSS_AVERSION, RULE_TEXT, RULES, choice_by_loss_aversion, choose_rule, pool

ADVICE_SCHEMA = 1


def _family(r) -> tuple[str, str]:
    """(key, what is decided) of a suite or adaptive result."""
    if r.kind == "adaptive":
        if r.preset:
            return f"adaptive:{r.preset}", f"{r.preset}: per-query policy vs its static default"
        return "adaptive", f"per-query policy ({' + '.join(r.runs)}) vs the static default"
    if r.preset:
        return f"preset:{r.preset}", f"{r.preset}: tuned knobs vs shipped"
    return "fusion", f"free fusion ({' + '.join(r.runs)}) vs {r.default['label']}"


def _relative(path: Path, root: Path) -> str:
    """``results/...``: where a result is, the same on every clone."""
    try:
        return f"results/{path.relative_to(root).as_posix()}"
    except ValueError:
        return str(path)


def _row(r, path: Path, root: Path) -> dict:
    key, what = _family(r)
    dec = r.decision
    gain = dec["recommended_gain"]
    tr = dec.get("track_record")
    return {"family": key, "decision": what, "use": r.recommended["label"],
            "take_change": bool(dec["take_change"]), "change": r.label,
            "expected_gain": gain["value"], "ci95": list(gain["ci95"]),
            "prediction95": list(gain["prediction95"]),
            "change_gain": dec["change_gain"]["value"],
            "change_ci95": list(dec["change_gain"]["ci95"]),
            "right": tr["right"] if tr else None, "of": tr["of"] if tr else None,
            "significance_verdict": dec.get("significance_verdict", r.verdict),
            "source": _relative(path, root)}


@dataclass(frozen=True)
class Advice:
    """Every decision of a suite with its recommendation, and the rules graded over them."""

    suite: str
    collections: tuple
    notes: dict                        # collection -> what is unusual about it
    metric: str
    rule: str                          # the rule the results used
    rows: tuple                        # one per decision (see :func:`_row`)
    pooled: dict                       # rule -> figures over every graded decision
    per_family: dict                   # family -> rule -> mean cost (decisions.cost)
    best_rule: str                     # the lowest pooled cost (the simpler on a tie)
    graded: int                        # decisions graded (families x collections)
    left_out: tuple = ()               # declared collections not on the search path
    by_loss_aversion: dict = field(default_factory=dict)   # weight -> the rule chosen there
    loss_aversion: float = LOSS_AVERSION
    kind: str = "advice"
    schema_version: int = ADVICE_SCHEMA
    sources: dict = field(default_factory=dict)

    @property
    def agrees(self) -> bool:
        """Whether the rule the results used is the lowest-cost one on this suite."""
        return self.best_rule == self.rule

    def table(self) -> pd.DataFrame:
        """The recommendations: what to use, the expected gain on a new collection with the
        95% interval of the mean over collections and for one new collection, and the rule's
        record on this decision's left-out collections."""
        m = self.metric
        return pd.DataFrame([{
            "decision": r["decision"], "use": r["use"],
            f"expected gain ({m})": r["expected_gain"], "95% CI (mean)": _ci(r["ci95"], "+"),
            "95% (one new collection)": _ci(r["prediction95"], "+"),
            "advice right on": (f"{r['right']} of {r['of']}" if r["of"] else "not graded"),
            "significance verdict": r["significance_verdict"]} for r in self.rows])

    def rules_table(self) -> pd.DataFrame:
        """Each rule over every graded decision: mean cost (regret, shipped losses counted
        1 + loss aversion times), mean regret, how often its choice was the better one, how
        often it shipped a change that lost, its worst regret, its worst and mean change
        against the default."""
        return pd.DataFrame([{
            "rule": rule + (" (used)" if rule == self.rule else "")
            + (" (lowest cost)" if rule == self.best_rule else ""),
            "mean cost": f.get("mean_cost"), "mean regret": f["mean_regret"],
            "right": f"{f['right']} of {f['n']}",
            "shipped a loss": f.get("shipped_losses"),
            "worst regret": f["worst_regret"], "worst vs default": f["worst_vs_default"],
            "mean vs default": f["mean_vs_default"], "took the change": f["took_change"],
            "rule text": RULE_TEXT[rule]} for rule, f in self.pooled.items()])

    def families_table(self) -> pd.DataFrame:
        """Mean cost of each rule on each decision's left-out collections."""
        return pd.DataFrame([{"decision": fam, **{r: v.get(r) for r in RULES}}
                             for fam, v in self.per_family.items()])

    def headline(self) -> list[str]:
        """The recommendation in a few lines: what to use instead of the default, the
        expected gain, and the track record."""
        lines = []
        for r in self.rows:
            record = (f"this kind of advice was right on {r['right']} of {r['of']} left-out "
                      "collections" if r["of"] else "not graded (too few collections)")
            if r["take_change"]:
                lines.append(f"{r['decision']}: use {r['use']}; expected gain on a new collection "
                             f"{r['expected_gain']:+.4f} {self.metric} (95% CI of the mean over "
                             f"collections {_ci(r['ci95'], '+')}, one new collection "
                             f"{_ci(r['prediction95'], '+')}); {record}.")
            else:
                lines.append(f"{r['decision']}: keep {r['use']}; the change ({r['change']}) would "
                             f"give {r['change_gain']:+.4f} (95% CI {_ci(r['change_ci95'], '+')}), "
                             f"not enough for rule '{self.rule}'; {record}.")
        f = self.pooled.get(self.rule)
        if f:
            lines.append(f"Rule '{self.rule}' ({RULE_TEXT[self.rule]}): right on {f['right']} of "
                         f"{f['n']} decisions graded on collections they never saw (nested "
                         f"leave-one-collection-out), shipped a change that lost on "
                         f"{f.get('shipped_losses')}, mean regret {f['mean_regret']:.4f}, worst "
                         f"{f['worst_regret']:.4f}.")
        if self.pooled and not self.agrees:
            lines.append(f"Note: on this suite the lowest-cost rule is '{self.best_rule}', not "
                         f"'{self.rule}' (rrfbench.tuning.decisions.DEFAULT_DECISION).")
        if self.left_out:
            lines.append(f"Left out (not on the search path, --allow-missing): "
                         f"{', '.join(self.left_out)}.")
        return lines

    def to_json(self) -> dict:
        return asdict(self)

    @classmethod
    def from_json(cls, d: dict) -> Advice:
        d = dict(d)
        for key in ("collections", "rows", "left_out"):
            d[key] = tuple(d.get(key, ()))
        return cls(**d)


def load_advice(path: str | Path) -> Advice:
    """An :class:`Advice` from its ``advice.json``."""
    path = Path(path)
    try:
        d = json.loads(read_text(path))
    except json.JSONDecodeError as exc:
        raise InputError(f"not valid JSON ({exc.msg})", path, exc.lineno) from None
    if d.get("kind") != "advice" or d.get("schema_version") != ADVICE_SCHEMA:
        raise InputError("not an advice.json written by this rrfbench; regenerate it with "
                         "`rrfbench sweep --suite NAME`", path)
    return Advice.from_json(d)


def gather(suite: str, transfer_dir: Path, adaptive_dir: Path, notes: dict | None = None,
           left_out=()) -> Advice | None:
    """The :class:`Advice` of the saved results of ``suite`` (``None`` before the free-fusion
    suite result exists). Only results over the same collections as the free-fusion one
    count: a system tuned on an older set of collections is left out."""
    main = transfer_dir / "best.json"
    if not main.exists():
        return None
    first = load_result(main)
    root = transfer_dir.parent.parent          # results/transfer/<suite> -> results
    paths = [main, *sorted((transfer_dir / "presets").glob("*/best.json")),
             adaptive_dir / "best.json", *sorted((adaptive_dir / "presets").glob("*/best.json"))]
    rows, gradings, sources = [], {}, {}
    for path in paths:
        if not path.exists():
            continue
        try:
            r = load_result(path)
        except InputError:
            continue
        if tuple(r.collections) != tuple(first.collections) or not r.decision:
            continue
        row = _row(r, path, root)
        rows.append(row)
        sources[row["family"]] = row["source"]
        g = r.decision.get("grading") or {}
        if "rules" in g:
            gradings[row["family"]] = g
    pooled = pool(gradings)
    per_family = {fam: {rule: pool({fam: g})[rule]["mean_cost"] for rule in g["rules"]}
                  for fam, g in gradings.items()}
    tables = {f: g["rules"] for f, g in gradings.items()}
    best = choose_rule(tables) if gradings else ""
    by_weight = choice_by_loss_aversion(tables) if gradings else {}
    return Advice(suite=suite, collections=tuple(first.collections),
                  notes={c: (notes or {}).get(c, "") for c in first.collections},
                  metric=first.metric, rule=first.decision.get("rule", ""), rows=tuple(rows),
                  pooled=pooled, per_family=per_family, best_rule=best,
                  graded=sum(len(g["folds"]) for g in gradings.values()),
                  left_out=tuple(left_out), sources=sources, by_loss_aversion=by_weight)
