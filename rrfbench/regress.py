"""Metric regression: recompute the numbers in ``results/baselines.json`` and compare.

Each entry names a dataset, split and system - a single retriever (``spec``), a studied
system as shipped or tuned (``preset`` + ``params``) or a tuned fusion configuration
(``runs`` + ``config``) - and its expected metrics. Status per metric:

* ``OK``: equal to 4 decimals; ``OKISH``: within the tolerance (default 0.005);
* ``IMPROVED``: better by more than the tolerance (exit 0; run ``--update`` to record it);
* ``FAIL``: worse by more than the tolerance (exit 1);
* ``SKIP``: needs full-corpus dense encoding that this machine has not cached (``--all``
  computes it anyway).

Runs come from the run cache when their manifests still match, so a CI check costs little.
"""

from __future__ import annotations

import json
from pathlib import Path

from .errors import InputError


def default_path() -> Path:
    """``<project>/results/baselines.json`` (the committed baselines)."""
    from .store import project_root

    root = project_root()
    return (root / "results" if root is not None else Path("results")) / "baselines.json"
DENSE_SKIP_DOCS = 2000


def load_baselines(path: str | Path) -> dict:
    from .runs import read_text

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
    return data


def _specs(entry: dict) -> list[str]:
    if "spec" in entry:
        return [entry["spec"]]
    if "preset" in entry:
        from .presets import get_preset

        return list(get_preset(entry["preset"]).streams.values())
    return list(entry["runs"])


def _dense_uncached(ds, split: str, specs: list[str]) -> bool:
    """True when a dense run would need a full-corpus encoding this machine has not cached."""
    from .retrievers import make_retriever, run_path
    from .retrievers.base import expected_manifest, manifest_matches, read_manifest

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


def compute(entry: dict, metrics: list[str], ds=None) -> dict[str, float]:
    """Recompute one entry's metrics (``ds``: the entry's dataset, if already loaded)."""
    from .datasets import load_dataset
    from .evaluation import evaluate
    from .workflows import retrieve

    ds = ds or load_dataset(entry["dataset"])
    split = entry["split"]
    qrels = ds.qrels(split)

    def run(spec):
        kw = {"show_progress": False} if spec.startswith("dense") else {}
        return retrieve(ds, spec, split, 1000, **kw)

    if "spec" in entry:
        fused = run(entry["spec"])
    elif "preset" in entry:
        from .presets import get_preset

        p = get_preset(entry["preset"])
        fused = p.run({role: run(spec) for role, spec in p.roles_available().items()},
                      entry.get("params"))
    else:
        from .engine import Config

        fused = Config.from_json(entry["config"]).fuse([run(s) for s in entry["runs"]])
    return evaluate(fused, qrels, metrics)


def check(baselines: dict, tolerance: float | None = None, compute_all: bool = False,
          progress: bool = False):
    """Rows (entry, metric, expected, actual, status) for every baseline entry."""
    from .datasets import load_dataset
    from .progress import progress as bar

    tol = baselines.get("tolerance", 0.005) if tolerance is None else tolerance
    rows = []
    datasets: dict = {}  # each corpus read and fingerprinted once, not once per entry
    for entry in bar(baselines["entries"], desc="regress", unit="entry", enabled=progress):
        metrics = list(entry["metrics"])
        if entry["dataset"] not in datasets:
            datasets[entry["dataset"]] = load_dataset(entry["dataset"])
        ds = datasets[entry["dataset"]]
        if not compute_all and _dense_uncached(ds, entry["split"], _specs(entry)):
            for m in metrics:
                rows.append({**_ident(entry), "metric": m, "expected": entry["metrics"][m],
                             "actual": None, "status": "SKIP"})
            continue
        actual = compute(entry, metrics, ds)
        for m in metrics:
            exp, act = float(entry["metrics"][m]), float(actual[m])
            if round(exp, 4) == round(act, 4):
                status = "OK"
            elif abs(act - exp) <= tol:
                status = "OKISH"
            elif act > exp:
                status = "IMPROVED"
            else:
                status = "FAIL"
            rows.append({**_ident(entry), "metric": m, "expected": exp, "actual": act,
                         "status": status})
    return rows


def _ident(entry: dict) -> dict:
    return {"dataset": entry["dataset"], "split": entry["split"], "system": entry["system"]}


def update(baselines: dict, rows: list[dict]) -> tuple[dict, list[str]]:
    """New baselines with the recomputed values, and a human-readable diff."""
    new = json.loads(json.dumps(baselines))
    diff = []
    by_key = {(r["dataset"], r["split"], r["system"], r["metric"]): r for r in rows}
    for entry in new["entries"]:
        for m in entry["metrics"]:
            r = by_key.get((entry["dataset"], entry["split"], entry["system"], m))
            if r is None or r["actual"] is None:
                continue
            old = entry["metrics"][m]
            if round(old, 6) != round(r["actual"], 6):
                diff.append(f"{entry['dataset']}/{entry['split']} {entry['system']} {m}: "
                            f"{old:.4f} -> {r['actual']:.4f} ({r['actual'] - old:+.4f})")
            entry["metrics"][m] = round(r["actual"], 6)
    return new, diff
