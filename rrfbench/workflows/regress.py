"""Metric regression: recompute the numbers in ``results/baselines.json`` and compare.

Each entry names a dataset, split and system - a single retriever (``spec``), a studied
system as shipped or tuned (``preset`` + ``params``) or a tuned fusion configuration
(``runs`` + ``config``) - its expected mean ``metrics`` and its ``per_query`` values
(``{"qids": [...], "<metric>": [...]}``, qids in evaluation order, values rounded to 6
decimals). ``--update`` recomputes every entry (dense ones too) and rewrites both.

**Why not a fixed tolerance on the mean.** The same code gives slightly different dense runs on
CPUs with different integer kernels: a few queries' rankings change, and the mean moves by up to
about the old tolerance either way (scifact zeus nDCG@10 0.6468 -> 0.6415 on one machine, with
no code change). A fixed tolerance on the mean either fails on that noise or misses a real loss
of 0.01. So a loss must be both *material* and *significant* to fail.

**The rule** (the file's top-level ``rule`` records it; ``--margin`` overrides the margin).
Per metric, the recomputed per-query values are paired by qid with the baseline's; ``delta``
is the mean of (today - baseline) over the queries both sides have (queries present on one
side only are counted, reported and left out), and ``p`` is a one-sided paired randomisation
test of that delta: :func:`rrfbench.core.stats.permutation_test` (random sign flips of the
per-query differences, ``resamples`` draws from ``seed``), its two-sided p-value halved, which
is the one-sided p-value in the direction of the observed change because the sign-flip null
is symmetric. Statuses:

* ``OK``: ``|delta|`` below 0.00005 (equal to 4 decimals);
* ``OKISH``: ``|delta|`` within the margin (default 0.005);
* ``NOISE``: ``|delta|`` beyond the margin, either way, but ``p >= alpha`` (default 0.05): a
  change carried by too few queries or too mixed to tell from noise (exit 0);
* ``IMPROVED``: better by more than the margin with ``p < alpha`` (exit 0; ``--update``
  records it);
* ``FAIL``: worse by more than the margin with ``p < alpha`` (exit 1);
* ``SKIP``: needs full-corpus dense encoding that this machine has not cached (``--all``
  computes it anyway).

Assumptions: queries are independent draws (the test is over queries, not collections); a
loss confined to k queries has ``p >= 2**-k`` whatever its size, so a loss carried by four or
fewer queries never fails - that is the price of not failing on kernel noise. An entry (or a
metric) without per-query values - a file written before they were stored - falls back to the
mean-only rule (``FAIL`` / ``IMPROVED`` beyond the margin, no test) with one warning.

Runs come from the run cache when their manifests still match, so a CI check costs little.

Called from: ``cli``.
"""

from __future__ import annotations

import json
import math
import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from ..core.errors import InputError, RrfbenchWarning
from ..core.evaluation import evaluate_per_query, warn_coverage
from ..core.progress import progress as bar
from ..core.runs import read_text
from ..core.stats import permutation_test
from ..core.store import project_root, write_text
from ..data.datasets import load_dataset
from ..fusion.config import Config
from ..retrievers import make_retriever, run_path
from ..retrievers.base import expected_manifest, manifest_matches, read_manifest
from ..systems.registry import get_system
from .dataset import retrieve

STATUSES = ("OK", "OKISH", "NOISE", "IMPROVED", "SKIP", "FAIL")
TEST = "sign-flip"
RULE = {
    "margin": 0.005,
    "alpha": 0.05,
    "test": TEST,
    "resamples": 10_000,
    "seed": 0,
}
RULE_ABOUT = (
    "Per metric: delta = mean over the queries both sides have of (today - baseline); p = "
    "one-sided paired sign-flip randomisation test of delta (rrfbench.core.stats.permutation_test, "
    "two-sided p halved; `resamples` draws from `seed`). FAIL: delta < -margin and p < alpha. "
    "IMPROVED: delta > margin and p < alpha. NOISE: |delta| > margin, p >= alpha. OKISH: "
    "|delta| <= margin. OK: equal to 4 decimals. Entries without per_query: mean-only rule.")
OK_EPS = 5e-5  # |delta| below this is equal to 4 decimals
ABOUT = (
    "Expected metrics per (dataset, split, system): the mean `metrics` and their `per_query` "
    "values; `rrfbench regress` recomputes them, `rrfbench regress --update` recomputes every "
    "entry (dense ones too) and rewrites them deliberately. Keyword runs are the same on every "
    "CPU (ties at the depth cut go by docid). Dense runs use torch fp32 with its math libraries "
    "capped to AVX2 code, batches rrfbench forms itself and exact cosines, so they are the "
    "same to the bit on every x86-64 CPU checked (docs/portability.md); another model, backend "
    "or library version still shifts their floats slightly: so `regress` fails only on a loss "
    "beyond the rule's margin that a paired test over the queries finds significant (see `rule`). scifact's dense entries are "
    "SKIPped on a machine that has not cached its scifact embeddings (`--all` computes them).")


def default_path() -> Path:
    """``<project>/results/baselines.json`` (the committed baselines)."""

    root = project_root()
    return (root / "results" if root is not None else Path("results")) / "baselines.json"


DENSE_SKIP_DOCS = 2000


# --------------------------------------------------------------------------- the file
def load_baselines(path: str | Path) -> dict:

    path = Path(path)
    try:
        data = json.loads(read_text(path))
    except json.JSONDecodeError as exc:
        raise InputError(f"not valid JSON ({exc.msg})", path, exc.lineno) from None
    if not isinstance(data, dict) or not isinstance(data.get("entries"), list):
        raise InputError("expected an object with a list 'entries'", path)
    for i, e in enumerate(data["entries"]):
        if not isinstance(e, dict) or not {"dataset", "split", "system", "metrics"} <= set(e):
            raise InputError(f"entry {i} needs dataset, split, system and metrics", path)
        pq = e.get("per_query")
        if pq is None:
            continue
        if not isinstance(pq, dict) or not isinstance(pq.get("qids"), list):
            raise InputError(f"entry {i}: per_query needs a list 'qids'", path)
        for m, vals in pq.items():
            if m != "qids" and (not isinstance(vals, list) or len(vals) != len(pq["qids"])):
                raise InputError(f"entry {i}: per_query {m!r} needs one value per qid", path)
        _check_consistent(i, e, path)
    rule(data)  # a malformed rule fails here, before any work
    return data


MEAN_TOL = 2e-6  # per-query values and means are both stored to 6 decimals


def _check_consistent(i: int, entry: dict, path: Path) -> None:
    """An entry's mean ``metrics`` must be the mean of its own ``per_query`` values (to the
    6 decimals both are stored with): a hand-edited or corrupted file, whose mean says one thing
    and whose per-query values another, would otherwise pass or fail on the wrong number."""
    pq = entry.get("per_query") or {}
    for m, mean in entry["metrics"].items():
        vals = pq.get(m)
        if vals is None:
            continue
        if isinstance(mean, bool) or not isinstance(mean, (int, float)) or not all(
                isinstance(v, (int, float)) and not isinstance(v, bool) for v in vals):
            raise InputError(f"entry {i} ({_label(entry)}): {m} values must be numbers", path)
        if not vals:
            continue
        got = math.fsum(vals) / len(vals)
        if abs(got - mean) > MEAN_TOL:
            raise InputError(f"entry {i} ({_label(entry)}): metrics {m} {mean:.6f} is not the "
                             f"mean of its per_query values ({got:.6f}); the file was edited "
                             f"or corrupted: restore it, or regenerate it with `rrfbench "
                             f"regress --update`", path)


def rule(baselines: dict, margin: float | None = None) -> dict:
    """The rule in force: the file's ``rule`` (an old file's ``tolerance`` is its margin) over
    the defaults, then ``margin`` if given."""
    out = dict(RULE)
    given = baselines.get("rule") or {}
    if not isinstance(given, dict):
        raise InputError("baselines: 'rule' must be an object")
    if "tolerance" in baselines:
        out["margin"] = baselines["tolerance"]
    out.update({k: given[k] for k in RULE if k in given})
    if margin is not None:
        out["margin"] = margin
    if out["test"] != TEST:
        raise InputError(f"baselines: rule.test {out['test']!r} is not one of {TEST}")
    for key, ok in (("margin", lambda v: 0 <= v < 1), ("alpha", lambda v: 0 < v < 1),
                    ("resamples", lambda v: v >= 1 and v == int(v)), ("seed", lambda v: v == int(v))):
        v = out[key]
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not ok(v):
            raise InputError(f"baselines: rule.{key} {v!r} is out of range")
    out["resamples"], out["seed"] = int(out["resamples"]), int(out["seed"])
    return out


def describe_rule(r: dict) -> str:
    """The rule in words, printed under the table."""
    return (
        f"rule: FAIL = mean loss over the queries both sides have > margin {r['margin']:g} AND "
        f"one-sided paired sign-flip randomisation test p < alpha {r['alpha']:g} "
        f"({r['resamples']} resamples, seed {r['seed']}); IMPROVED likewise for a gain; NOISE = "
        f"beyond the margin but p >= alpha; OKISH = within the margin; OK = equal to 4 decimals.\n"
        f"assumes: queries are independent; a change carried by k queries has p >= 2^-k, so one "
        f"confined to 4 or fewer queries is never significant; entries without per-query "
        f"values use the mean alone (no test).")


def dumps(data: dict) -> str:
    """The baselines file's text: indented JSON with each list of numbers or ids on one line
    (per-query lists stay one line each), deterministic for the same data."""
    def enc(obj, depth: int) -> str:
        pad, end = "  " * (depth + 1), "  " * depth
        if isinstance(obj, dict) and obj:
            items = [f"{pad}{json.dumps(k)}: {enc(v, depth + 1)}" for k, v in obj.items()]
            return "{\n" + ",\n".join(items) + "\n" + end + "}"
        if isinstance(obj, list) and any(isinstance(x, (dict, list)) for x in obj):
            return "[\n" + ",\n".join(pad + enc(x, depth + 1) for x in obj) + "\n" + end + "]"
        if isinstance(obj, list):
            return "[" + ", ".join(json.dumps(x) for x in obj) + "]"
        return json.dumps(obj)

    return enc(data, 0) + "\n"


# --------------------------------------------------------------------------- recomputation
def _specs(entry: dict) -> list[str]:
    if "spec" in entry:
        return [entry["spec"]]
    if "preset" in entry:

        return list(get_system(entry["preset"]).streams.values())
    return list(entry["runs"])


def _dense_uncached(ds, split: str, specs: list[str]) -> bool:
    """True when a dense run would need a full-corpus encoding this machine has not cached."""

    for spec in specs:
        if not spec.startswith("dense") or len(ds.corpus) <= DENSE_SKIP_DOCS:
            continue
        r = make_retriever(spec, show_progress=False)
        if manifest_matches(read_manifest(run_path(ds.name, split, r.name)),
                            expected_manifest(r, ds, split, 1000)):
            continue
        if not r.embeddings_cached(ds):
            return True
    return False


def compute_per_query(entry: dict, metrics: list[str], ds=None):
    """Recompute one entry's per-query values: a DataFrame indexed by qid (evaluation order),
    one column per metric (``ds``: the entry's dataset, if already loaded)."""

    ds = ds or load_dataset(entry["dataset"])
    split = entry["split"]
    qrels = ds.qrels(split)

    def run(spec):
        kw = {"show_progress": False} if spec.startswith("dense") else {}
        return retrieve(ds, spec, split, 1000, **kw)

    if "spec" in entry:
        fused = run(entry["spec"])
    elif "preset" in entry:

        p = get_system(entry["preset"])
        fused = p.run({role: run(spec) for role, spec in p.roles_available().items()},
                      entry.get("params"))
    else:

        fused = Config.from_json(entry["config"]).fuse([run(s) for s in entry["runs"]])
    warn_coverage(fused, qrels)
    return evaluate_per_query(fused, qrels, metrics)


def compute(entry: dict, metrics: list[str], ds=None) -> dict[str, float]:
    """Recompute one entry's mean metrics (as :func:`rrfbench.core.evaluation.evaluate` gives)."""
    pq = compute_per_query(entry, metrics, ds)
    return {c: float(pq[c].mean()) if len(pq) else 0.0 for c in pq.columns}


# --------------------------------------------------------------------------- the comparison
def one_sided_p(today, baseline, resamples: int = RULE["resamples"],
                seed: int = RULE["seed"]) -> float:
    """One-sided paired sign-flip p-value of mean(today - baseline) in the direction it moved:
    half of :func:`rrfbench.core.stats.permutation_test`'s two-sided p (the null is symmetric);
    1 when nothing changed."""


    d = np.asarray(today, dtype=np.float64) - np.asarray(baseline, dtype=np.float64)
    if d.size == 0 or np.allclose(d, 0.0):
        return 1.0
    return permutation_test(today, baseline, n_resamples=resamples, seed=seed) / 2


def status(delta: float, p: float | None, r: dict) -> str:
    """A metric's status from its paired mean change and one-sided p (``None``: mean only)."""
    if abs(delta) < OK_EPS:
        return "OK"
    if abs(delta) <= r["margin"]:
        return "OKISH"
    if p is not None and p >= r["alpha"]:
        return "NOISE"
    return "IMPROVED" if delta > 0 else "FAIL"


def check(baselines: dict, margin: float | None = None, compute_all: bool = False,
          progress: bool = False) -> list[dict]:
    """One row per (entry, metric): dataset, split, system, metric, expected (the stored
    mean), actual (today's mean), delta (paired, see the module docstring), p, status,
    n (queries compared), only_baseline / only_today (unpaired query counts), paired
    (whether per-query values were compared) and today's ``qids`` / ``values`` (for
    :func:`update`). Warns once about entries without per-query values and once per entry
    whose queries differ from the baseline's."""

    r = rule(baselines, margin)
    rows = []
    mean_only = 0
    datasets: dict = {}  # each corpus read and fingerprinted once, not once per entry
    for entry in bar(baselines["entries"], desc="regress", unit="entry", enabled=progress):
        metrics = list(entry["metrics"])
        ident = _ident(entry)
        if entry["dataset"] not in datasets:
            datasets[entry["dataset"]] = load_dataset(entry["dataset"])
        ds = datasets[entry["dataset"]]
        if not compute_all and _dense_uncached(ds, entry["split"], _specs(entry)):
            for m in metrics:
                rows.append({**ident, "metric": m, "expected": entry["metrics"][m],
                             "actual": None, "delta": None, "p": None, "status": "SKIP",
                             "n": 0, "only_baseline": 0, "only_today": 0, "paired": False,
                             "qids": None, "values": None})
            continue
        pq = compute_per_query(entry, metrics, ds)
        today_qids = [str(q) for q in pq.index]
        base = entry.get("per_query") or {}
        base_pos = {str(q): i for i, q in enumerate(base.get("qids", []))}
        today_pos = {q: i for i, q in enumerate(today_qids)}
        shared = [q for q in today_qids if q in base_pos]
        only_b = sum(q not in today_pos for q in base_pos)
        only_t = len(today_qids) - len(shared)
        if base and shared and (only_b or only_t):
            warnings.warn(
                f"{_label(entry)}: {only_b} queries only in the baseline, {only_t} only today; "
                f"compared on the {len(shared)} both have", RrfbenchWarning, stacklevel=2)
        entry_mean_only = False
        for m in metrics:
            col = pq[m].to_numpy(dtype=float)
            exp, act = float(entry["metrics"][m]), float(col.mean()) if len(col) else 0.0
            if m in base and shared:
                # rounded as stored, so an unchanged run differs by exactly 0 on every query
                t = [round(float(col[today_pos[q]]), 6) for q in shared]
                b = [float(base[m][base_pos[q]]) for q in shared]
                delta = math.fsum(x - y for x, y in zip(t, b, strict=True)) / len(shared)
                p = one_sided_p(t, b, r["resamples"], r["seed"])
                paired, n = True, len(shared)
            else:
                delta, p, paired, n = act - exp, None, False, len(today_qids)
                entry_mean_only = True
            rows.append({**ident, "metric": m, "expected": exp, "actual": act, "delta": delta,
                         "p": p, "status": status(delta, p, r), "n": n,
                         "only_baseline": only_b if paired else 0,
                         "only_today": only_t if paired else 0, "paired": paired,
                         "qids": today_qids, "values": [float(v) for v in col]})
        mean_only += entry_mean_only
    if mean_only:
        warnings.warn(
            f"{mean_only} baseline entries have no per-query values (a file from before they "
            f"were stored): compared on the mean alone, FAIL on any loss > margin "
            f"{r['margin']:g} without a test; `rrfbench regress --update` stores them",
            RrfbenchWarning, stacklevel=2)
    return rows


def _ident(entry: dict) -> dict:
    return {"dataset": entry["dataset"], "split": entry["split"], "system": entry["system"]}


def _label(entry: dict) -> str:
    return f"{entry['dataset']}/{entry['split']} {entry['system']}"


def counts(rows: list[dict]) -> dict[str, int]:
    """How many rows have each status (every status listed, FAIL last)."""
    return {s: sum(r["status"] == s for r in rows) for s in STATUSES}


def table(rows: list[dict]) -> list[dict]:
    """The printed table: one row per metric with delta (paired, today - baseline), the
    one-sided p and n (queries compared); ``-`` where not computed or mean-only."""
    def num(v):
        return "-" if v is None else v

    return [{"dataset": r["dataset"], "split": r["split"], "system": r["system"],
             "metric": r["metric"], "expected": r["expected"], "actual": num(r["actual"]),
             "delta": "-" if r["delta"] is None else f"{r['delta']:+.4f}",
             "p": "-" if r["p"] is None else f"{r['p']:.4f}",
             "n": r["n"] if r["actual"] is not None else "-", "status": r["status"]}
            for r in rows]


# --------------------------------------------------------------------------- --update
def update(baselines: dict, rows: list[dict]) -> tuple[dict, list[str]]:
    """New baselines with the recomputed means and per-query values (entries whose rows were
    SKIPped keep theirs), the rule written out in full, and a human-readable diff."""
    copy = json.loads(json.dumps(baselines))
    new = {k: v for k, v in copy.items() if k not in ("tolerance", "rule", "entries")}
    new["about"] = ABOUT
    new["rule"] = {**rule(baselines), "about": RULE_ABOUT}
    new["entries"] = copy["entries"]
    diff = []
    added = changed = 0
    by_key = {(r["dataset"], r["split"], r["system"], r["metric"]): r for r in rows}
    for entry in new["entries"]:
        got = {m: by_key.get((entry["dataset"], entry["split"], entry["system"], m))
               for m in entry["metrics"]}
        if not got or any(r is None or r["actual"] is None for r in got.values()):
            continue
        for m, r in got.items():
            old = entry["metrics"][m]
            if round(old, 6) != round(r["actual"], 6):
                diff.append(f"{_label(entry)} {m}: "
                            f"{old:.4f} -> {r['actual']:.4f} ({r['actual'] - old:+.4f})")
            entry["metrics"][m] = round(r["actual"], 6)
        qids = next(iter(got.values()))["qids"]
        per_query = {"qids": qids, **{m: [round(v, 6) for v in r["values"]]
                                      for m, r in got.items()}}
        if "per_query" not in entry:
            added += 1
        elif entry["per_query"] != per_query:
            changed += 1
        entry["per_query"] = per_query
    if added or changed:
        diff.append(f"per-query values: {added} entries added, {changed} changed")
    return new, diff


# --------------------------------------------------------------------------- the command
@dataclass
class RegressOutcome:
    """``rrfbench regress``: the table, the rule in words, the counts or the update's diff."""

    path: Path
    rows: list
    rule_text: str
    counts: dict
    diff: list | None = None          # set by --update (the file was rewritten)

    @property
    def failed(self) -> bool:
        return self.diff is None and bool(self.counts["FAIL"])

    def view(self) -> list:
        items = [(f"metric regression vs {self.path}", pd.DataFrame(table(self.rows))),
                 self.rule_text]
        if self.diff is not None:
            return items + ["\n".join(self.diff) if self.diff else "no changes"]
        return items + [" ".join(f"{k}={v}" for k, v in self.counts.items())]


def regress(baselines: str | Path | None = None, margin: float | None = None,
            update_file: bool = False, compute_all: bool = False,
            progress: bool = False) -> RegressOutcome:
    """Recompute every baseline entry and compare (the module docstring's rule); with
    ``update_file``, rewrite the file with today's values instead."""
    if margin is not None and not (0 <= margin < 1):
        raise InputError(f"--margin: {margin} must be in [0, 1)")
    path = Path(baselines) if baselines else default_path()
    data = load_baselines(path)
    rows = check(data, margin, compute_all or update_file, progress)
    out = RegressOutcome(path, rows, describe_rule(rule(data, margin)), counts(rows))
    if update_file:
        new, out.diff = update(data, rows)
        write_text(path, dumps(new))
    return out
