import os
import signal
import subprocess
import sys
import time

import numpy as np
import pandas as pd
import pytest

from rrfbench import evaluate
from rrfbench.core.evaluation import evaluate_per_query
from rrfbench.fusion.config import Config
from rrfbench.fusion.sweep import FusionEngine, make_grid, run_sweep, simplex_weights
from tests.conftest import Stop, needs_cranfield, needs_scifact, stop_after

METRICS = ["nDCG@10", "R@100", "RR@10", "AP@1000", "P@10"]


def test_simplex_weights_exact():
    w = simplex_weights(3, 0.1)
    assert len(w) == 66 and all(abs(sum(x) - 1) < 1e-12 for x in w)
    assert (0.7, 0.3, 0.0) in w and (0.0, 0.0, 1.0) in w
    grid = make_grid(3, k=(60,), weight_step=0.1)
    assert len(grid) == 67 and grid[-1].weights == (1 / 3, 1 / 3, 1 / 3)  # the default is on it
    assert len(make_grid(2, k=(60,), weight_step=0.5)) == 3  # (1,0), (.5,.5), (0,1): no extra


@needs_cranfield
def test_engine_matches_fuse_then_evaluate_cranfield(cranfield, run_of):
    runs = [run_of(cranfield, "bm25"), run_of(cranfield, "fts5")]
    qrels = cranfield.qrels("test")
    eng = FusionEngine(runs, qrels, METRICS)
    grid = make_grid(2, methods=("rrf", "convex", "combsum", "combmnz"), k=(1, 20, 60),
                     depth=(None, 10, (50, 5)), rank_base=(0, 1), norms=("minmax", "zscore", "tmm"),
                     missing=("zero", "min"), weight_step=0.25)
    grid += [Config("rrf", (60.0, 60.0), (1.0, 1.0), (None, None), 1, limit=7)]
    pq = eng.evaluate(grid)
    rng = np.random.default_rng(1)
    picks = list(rng.choice(len(grid), 14, replace=False)) + [len(grid) - 1]
    for i in picks:  # per query, bit for bit: the kernel sums as trec_eval does
        ref = evaluate_per_query(grid[i].fuse(runs), qrels, METRICS).to_numpy().T
        assert np.array_equal(pq[i], ref), grid[i]


@needs_scifact
def test_engine_single_run_config_equals_run(scifact, run_of):
    run = run_of(scifact, "bm25")
    eng = FusionEngine([run, run_of(scifact, "fts5")], scifact.qrels("test"), METRICS)
    pq = eng.evaluate([Config("rrf", (60.0, 60.0), (1.0, 0.0), (None, None), 1)])
    ref = evaluate(run, scifact.qrels("test"), METRICS)
    assert [pq[0, m].mean() for m in range(5)] == pytest.approx([ref[m] for m in METRICS], abs=1e-12)


@needs_cranfield
def test_run_sweep_table_and_reuse(cranfield, run_of, tmp_path):
    runs = [run_of(cranfield, "bm25"), run_of(cranfield, "fts5")]
    eng = FusionEngine(runs, cranfield.qrels("test"), METRICS)
    grid = make_grid(2, k=(10, 60), weight_step=0.5)
    t1 = run_sweep(eng, grid, tmp_path, chunk_size=2, progress=False)
    assert len(t1) == len(grid) and list(t1.config_id) == list(range(len(grid)))
    assert {"method", "label", "k_bm25", "w_fts5", "nDCG@10", "per_query"} <= set(t1.columns)
    assert len(t1.per_query.iloc[0]) == 225
    assert not (tmp_path / "sweep.parts").exists()
    t2 = run_sweep(eng, grid, tmp_path, chunk_size=2, progress=False)
    pd.testing.assert_frame_equal(t1, t2)


SCRIPT = """
import sys
from rrfbench import load_dataset
from rrfbench.retrievers import cached_run, make_retriever
from rrfbench.fusion.sweep import FusionEngine, make_grid, run_sweep
ds = load_dataset("cranfield")
runs = [cached_run(make_retriever(s), ds, "test", 1000).run for s in ("bm25", "fts5")]
eng = FusionEngine(runs, ds.qrels("test"), ["nDCG@10", "R@100"])
grid = make_grid(2, k=(1, 5, 10, 20, 40, 60, 100, 200), weight_step=0.1)
run_sweep(eng, grid, sys.argv[1], chunk_size=8, progress=False)
"""


@needs_cranfield
def test_killed_sweep_resumes_without_recomputing(cranfield, run_of, tmp_path):
    run_of(cranfield, "bm25"), run_of(cranfield, "fts5")  # make sure the runs are cached
    env = dict(os.environ, RRFBENCH_SWEEP_CHUNK_DELAY="0.4")
    out = tmp_path / "killed"
    proc = subprocess.Popen([sys.executable, "-c", SCRIPT, str(out)], env=env)
    parts = out / "sweep.parts"
    deadline = time.time() + 240
    while time.time() < deadline and len(list(parts.glob("chunk-*.parquet"))) < 3:
        time.sleep(0.2)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    done = sorted(parts.glob("chunk-*.parquet"))
    assert len(done) >= 3 and not (out / "sweep.parquet").exists()
    stamps = {p.name: p.stat().st_mtime_ns for p in done}
    # resume: finished chunks are read, not recomputed (their files are untouched until the
    # final table is written; the hook below records which chunks were computed)
    env["RRFBENCH_SWEEP_CHUNK_DELAY"] = "0"
    code = subprocess.run([sys.executable, "-c", SCRIPT.replace(
        "run_sweep(eng", "import rrfbench.fusion.sweep as S\n"
        "orig = S.FusionEngine.table\n"
        "def table(self, configs, start_id=0):\n"
        "    open(sys.argv[1] + '.log', 'a').write(f'{start_id}\\n')\n"
        "    return orig(self, configs, start_id)\n"
        "S.FusionEngine.table = table\n"
        "run_sweep(eng"), str(out)], env=env).returncode
    assert code == 0
    computed = {int(x) // 8 for x in open(str(out) + ".log").read().split()}
    finished = {int(n[6:11]) for n in stamps}
    assert computed and not (computed & finished)
    resumed = pd.read_parquet(out / "sweep.parquet")
    full = tmp_path / "full"
    subprocess.run([sys.executable, "-c", SCRIPT, str(full)], check=True,
                   env=dict(os.environ, RRFBENCH_SWEEP_CHUNK_DELAY="0"))
    pd.testing.assert_frame_equal(resumed, pd.read_parquet(full / "sweep.parquet"))


def test_labels_for_per_run_k_and_depths():
    grid = make_grid(2, k=(10, 60), per_run_k=True, weights=[(1, 1)], depth=(None, (20, 40)),
                     rank_base=(0,))
    labels = {c.label(["a", "b"]) for c in grid}
    assert "rrf k=10,60 w=1,1 base=0" in labels
    assert "rrf k=60 w=1,1 depth=20,40 base=0" in labels


def test_changed_run_invalidates_finished_sweep(tmp_path):
    from rrfbench.core.runs import Qrels, Run

    qrels = Qrels.from_dict({"q": {"b": 1}})
    a = Run.from_dict({"q": {"a": 2.0, "b": 1.0}}, "x")
    b = Run.from_dict({"q": {"b": 2.0, "a": 1.0}}, "y")
    grid = make_grid(2, k=(60,), weights=[(1, 0), (0, 1)])
    t1 = run_sweep(FusionEngine([a, b], qrels, ["RR@10"]), grid, tmp_path, progress=False)
    a2 = Run.from_dict({"q": {"a": 1.0, "b": 2.0}}, "x")  # same size, different content
    t2 = run_sweep(FusionEngine([a2, b], qrels, ["RR@10"]), grid, tmp_path, progress=False)
    assert t1["RR@10"].tolist() == [0.5, 1.0] and t2["RR@10"].tolist() == [1.0, 1.0]


@pytest.mark.parametrize("kwargs, msg", [
    ({"methods": ("rrf", "foo")}, "method: 'foo' is not one of"),
    ({"norms": ("l2",), "methods": ("convex",)}, "norm: 'l2' is not one of"),
    ({"k": ()}, "k: give at least one value"),
    ({"k": (1, -2)}, "k: -2 must be >= 0"),
    ({"weights": [(1, 2, 3)]}, "has 3 values; expected one per run"),
    ({"weights": [(0, 0)]}, "every weight vector is all zeros"),
    ({"weight_step": 0.3}, "weight step: 0.3 must divide 1"),
    ({"depth": ((10, 20, 30),)}, "depth: expected one value per run"),
    ({"rank_base": (2,)}, "rank_base: 2 is not one of"),
])
def test_make_grid_refuses_bad_values(kwargs, msg):
    from rrfbench.core.errors import InputError

    with pytest.raises(InputError, match=msg):
        make_grid(2, **kwargs)


def test_config_json_roundtrip_and_check():
    from rrfbench.core.errors import InputError

    c = Config("rrf", (10.0, 20.0), (0.5, 0.5), (None, 5), 0, None, None, 7)
    assert Config.from_json({**c.to_json(), "label": "x"}) == c
    with pytest.raises(InputError, match="unknown configuration fields"):
        Config.from_json({"method": "rrf", "alpha": 1})
    with pytest.raises(InputError, match="expected one value per run"):
        c.check(3)


def test_engine_tmm_uses_declared_floors_and_refuses_without():
    from rrfbench.core.errors import InputError
    from rrfbench.core.runs import Qrels, Run

    qrels = Qrels.from_dict({"q": {"b": 1}})
    a = Run.from_dict({"q": {"a": 0.9, "b": 0.1}}, "dense")
    b = Run.from_dict({"q": {"b": 2.0, "a": 1.0}}, "bm25")
    tmm = Config("convex", (0.0, 0.0), (0.5, 0.5), (None, None), 1, "tmm", "zero")
    with pytest.raises(InputError, match="theoretical minimum"):
        FusionEngine([a, b], qrels, ["RR@10"]).evaluate([tmm])
    eng = FusionEngine([a.with_meta(score_floor=-1.0), b.with_meta(score_floor=0.0)], qrels,
                       ["RR@10"])
    # a: (0.9+1)/1.9 * .5 + 0.5 * 1/2 = 0.75 ; b: (0.1+1)/1.9 * .5 + 0.5 = 0.789...
    assert eng.evaluate([tmm])[0, 0, 0] == 1.0


def test_judged_lists_equal_evaluate_per_query_on_edge_cases():
    """Graded gains, a grade-0 judgment, a judged query without a list, a list without a
    relevant document, a list shorter than P@10's cut-off, an unjudged query: the numbers of
    ir_measures on a run holding the same lists."""
    from rrfbench.core.evaluation import evaluate_per_query
    from rrfbench.core.runs import Qrels, Run
    from rrfbench.fusion.functions import order_to_scores
    from rrfbench.fusion.sweep import JudgedLists

    qrels = Qrels.from_dict({"q1": {"a": 2, "b": 1, "z": 0, "far": 1}, "q2": {"c": 1},
                             "q3": {"d": 3}, "q4": {"x": 0}})
    lists = {"q1": ["z", "b", "n1", "a"] + [f"n{i}" for i in range(2, 120)] + ["far"],
             "q2": ["n1", "n2"], "q4": ["x"], "unjudged": ["a"]}
    rows = [(q, d, s) for q, docs in lists.items()
            for d, s in zip(docs, order_to_scores([1.0] * len(docs)), strict=True)]
    run = Run(pd.DataFrame(rows, columns=["qid", "docid", "score"]), "r")
    metrics = ["nDCG@10", "nDCG@1000", "R@100", "R@1000", "RR@10", "AP@1000", "P@10"]
    want = evaluate_per_query(run, qrels, metrics).to_numpy().T
    got = JudgedLists(qrels, metrics).score(lists)
    assert got.shape == want.shape == (len(metrics), 4)
    assert np.array_equal(got, want)
    assert got[:, 0].min() > 0 and not got[:, 1:].any()  # q2 and q4 score 0, q3 has no list


@needs_cranfield
@pytest.mark.parametrize("name", ["nexusai", "titan", "ai-memory", "zeus"])
def test_preset_grid_scores_equal_run_then_evaluate(cranfield, name):
    """tuning.preset_matrix scores a system's lists directly; on cranfield, for a spread of
    each system's grid, the values are bit for bit those of building its run and evaluating it
    with ir_measures (every metric family): tuning by the fast path changes no number."""
    from rrfbench.core.evaluation import evaluate_per_query
    from rrfbench.systems.presets import get_preset
    from rrfbench.tuning.holdout import preset_matrix
    from rrfbench.workflows.dataset import preset_runs

    p = get_preset(name)
    q = cranfield.qrels("test")
    q = q.subset(q.qids[::3])
    runs = {role: run.subset(q.qids) for role, run in preset_runs(p, cranfield, "test").items()}
    grid = p.grid()
    grid = grid[:: max(1, len(grid) // 4)][:4] + [p.defaults()]
    metrics = ["nDCG@10", "R@100", "RR@10", "AP@1000", "P@10"]
    got = preset_matrix(p, runs, q, grid, metrics)
    for i, params in enumerate(grid):
        want = evaluate_per_query(p.run(runs, params), q, metrics).to_numpy().T
        assert np.array_equal(got[i], want), params  # the very floats trec_eval gives
    assert len({round(got[i, 0].mean(), 12) for i in range(len(grid))}) > 1


# --------------------------------------------------------------------------- synthetic oracle
def _synthetic(seed: int = 7):
    """Three runs over 24 judged queries and one unjudged: overlapping candidate pools, score
    ties, a run that misses some queries, graded and grade-0 judgments, a judged query no run
    answers. Scores are floats with few distinct values, so fused ties happen."""
    from rrfbench.core.runs import Qrels, Run

    rng = np.random.default_rng(seed)
    docs = [f"d{i:03d}" for i in range(60)]
    qrels = {}
    for q in range(24):
        picks = rng.choice(60, size=int(rng.integers(1, 7)), replace=False)
        qrels[f"q{q}"] = {docs[i]: int(g) for i, g in zip(picks, rng.integers(0, 3, len(picks)),
                                                             strict=True)}
    qrels["q_none"] = {docs[0]: 1}  # judged, no run answers it
    runs = []
    for name, floor, size in (("bm25", 0.0, 30), ("dense", -1.0, 40), ("fts5", 0.0, 12)):
        rows = []
        for q in [*(f"q{i}" for i in range(24)), "q_unjudged"]:
            if name == "fts5" and q in ("q3", "q4"):
                continue  # this run has nothing for these queries
            picks = rng.choice(60, size=size, replace=False)
            scores = np.round(rng.uniform(0.1 if floor == 0 else -0.9, 1.0, size), 1)
            rows += [(q, docs[i], float(s)) for i, s in zip(picks, scores, strict=True)]
        runs.append(Run(pd.DataFrame(rows, columns=["qid", "docid", "score"]), name)
                    .with_meta(score_floor=floor))
    return runs, Qrels.from_dict(qrels)


SYNTH_METRICS = ["nDCG@5", "nDCG@10", "R@20", "RR@10", "AP@1000", "P@5"]


def _synthetic_grid(n_runs: int) -> list[Config]:
    grid = make_grid(n_runs, methods=("rrf",), k=(0.5, 1, 60), weight_step=0.5,
                     depth=(None, (5, 10, 3)[:n_runs]), rank_base=(0, 1), limit=None)
    grid += make_grid(n_runs, methods=("rrf",), k=(2,), per_run_k=True, weights=[(1,) * n_runs],
                      limit=8)
    grid += make_grid(n_runs, methods=("convex", "combsum", "combmnz"),
                      norms=("minmax", "zscore", "tmm", "none"),
                      missing=("zero", "min"), weight_step=0.5)
    return grid


def test_engine_equals_fuse_then_trec_eval_on_synthetic_runs():
    """The engine's per-query values are trec_eval's on the fused run, bit for bit, for every
    family, normalisation, missing rule, depth, rank base, per-run k and limit (synthetic
    runs with ties, gaps and graded judgments)."""
    runs, qrels = _synthetic()
    grid = _synthetic_grid(3)
    assert len(grid) > 150
    eng = FusionEngine(runs, qrels, SYNTH_METRICS)
    got = eng.evaluate(grid)
    assert got.shape == (len(grid), len(SYNTH_METRICS), 25)
    for i, c in enumerate(grid):
        want = evaluate_per_query(c.fuse(runs), qrels, SYNTH_METRICS).loc[eng.qids].to_numpy().T
        assert np.array_equal(got[i], want), c.label(eng.names)
    assert not got[:, :, eng.qids.index("q_none")].any()


def test_engine_table_subset_and_sweep_on_synthetic_runs(tmp_path):
    runs, qrels = _synthetic()
    grid = _synthetic_grid(3)[:40]
    eng = FusionEngine(runs, qrels, SYNTH_METRICS)
    table = eng.table(grid, start_id=5)
    pq = eng.evaluate(grid)
    assert table.config_id.tolist() == list(range(5, 45))
    assert np.array_equal(table["nDCG@5"].to_numpy(), pq[:, 0].mean(axis=1))
    assert np.array_equal(table["P@5"].to_numpy(), pq[:, 5].mean(axis=1))
    assert [list(x) for x in table.per_query] == pq[:, 0].tolist()
    assert table.label.tolist() == [c.label(eng.names) for c in grid]
    sub = eng.subset(["q1", "q5", "q_none"])
    assert sub.qids == ["q1", "q5", "q_none"]
    full = dict(zip(eng.qids, pq[:, 1].T, strict=True))
    assert np.array_equal(sub.evaluate(grid)[:, 1], np.stack([full[q] for q in sub.qids], 1))
    swept = run_sweep(eng, grid, tmp_path / "s", chunk_size=7, progress=False)
    pd.testing.assert_frame_equal(swept.drop(columns="grid_hash", errors="ignore"),
                                  eng.table(grid), check_dtype=False)
    assert not (tmp_path / "s" / "sweep.parts").exists()
    again = run_sweep(eng, grid, tmp_path / "s", chunk_size=7, progress=False)
    pd.testing.assert_frame_equal(again, swept)
    assert run_sweep(eng, grid, progress=False)[SYNTH_METRICS].equals(table[SYNTH_METRICS])


def test_configs_from_table_and_family_labels_roundtrip():
    from rrfbench.fusion.sweep import configs_from_table, family_labels

    runs, qrels = _synthetic()
    grid = _synthetic_grid(3)
    eng = FusionEngine(runs, qrels, ["RR@10"])
    table = eng.table(grid)
    assert configs_from_table(table, eng.names) == grid
    fam = family_labels(table)
    assert set(fam) == {"rrf"} | {f"{m} {n} /{x}" for m in ("convex", "combsum", "combmnz")
                                  for n in ("minmax", "zscore", "tmm", "none")
                                  for x in ("zero", "min")}


def test_engine_refuses_bad_runs_and_configs():
    from rrfbench.core.errors import InputError
    from rrfbench.core.runs import Qrels, Run

    qrels = Qrels.from_dict({"q": {"a": 1}})
    a = Run.from_dict({"q": {"a": 1.0}}, "x")
    with pytest.raises(InputError, match="^the sweep engine needs at least one run$"):
        FusionEngine([], qrels)
    with pytest.raises(InputError, match=r"runs need distinct names; got \['x', 'x'\]"):
        FusionEngine([a, a], qrels)
    eng = FusionEngine([a, Run.from_dict({"q": {"a": 1.0}}, "y")], qrels, ["RR@10"])
    for bad, msg in ((Config("rrf", (60.0, 60.0), (0.0, 0.0), (None, None)),
                      "at least one run needs a weight > 0"),
                     (Config("rrf", (60.0,), (1.0,), (None,)), "expected one value per run"),
                     (Config("convex", (0.0, 0.0), (1.0, 1.0), (5, None), 1, "minmax", "zero"),
                      "score fusion uses each run's full depth"),
                     (Config("rrf", (0.0, 60.0), (1.0, 1.0), (None, None), 0),
                      "k: 0"),
                     (Config("rrf", (60.0, 60.0), (1.0, 1.0), (None, None), 1, limit=-3),
                      "limit")):
        with pytest.raises(InputError, match=msg):
            eng.evaluate([bad])


def test_config_labels_and_rows():
    names = ["bm25", "dense"]
    c = Config("rrf", (60.0, 60.0), (0.7, 0.3), (None, None))
    assert c.label(names) == "rrf k=60 w=0.7,0.3"
    assert Config("rrf", (10.0, 60.0), (1.0, 1.0), (20, None), 0).label(names) == \
        "rrf k=10,60 w=1,1 depth=20,None base=0"
    assert Config("convex", (0.0, 0.0), (0.5, 0.5), (None, None), 1, "zscore", "min").label(
        names) == "convex zscore w=0.5,0.5 missing=min"
    assert Config("combmnz", (0.0, 0.0), (1.0, 1.0), (None, None), 1, "minmax", "zero").label(
        names) == "combmnz minmax missing=zero"
    row = Config("rrf", (10.0, 60.0), (1.0, 0.5), (20, None), 0, limit=9).row(names)
    assert row == {"method": "rrf", "label": "rrf k=10,60 w=1,0.5 depth=20,None base=0",
                   "rank_base": 0, "norm": "", "missing": "", "limit": 9, "k_bm25": 10.0,
                   "w_bm25": 1.0, "depth_bm25": 20, "k_dense": 60.0, "w_dense": 0.5,
                   "depth_dense": 0}
    row = Config("convex", (0.0, 0.0), (0.5, 0.5), (None, None), 1, "tmm", "min").row(names)
    assert (row["norm"], row["missing"], row["limit"]) == ("tmm", "min", 0)


def test_judged_lists_keep_scoring_after_a_query_without_list_or_hits():
    """Queries without a list or without a relevant document in it, early in the query order,
    are followed by queries that score: every query is scored (the synthetic fts5 run lacks
    q3 and q4; q1's list is made to miss every relevant document)."""
    from rrfbench.fusion.sweep import JudgedLists

    runs, qrels = _synthetic()
    fts5 = runs[2]
    lists = {q: g.docid.tolist() for q, g in fts5.df.groupby("qid", sort=False)}
    rel = set(qrels.df[(qrels.df.qid == "q1") & (qrels.df.relevance > 0)].docid)
    lists["q1"] = [d for d in lists["q1"] if d not in rel]
    kept = fts5.df[fts5.df.apply(lambda r: r.docid in lists.get(r.qid, ()), axis=1)]
    from rrfbench.core.runs import Run

    want = evaluate_per_query(Run(kept[["qid", "docid", "score"]], "f"), qrels, SYNTH_METRICS)
    got = JudgedLists(qrels, SYNTH_METRICS).score(lists)
    assert np.array_equal(got, want.loc[qrels.qids].to_numpy().T)
    after = max(qrels.qids.index(q) for q in ("q1", "q3", "q4"))
    assert got[:, after + 1:].sum() > 0 and not got[:, qrels.qids.index("q1")].any()


def test_warm_up_compiles_exactly_the_signatures_a_sweep_calls():
    """``make`` compiles the kernels into numba's cache once (``rrfbench.fusion.kernels.compile_all``);
    that is only worth it if the types are the ones real work calls them with. After it, a
    sweep over every family and a JudgedLists scoring add no signature of their own (a dtype
    drift in the engine would add a second one, and every fresh process would compile again)."""
    from rrfbench.fusion import kernels as K
    from rrfbench.fusion.sweep import JudgedLists

    K.compile_all()
    warm = {k: list(k.signatures) for k in (K.sweep_kernel, K._metrics_for_query)}
    runs, qrels = _synthetic()
    FusionEngine(runs, qrels, SYNTH_METRICS).evaluate(_synthetic_grid(3))
    lists = {q: g.docid.tolist() for q, g in runs[0].df.groupby("qid", sort=False)}
    assert JudgedLists(qrels, SYNTH_METRICS).score(lists).any()
    for kernel, sigs in warm.items():
        assert len(sigs) == 1 and kernel.signatures == sigs, kernel.__name__


@pytest.mark.parametrize("kwargs, message", [
    ({"methods": ("rrf", "foo")}, "method: 'foo' is not one of rrf, convex, combsum, combmnz"),
    ({"norms": ("l2",), "methods": ("convex",)}, "norm: 'l2' is not one of minmax, zscore, tmm, none"),
    ({"missing": ("nan",), "methods": ("convex",)}, "missing: 'nan' is not one of zero, min"),
    ({"k": ()}, "k: give at least one value"),
    ({"k": (1, -2)}, "k: -2 must be >= 0"),
    ({"k": (0,), "rank_base": (0,)}, "k: 0 must be > 0"),
    ({"weights": [(1, 2, 3)]}, "weights: 1,2,3 has 3 values; expected one per run (2)"),
    ({"weights": [(0, 0)]}, "weights: every weight vector is all zeros"),
    ({"weights": [(1, float("nan"))]}, "weights: nan is not finite"),
    ({"weight_step": 0.3}, "weight step: 0.3 must divide 1 (e.g. 0.1, 0.25, 0.5)"),
    ({"weight_step": 0}, "weight step: 0 must divide 1 (e.g. 0.1, 0.25, 0.5)"),
    ({"weight_step": 1.5}, "weight step: 1.5 must divide 1 (e.g. 0.1, 0.25, 0.5)"),
    ({"depth": ((10, 20, 30),)}, "depth: expected one value per run (2), got 3"),
    ({"depth": (0,)}, "depth: 0 must be > 0"),
    ({"depth": (2.5,)}, "depth: 2.5 must be a whole number"),
    ({"rank_base": (2,)}, "rank_base: 2 is not one of 0, 1"),
])
def test_make_grid_refusals_are_exact(kwargs, message):
    from rrfbench.core.errors import InputError

    with pytest.raises(InputError) as ei:
        make_grid(2, **kwargs)
    assert str(ei.value) == message


@pytest.mark.parametrize("config, message", [
    (Config("rrf", (60.0, 60.0), (0.0, 0.0), (None, None)),
     "weights: at least one run needs a weight > 0"),
    (Config("rrf", (60.0,), (1.0,), (None,)), "k: expected one value per run (2), got 1"),
    (Config("rrf", (60.0, 60.0), (1.0,), (None, None)),
     "weights: expected one value per run (2), got 1"),
    (Config("rrf", (60.0, 60.0), (1.0, 1.0), (None,)),
     "depth: expected one value per run (2), got 1"),
    (Config("convex", (0.0, 0.0), (1.0, 1.0), (5, None), 1, "minmax", "zero"),
     "depth: score fusion uses each run's full depth in sweeps"),
    (Config("rrf", (0.0, 60.0), (1.0, 1.0), (None, None), 0), "k: 0.0 must be > 0"),
    (Config("rrf", (60.0, 60.0), (1.0, 1.0), (None, None), 1, limit=-3), "limit: -3 must be > 0"),
    (Config("rrf", (60.0, 60.0), (-1.0, 1.0), (None, None)), "weights: -1.0 must be >= 0"),
    (Config("rrf", (60.0, 60.0), (1.0, 1.0), (0, None)), "depth: 0 must be > 0"),
    (Config("foo", (60.0, 60.0), (1.0, 1.0), (None, None)),
     "method: 'foo' is not one of rrf, convex, combsum, combmnz"),
    (Config("convex", (0.0, 0.0), (1.0, 1.0), (None, None), 1, "l2", "zero"),
     "norm: 'l2' is not one of minmax, zscore, tmm, none"),
    (Config("convex", (0.0, 0.0), (1.0, 1.0), (None, None), 1, "minmax", "nan"),
     "missing: 'nan' is not one of zero, min"),
    (Config("rrf", (60.0, 60.0), (1.0, 1.0), (None, None), 3), "rank_base: 3 is not one of 0, 1"),
])
def test_config_refusals_are_exact(config, message):
    from rrfbench.core.errors import InputError
    from rrfbench.core.runs import Qrels, Run

    qrels = Qrels.from_dict({"q": {"a": 1}})
    runs = [Run.from_dict({"q": {"a": 1.0}}, "x"), Run.from_dict({"q": {"a": 1.0}}, "y")]
    with pytest.raises(InputError) as ei:
        FusionEngine(runs, qrels, ["RR@10"]).evaluate([config])
    assert str(ei.value) == message
    with pytest.raises(InputError) as ei:
        config.check(2)
    assert str(ei.value) == message


def test_sweep_writes_reuses_and_resumes_on_synthetic_runs(tmp_path, monkeypatch):
    """``run_sweep`` with an output folder (nested, created): writes ``<name>.parquet`` with
    the grid hash and removes its parts; a second call reads it back without evaluating; a
    sweep stopped after two chunks resumes with only the missing ones; parts of another grid
    are discarded; with ``map_chunks`` and no folder it still returns the same table."""
    from rrfbench.core.parallel import local_chunks
    from rrfbench.fusion.sweep import grid_hash

    runs, qrels = _synthetic()
    grid = _synthetic_grid(3)[:30]
    eng = FusionEngine(runs, qrels, SYNTH_METRICS)
    want = eng.table(grid)
    out = tmp_path / "a" / "b"
    seen = []
    table = run_sweep(eng, grid, out, chunk_size=7, progress=False, name="mine",
                      on_chunk=seen.append)
    assert (out / "mine.parquet").exists() and not (out / "mine.parts").exists()
    assert seen == [0, 1, 2, 3, 4] and (table.grid_hash == grid_hash(eng, grid)).all()
    pd.testing.assert_frame_equal(table.drop(columns="grid_hash"), want, check_dtype=False)
    calls = []
    monkeypatch.setattr(FusionEngine, "evaluate", lambda self, c: calls.append(1) / 0)
    pd.testing.assert_frame_equal(run_sweep(eng, grid, out, chunk_size=7, progress=False,
                                            name="mine"), table)
    assert calls == []
    monkeypatch.undo()

    stop_after_two = stop_after(2)

    with pytest.raises(Stop):
        run_sweep(eng, grid, tmp_path / "r", chunk_size=7, progress=False, on_chunk=stop_after_two)
    parts = tmp_path / "r" / "sweep.parts"
    assert sorted(p.name for p in parts.glob("chunk-*.parquet")) == ["chunk-00000.parquet",
                                                                   "chunk-00001.parquet"]
    assert json_hash(parts) == grid_hash(eng, grid)
    done = []
    resumed = run_sweep(eng, grid, tmp_path / "r", chunk_size=7, progress=False,
                        on_chunk=done.append)
    assert done == [2, 3, 4]
    pd.testing.assert_frame_equal(resumed, table)
    with pytest.raises(Stop):
        run_sweep(eng, grid, tmp_path / "g", chunk_size=7, progress=False, on_chunk=stop_after_two)
    other = grid[:14] + grid[15:] + grid[14:15]  # another grid (order): old parts are discarded
    done = []
    t2 = run_sweep(eng, other, tmp_path / "g", chunk_size=7, progress=False, on_chunk=done.append)
    assert done == [0, 1, 2, 3, 4] and t2.label.tolist() == [c.label(eng.names) for c in other]
    via_map = run_sweep(eng, grid, None, chunk_size=7, progress=False, map_chunks=local_chunks)
    pd.testing.assert_frame_equal(via_map, table)


def json_hash(parts):
    import json

    return json.loads((parts / "grid.json").read_text())["hash"]


def test_kernel_warm_up_refuses_arguments():
    """``python -m rrfbench.fusion.kernels`` (make's build step) takes none: one line, exit 2."""
    import subprocess
    import sys

    p = subprocess.run([sys.executable, "-m", "rrfbench.fusion.kernels", "--bogus"],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 2 and p.stdout == ""
    assert p.stderr.strip().splitlines() == [
        "error: python -m rrfbench.fusion.kernels takes no arguments; got --bogus"]


class _Bars:
    """Stands in for :func:`rrfbench.core.progress.progress`: records each bar's arguments and the
    sizes it was advanced by."""

    def __init__(self):
        self.bars = []

    def __call__(self, **kwargs):
        bar = dict(kwargs, updates=[], closed=False)
        self.bars.append(bar)

        class Bar:
            def update(self, n):
                bar["updates"].append(n)

            def close(self):
                bar["closed"] = True
        return Bar()


def test_sweep_progress_counts_configurations_and_resumes_from_the_done_ones(tmp_path,
                                                                            monkeypatch):
    """The bar shows every configuration (``<name>: N configurations``, unit cfg), advances
    by each chunk's size, starts at the configurations already done when resuming, and is
    off with ``progress=False``; the parts folder records the grid; ``out=None`` with a
    ``map_chunks`` still reports progress, calls ``on_chunk`` and uses that map; the default
    chunk is 256 configurations; ``RRFBENCH_SWEEP_CHUNK_DELAY`` (for the kill tests) sleeps
    that long after each chunk."""
    import json

    from rrfbench.core.parallel import local_chunks
    from rrfbench.fusion import sweep as engine_module
    from rrfbench.fusion.sweep import grid_hash

    runs, qrels = _synthetic()
    grid = _synthetic_grid(3)[:23]
    eng = FusionEngine(runs, qrels, ["nDCG@10"])
    bars = _Bars()
    monkeypatch.setattr(engine_module, "progress_bar", bars)
    want = eng.table(grid)

    with pytest.raises(Stop):
        run_sweep(eng, grid, tmp_path / "r", chunk_size=7, on_chunk=stop_after(2))
    meta = json.loads((tmp_path / "r" / "sweep.parts" / "grid.json").read_text())
    assert meta == {"hash": grid_hash(eng, grid), "n_configs": 23, "chunk_size": 7}
    assert bars.bars[0] == {"total": 23, "desc": "sweep: 23 configurations", "unit": "cfg",
                            "initial": 0, "enabled": True, "updates": [7, 7], "closed": False}
    run_sweep(eng, grid, tmp_path / "r", chunk_size=7, name="sweep")
    assert bars.bars[1] == {"total": 23, "desc": "sweep: 23 configurations", "unit": "cfg",
                            "initial": 14, "enabled": True, "updates": [7, 2], "closed": True}
    run_sweep(eng, grid, tmp_path / "q", chunk_size=7, progress=False, name="quiet")
    assert bars.bars[2]["enabled"] is False and bars.bars[2]["updates"] == [7, 7, 7, 2]
    assert bars.bars[2]["desc"] == "quiet: 23 configurations"

    maps, seen = [], []

    def counting_map(engine, chunks, h):
        maps.append([i for i, _, _ in chunks])
        return local_chunks(engine, chunks, h)

    table = run_sweep(eng, grid, None, chunk_size=11, name="mapped", map_chunks=counting_map,
                      on_chunk=seen.append)  # 23 = 2 x 11 + 1: a last chunk of one
    assert maps == [[0, 1, 2]] and seen == [0, 1, 2]
    assert bars.bars[3]["desc"] == "mapped: 23 configurations" and bars.bars[3]["enabled"]
    assert bars.bars[3]["updates"] == [11, 11, 1]
    pd.testing.assert_frame_equal(table.drop(columns="grid_hash"), want, check_dtype=False)

    big = make_grid(3, methods=("rrf",), k=tuple(range(1, 31)), weight_step=0.25)[:300]
    assert len(big) == 300
    sleeps = []
    monkeypatch.setenv("RRFBENCH_SWEEP_CHUNK_DELAY", "0.25")
    monkeypatch.setattr(engine_module.time, "sleep", sleeps.append)
    run_sweep(FusionEngine(runs, qrels, ["nDCG@10"]), big, tmp_path / "big")
    assert bars.bars[4]["updates"] == [256, 44] and bars.bars[4]["enabled"] is True
    assert sleeps == [0.25, 0.25]


def test_make_grid_builds_exactly_the_configurations_asked_for():
    """Each family's configurations, field by field: the default grid (RRF k=60 on the 0.1
    simplex), shared vs per-run k, a step of exactly 1, and ``limit`` on every family."""
    import math

    from rrfbench.fusion.sweep import ideal_dcg, sorted_unique

    default = make_grid(2)
    assert default == [Config("rrf", (60.0, 60.0), w, (None, None), 1, None, None, None)
                       for w in simplex_weights(2, 0.1)]
    assert simplex_weights(2) == simplex_weights(2, 0.1) and len(default) == 11
    assert simplex_weights(2, 1 / 3) == [(0.0, 1.0), (0.3333333333, 0.6666666667),
                                         (0.6666666667, 0.3333333333), (1.0, 0.0)]
    shared = make_grid(2, k=(1, 60), weights=[(1, 1)])
    assert [c.k for c in shared] == [(1.0, 1.0), (60.0, 60.0)]
    per_run = make_grid(2, k=(1, 60), weights=[(1, 1)], per_run_k=True)
    assert [c.k for c in per_run] == [(1.0, 1.0), (1.0, 60.0), (60.0, 1.0), (60.0, 60.0)]
    assert [c.weights for c in make_grid(2, weight_step=1.0)] == [(0.0, 1.0), (1.0, 0.0),
                                                                  (0.5, 0.5)]
    grid = make_grid(2, methods=("rrf", "convex", "combsum", "combmnz"), weights=[(0.3, 0.7)],
                     norms=("minmax",), limit=7)
    assert grid == [
        Config("rrf", (60.0, 60.0), (0.3, 0.7), (None, None), 1, None, None, 7),
        Config("convex", (0.0, 0.0), (0.3, 0.7), (None, None), 1, "minmax", "zero", 7),
        Config("combsum", (0.0, 0.0), (1.0, 1.0), (None, None), 1, "minmax", "zero", 7),
        Config("combmnz", (0.0, 0.0), (1.0, 1.0), (None, None), 1, "minmax", "zero", 7)]

    assert sorted_unique(np.array([3, 1, 3, 2, 1, 3], np.int64)).tolist() == [1, 2, 3]
    assert sorted_unique(np.zeros(0, np.int64)).tolist() == []

    from rrfbench.core.metrics import parse_metrics

    rel = pd.DataFrame({"qid": ["a", "a", "c"], "docid": ["x", "y", "z"], "relevance": [1, 2, 1]})
    got = ideal_dcg(rel, ["a", "b", "c"], parse_metrics(["nDCG@10"]))
    assert got[:, 0].tolist() == [2 + 1 / math.log2(3), 0.0, 1.0]  # an unjudged query between


def test_configs_from_table_takes_run_names_that_are_no_identifiers():
    """A run named ``run-engine`` (a team's run file) or ``fts5-phrase``: its columns
    (``k_run-engine``) are no tuple field, and once made a tuple's fields they were lost."""
    from rrfbench.fusion.config import Config
    from rrfbench.fusion.sweep import configs_from_table

    names = ["run-engine", "fts5-phrase"]
    cfg = Config(method="rrf", k=(40.0, 60.0), weights=(0.3, 0.7), depth=(100, None),
                 rank_base=1, norm=None, missing=None, limit=None)
    assert configs_from_table(pd.DataFrame([cfg.row(names)]), names) == [cfg]
