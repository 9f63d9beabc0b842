"""The main job (``make demo``, ``rrfbench demo``): one dataset's runs, sweep and studied
systems, then the suite's transfer, the studied systems and the adaptive policy across it, and
the suite's recommendation first; each stage timed."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from ..core.metrics import DEFAULT_METRICS, parse_metric
from ..core.store import results_dir, write_json
from ..data.suites import get_suite
from ..fusion.sweep import FusionEngine
from ..outputs.report import (
    retrievers_section,
    write_report,
)
from ..results.dataset import RetrieverScores, StudiedSystems
from ..retrievers import make_retriever
from ..systems import (
    presets as preset_registry,  # PRESETS read at call time: the registry can be swapped
)
from ..tuning.advice import Advice
from ..tuning.holdout import choose_protocol, single_run_configs
from .dataset import (
    DEFAULT_SPECS,
    SweepOutcome,
    _quiet,
    as_dataset,
    preset_table,
    retrieve_result,
    retriever_scores,
    sweep_dataset,
)
from .suite import (
    AdaptOutcome,
    SuiteOutcome,
    adapt_suite,
    advice_view,
    advise,
    retrieve_suite,
    suite_members,
    sweep_suite,
    transfer_dir,
    tune_preset_suite,
)


# --------------------------------------------------------------------------- the demo
@dataclass
class DemoOutcome:
    dataset: str
    retrievers: RetrieverScores
    sweep: SweepOutcome
    presets: StudiedSystems
    stages: dict[str, float]
    all_cached: bool
    out: Path
    timing_log: list[dict] = field(default_factory=list)
    suite: SuiteOutcome | None = None
    suite_presets: list = field(default_factory=list)
    adaptive: AdaptOutcome | None = None
    advice: Advice | None = None
    shown: bool = False        # the dataset's part was already shown (before the suite ran)

    def dataset_view(self) -> list:
        """The dataset's part: single retrievers, the tuned fusion, the studied systems."""
        return [(self.retrievers.title, self.retrievers.table()), *self.sweep.view(),
                (f"{self.dataset}: studied systems as shipped vs tuned (eval split)",
                 self.presets.table())]

    def view(self) -> list:
        """The answer first (the suite's recommendations and their track record), then every
        table of the demo (the dataset's part unless it was shown already) and the closing
        line (see :meth:`SweepOutcome.view`)."""
        items = advice_view(self.advice) if self.advice is not None else []
        if not self.shown:
            items += self.dataset_view()
        if self.suite is not None:
            items += self.suite.view()
        if self.adaptive is not None:
            items += self.adaptive.view()
        items.append(("stage times (s)", pd.DataFrame([{"stage": k, "seconds": v}
                                                       for k, v in self.stages.items()])))
        reports = ([transfer_dir(self.suite.result.suite) / "report.md"]
                   if self.suite is not None else []) + [self.out / "report.md"]
        items.append(f"demo wall time: {self.stages['total']:.1f} s this run "
                     f"({'all runs cached' if self.all_cached else 'some runs computed'}); first "
                     f"run logged in demo_timing.json {self.timing_log[0]['wall_s']:.1f} s; "
                     f"reports: {', '.join(map(str, reports))}")
        return items


def engine_scores(ds, specs: Sequence[str], splits: Sequence[str], engines: dict) -> dict:
    """Each single run's mean metrics from the sweep engines already built (the same numbers as
    ``evaluate``; checked in tests), for :func:`rrfbench.workflows.dataset.retriever_scores`."""
    out = {}
    for sp in splits:
        eng = engines[sp]
        pq = eng.evaluate(single_run_configs(len(specs)))
        for i, spec in enumerate(specs):
            out[(ds.name, sp, spec)] = {m: float(pq[i, j].mean())
                                        for j, m in enumerate(eng.metric_names)}
    return out


def demo(dataset: str = "scifact", specs: Sequence[str] = DEFAULT_SPECS, metric: str = "nDCG@10",
         progress: bool = True, suite: str | None = "en", allow_missing: bool = False,
         show: Callable[[list], None] | None = None,
         log: Callable[[str], None] = _quiet) -> DemoOutcome:
    """The main job: retrieve, sweep (tuned and reported honestly), the studied systems,
    then (with ``suite``) free fusion and every studied system tuned across the suite and
    validated leave-one-collection-out, and the query-adaptive policy; times each stage and appends the wall time to
    ``demo_timing.json``. ``show(view)``, when given, gets the dataset's part as soon as it
    is done, before the suite starts (whose first run encodes every collection)."""
    t0 = time.perf_counter()
    stages: dict[str, float] = {}

    def stage(name, since):
        stages[name] = round(time.perf_counter() - since, 2)
        return time.perf_counter()

    ds = as_dataset(dataset)
    specs = list(specs)
    metric = str(parse_metric(metric))
    if suite:  # a suite that cannot run fails now, not after the dataset's part
        get_suite(suite, allow_missing=allow_missing)
    protocol = choose_protocol(ds.splits)
    splits = list(dict.fromkeys((protocol.tune_split, protocol.eval_split)))
    t = time.perf_counter()
    results = {(spec, sp): retrieve_result(ds, spec, sp) for sp in splits for spec in specs}
    t = stage("retrieve (or load cached runs)", t)
    metrics = [metric] + [m for m in DEFAULT_METRICS if m != metric]
    engines = {sp: FusionEngine([results[(s, sp)].run for s in specs], ds.qrels(sp),
                                tuple(metrics)) for sp in splits}
    t = stage("build sweep engines", t)
    rows = retriever_scores(f"{ds.name}: single retrievers (depth 1000)",
                            [(None, ds, sp, spec, results[(spec, sp)])
                             for sp in splits for spec in specs],
                            scores=engine_scores(ds, specs, splits, engines))
    out = results_dir() / ds.name
    # committed: the same on every machine and run (timings are printed and in demo_timing.json)
    write_json(out / "retrievers.json", rows.table(cached=False, timing=False).to_dict("records"))
    write_report(out, {"retrievers": retrievers_section(ds.name, rows)})
    t = stage("score single retrievers", t)
    sw = sweep_dataset(ds, specs, metric=metric, protocol=protocol, engines=engines,
                       progress=progress, log=log)
    t = stage("sweep, tune, report", t)
    presets = preset_table(ds, metric=metric, progress=progress, protocol=protocol, log=log)
    t = stage("studied systems", t)
    suite_out, suite_presets, adapted, advice = None, [], None, None
    part = DemoOutcome(ds.name, rows, sw, presets, stages, False, out)
    if show is not None:
        show(part.dataset_view())
    if suite:
        members = suite_members(suite, allow_missing=allow_missing)
        _announce_encoding(suite, members, specs, log)
        retrieve_suite(suite, specs, allow_missing=allow_missing, log=log)
        t = stage(f"suite {suite}: retrieve (or load cached runs)", t)
        suite_out = sweep_suite(suite, specs, metric=metric, progress=progress,
                                allow_missing=allow_missing, log=log)
        suite_presets = [tune_preset_suite(suite, name, metric, progress=progress,
                                           allow_missing=allow_missing, log=log)
                         for name in preset_registry.PRESETS]
        t = stage(f"suite {suite}: transfer across collections", t)
        adapted = adapt_suite(suite, specs, metric=metric, progress=progress,
                              allow_missing=allow_missing, log=log)
        t = stage(f"suite {suite}: query-adaptive fusion", t)
        advice = advise(suite, allow_missing, log)
        stage(f"suite {suite}: advice", t)
        graded = [so.result for so in (suite_out, *suite_presets, adapted)]
        stages[f"suite {suite}: nested grading of the decision rules (inside the stages above, "
               "as recorded when each result was computed)"] = round(sum(
                   float(r.provenance.get("nested_grading_s", 0.0)) for r in graded), 2)
    wall = time.perf_counter() - t0
    all_cached = all(r.cached for r in results.values())
    log_path = out / "demo_timing.json"
    timing = json.loads(log_path.read_text()) if log_path.exists() else []
    timing.append({"wall_s": round(wall, 1), "all_runs_cached": all_cached, "stages": stages,
                   "finished": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())})
    write_json(log_path, timing)
    stages["total"] = round(wall, 2)
    return DemoOutcome(ds.name, rows, sw, presets, stages, all_cached, out, timing, suite_out,
                       suite_presets, adapted, advice, shown=show is not None)


def _announce_encoding(suite: str, members, specs: Sequence[str],
                       log: Callable[[str], None]) -> None:
    """One line before a suite's first run: which corpora still need their dense encoding on
    this machine (a one-time cost; each prints its progress with an ETA)."""
    dense = [s for s in specs if s.split(":")[0].split(";")[0] == "dense"]
    if not dense:
        return
    r = make_retriever(dense[0], show_progress=True)
    todo = [ds for ds, _ in members if hasattr(r, "embeddings_cached")
            and not r.embeddings_cached(ds)]
    if todo:
        n = sum(len(ds.corpus) for ds in todo)
        log(f"suite {suite}: {len(todo)} of {len(members)} corpora are not encoded on this "
            f"machine yet ({', '.join(ds.name for ds in todo)}; {n:,} documents): a one-time "
            "cost, tens of minutes on 2 cores, progress below")
