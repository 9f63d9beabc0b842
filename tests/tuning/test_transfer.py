"""Transfer across collections: objectives, the one-standard-error rule, LOCO without leaks,
the verdict, and saved suite results applied anywhere."""

import json
import os
import shutil

import numpy as np
import pandas as pd
import pytest

from rrfbench.core.errors import InputError
from rrfbench.results.suite import TransferResult
from rrfbench.results.values import Protocol
from rrfbench.tuning.selection import neighbourhoods, objective_values, one_se_set, select
from rrfbench.tuning.stability import NOISE_SHIFT, _draw, _replicate_outcomes, stability
from rrfbench.tuning.suite_data import CollectionData
from rrfbench.tuning.transfer import transfer_result
from rrfbench.tuning.verdicts import VERDICTS, collection_outcomes, verdict_code
from tests.conftest import ROOT, needs_cranfield

HOLD = Protocol("holdout", "t", "e")


def coll(name, rows, default=None, n=4):
    """A collection whose tuning and evaluation values are ``rows`` (grid x queries)."""
    T = np.array([[v] * n if np.isscalar(v) else v for v in rows], dtype=float)
    d = np.full(n, 0.5) if default is None else np.asarray(default, dtype=float)
    return CollectionData(name, HOLD, T, T.copy(), d, d.copy(), [str(i) for i in range(n)])


def test_objectives_hand_computed():
    colls = [coll("c1", [.50, .70, .40]), coll("c2", [.50, .30, .60]), coll("c3", [.50, .60, .55])]
    assert objective_values(colls, "macro") == pytest.approx([.5, 1.6 / 3, 1.55 / 3])
    assert objective_values(colls, "worst") == pytest.approx([0.0, -0.2, -0.1])
    assert objective_values(colls, "meanrank") == pytest.approx([-7 / 3, -5 / 3, -2.0])
    assert [select(colls, o) for o in ("macro", "worst", "meanrank")] == [1, 0, 1]


def test_one_standard_error_rule_hand_computed():
    # g1 is best by macro mean (.525 vs .5) but within one paired standard error of g0, the
    # default (distance 0): se = sqrt((.0225/4) + (.0025/3/4)) / 2 = 0.0382 > gap 0.025
    c1 = coll("c1", [[.5] * 4, [.6, .4, .7, .4], [.3] * 4])
    c2 = coll("c2", [[.5] * 4, [.5, .55, .5, .55], [.3] * 4])
    tied, se = one_se_set([c1, c2], best=1)
    assert se[0] == pytest.approx(np.sqrt(0.0225 / 4 + 0.0025 / 3 / 4) / 2)
    assert tied.tolist() == [True, True, False]
    dist = np.array([0.0, 1.0, 2.0])
    assert select([c1, c2], "macro", "best", dist) == 1
    assert select([c1, c2], "macro", "1se", dist) == 0


NB_CONFIGS = [{"method": "rrf", "k": [1], "w": 0.0, "norm": None},
              {"method": "rrf", "k": [10], "w": 0.0, "norm": None},
              {"method": "rrf", "k": [60], "w": 0.0, "norm": None},
              {"method": "rrf", "k": [10], "w": 0.5, "norm": None},
              {"method": "convex", "k": [10], "w": 0.0, "norm": "zscore"},
              {"method": "convex", "k": [10], "w": 0.0, "norm": "tmm"}]


def test_neighbourhoods_hand_computed():
    # k ranks 1 -> 0, 10 -> 1, 60 -> 2; w ranks 0 -> 0, .5 -> 1: one step on each at most, the
    # same method and norm. The two convex points have no such neighbour: they take each other
    # (same numbers, one non-numeric setting apart)
    A = neighbourhoods(NB_CONFIGS).toarray()
    assert (A > 0).astype(int).tolist() == [[1, 1, 0, 1, 0, 0], [1, 1, 1, 1, 0, 0],
                                            [0, 1, 1, 1, 0, 0], [1, 1, 1, 1, 0, 0],
                                            [0, 0, 0, 0, 1, 1], [0, 0, 0, 0, 1, 1]]
    assert A.sum(axis=1) == pytest.approx(np.ones(6)) and A[0, 0] == pytest.approx(1 / 3)


def _neighbourhoods_by_hand(configs):
    """The rule of :func:`neighbourhoods`' docstring, pair by pair (no ranks, no chunks)."""
    flat = []
    for cfg in configs:
        items = []
        for key, v in cfg.items():
            if key != "label":
                for j, x in enumerate(v if isinstance(v, list | tuple) else [v]):
                    numeric = isinstance(x, int | float) and not isinstance(x, bool)
                    items.append((f"{key}[{j}]{'' if numeric else '?'}", x, numeric))
        flat.append(items)
    shape = [tuple(n for n, _, _ in f) for f in flat]

    values = {(shape[i], p): sorted({flat[m][p][1] for m in range(len(flat))
                                     if shape[m] == shape[i]})
              for i in range(len(flat)) for p, item in enumerate(flat[i]) if item[2]}

    def steps(i, j):
        return [abs(values[shape[i], p].index(x) - values[shape[i], p].index(flat[j][p][1]))
                for p, (_, x, numeric) in enumerate(flat[i]) if numeric]

    def differ(i, j):
        return sum(repr(a[1]) != repr(b[1]) for a, b in zip(flat[i], flat[j], strict=True)
                   if not a[2])

    A = np.zeros((len(configs), len(configs)))
    for i in range(len(configs)):
        same = [j for j in range(len(configs)) if shape[j] == shape[i]]
        near = [j for j in same if max(steps(i, j), default=0) <= 1 and differ(i, j) == 0]
        if near == [i]:
            near += [j for j in same if max(steps(i, j), default=0) == 0 and differ(i, j) == 1]
        A[i, near] = 1 / len(near)
    return A


@pytest.mark.parametrize("configs", [
    # a label first, distinct per point: it is not a setting (neither skipped as the end of
    # the settings nor compared as one)
    [{"label": f"p{i}", **c} for i, c in enumerate(NB_CONFIGS)],
    # other names, the same numbers: never neighbours of the rrf points
    NB_CONFIGS + [{"method": "rrf", "kk": [10], "w": 0.0, "norm": None},
                  {"method": "rrf", "k": [10], "ww": 0.0, "norm": None},
                  {"family": "rrf", "k": [10], "w": 0.0, "norm": None}],
    # nothing numeric varies (combsum, combmnz): each takes the one-setting-apart points
    [{"method": m, "norm": n} for m in ("combsum", "combmnz") for n in ("minmax", "zscore")],
    # nothing but a label
    [{"label": "a"}, {"label": "b"}, {"label": "c"}],
    # a point with a numeric neighbour does not also take the one-setting-apart point
    [{"method": "rrf", "k": 10}, {"method": "rrf", "k": 20}, {"method": "isr", "k": 10}],
    # more points than one block of 256, with an uneven k grid
    [{"method": "rrf", "k": k, "w": w / 20} for k in (1, 2, 5, 10, 20, 40, 60, 80, 100, 200,
                                                      400, 800, 1600, 3200)
     for w in range(21)],
], ids=["label", "names", "no-numbers", "only-label", "numeric-first", "big-grid"])
def test_neighbourhoods_match_the_rule_pair_by_pair(configs):
    A = neighbourhoods(configs)
    assert A.shape == (len(configs), len(configs))
    np.testing.assert_allclose(A.toarray(), _neighbourhoods_by_hand(configs), atol=0)


def test_neighbourhood_rule_hand_computed():
    # g1 is best (.6); within one standard error (.1155 for g0: d = .3, -.1, .3, -.1): g0, g1,
    # g3, g4. Neighbourhood means: g0 (.5+.6+.58)/3 = .56, g1 = g3 = (.5+.6+.2+.58)/4 = .47,
    # g4 (.59+.1)/2 = .345 -> nbr takes g0, the middle of the plateau, not the peak g1
    c = coll("c", [.5, [.8, .4, .8, .4], .2, .58, .59, .1])
    tied, _ = one_se_set([c], best=1)
    assert tied.tolist() == [True, True, False, True, True, False]
    A = neighbourhoods(NB_CONFIGS)
    assert (A @ objective_values([c], "macro"))[[0, 1, 3, 4]] == pytest.approx(
        [.56, .47, .47, .345])
    assert select([c], "macro", "best") == 1
    assert select([c], "macro", "nbr", neighbours=A) == 0
    assert select([c], "macro", "nbr") == 1          # no neighbourhoods: the best of the tied


def _result(colls, **kw):
    labels = [f"g{i}" for i in range(colls[0].T.shape[0])]
    configs = [{"g": i} for i in range(len(labels))]
    return transfer_result("s", colls, family="fusion", metric="m", labels=labels,
                           configs=configs, default={"config": {"g": -1}, "label": "default"},
                           **kw)


def test_loco_never_sees_the_held_out_collection():
    rng = np.random.default_rng(0)
    colls = [coll(f"c{i}", list(rng.random((5, 20))), default=rng.random(20), n=20)
             for i in range(4)]
    before = _result(colls)
    poisoned = coll("c2", [[0.0] * 20] * 4 + [[1.0] * 20], default=np.zeros(20), n=20)
    after = _result(colls[:2] + [poisoned] + colls[3:])
    assert after.loco[2]["selected"] == before.loco[2]["selected"]   # chosen on the others
    assert after.loco[2]["loco"]["value"] != before.loco[2]["loco"]["value"]
    assert after.loco[2]["in_domain"]["label"] == "g4"               # in-domain does see it


def test_verdicts():
    # a big, consistent gain everywhere: significant over queries and over collections
    up = [coll(f"c{i}", [[.5] * 30, list(.9 + .01 * np.random.default_rng(i).random(30))],
               n=30) for i in range(5)]
    assert _result(up).verdict == "transfers"
    # a tiny gain on few queries: not significant -> keep the default
    flat = [coll(f"c{i}", [[.5] * 30, [.5] * 29 + [.51]], n=30) for i in range(3)]
    r = _result(flat, decision="significance")
    assert r.verdict == "no evidence that it transfers"
    assert r.recommended["label"] == "default" and r.label == "g1"
    # the rule rrfbench uses takes the selection whatever the verdict says
    assert _result(flat).recommended["label"] == "g1" == _result(flat).label
    # a gain on two collections and a significant loss on a third: no evidence
    mixed = up[:2] + [coll("bad", [[.5] * 30, [.1] * 30], n=30)]
    assert _result(mixed).verdict == "no evidence that it transfers"
    assert _result(mixed).summary["losses"] == 1


def test_holm_lets_a_p_003_loss_among_six_pass_but_not_p_0001():
    # three clear wins, two ties, one loss. Holm: sorted p x (6, 5, 4, 3, 2, 1), running max.
    # loss p=.03 is 4th: .03 x 3 = .09 -> not significant; p=.001 is 2nd: x 5 = .005 -> loss
    deltas = [0.05, 0.04, 0.03, 0.001, -0.002, -0.013]
    adj, out = collection_outcomes(deltas, [0.0001, 0.002, 0.004, 0.5, 0.7, 0.03])
    assert adj == pytest.approx([0.0006, 0.01, 0.016, 1.0, 1.0, 0.09])
    assert out == ["win", "win", "win", "tie", "tie", "tie"]
    adj, out = collection_outcomes(deltas, [0.0001, 0.002, 0.004, 0.5, 0.7, 0.001])
    assert adj == pytest.approx([0.0006, 0.008, 0.012, 1.0, 1.0, 0.005])
    assert out[-1] == "loss"
    # the verdict rule itself: gain, p over queries, p over collections, a (Holm) loss
    assert [int(verdict_code(0.01, 0.001, p, loss)) for p, loss in
            ((0.01, False), (0.2, False), (0.01, True))] == [0, 1, 2]
    assert int(verdict_code(-0.01, 0.001, 0.001, False)) == 2


def _standard(seed, n=40):
    z = np.random.default_rng(seed).normal(size=n)
    return (z - z.mean()) / z.std(ddof=1)


def _suite(diffs, default=0.5):
    """Collections of two grid points: g0 = the default, g1 = the default + ``diffs[c]``."""
    return [coll(f"c{i}", [[default] * len(d), list(default + np.asarray(d))], n=len(d))
            for i, d in enumerate(diffs)]


def test_one_raw_loss_at_p_003_no_longer_blocks_the_verdict():
    wins = [0.1 + 0.05 * _standard(i) for i in range(3)]
    ties = [0.05 * _standard(10 + i) for i in range(2)]
    for mu, blocks in ((0.018, False), (0.029, True)):        # raw p 0.030 and 0.0010
        r = _result(_suite(wins + ties + [-mu + 0.05 * _standard(7)]), stability_resamples=0)
        bad = r.loco[5]["default"]
        assert bad["p_value"] == pytest.approx(0.030 if mu < 0.02 else 0.0010, abs=0.0005)
        assert bad["outcome_unadjusted"] == "loss" and bad["p_value_holm"] > bad["p_value"]
        assert (bad["outcome"] == "loss") is blocks
        assert (r.verdict == "no evidence that it transfers") is blocks
        assert r.summary["losses_unadjusted"] == 1 and r.summary["losses"] == int(blocks)
        assert "Holm" in r.tests["multiplicity"] and "6 per-collection" in r.tests["multiplicity"]
        assert not r.stability
    assert r.loco[5]["default"]["p_value_holm"] == pytest.approx(3 * 0.0010, abs=0.002)


def test_stability_near_one_for_a_clear_winner():
    r = _result(_suite([0.1 + 0.05 * _standard(i) for i in range(4)]))
    s = r.stability
    assert r.verdict == "transfers" and s["verdict_before"] == "transfers"
    assert s["stability"] >= 0.99 and s["share_same_config"] == 1.0
    assert s["B"] == 200 and s["seed"] == 0 and set(s["schemes"]) == {"bootstrap", "noise"}
    assert sum(s["schemes"]["noise"]["verdict_counts"].values()) == 200
    assert s["cheap_tests_on_data"]["agrees"]
    assert all(v["share_same_outcome"] >= 0.99 for v in s["per_collection"].values())
    assert "N(0, 0.001^2)" in s["perturbation"]["noise"] and "1000 flips" in s["tests"]
    assert "stability" in r.tests and r.recommended["label"] == "g1"


def test_a_near_tie_is_unstable_and_keeps_the_default():
    # a gain just significant over queries (p = 0.043): a resample or a 0.001 shift flips it
    r = _result(_suite([0.016 + 0.1 * _standard(i) for i in range(4)]), decision="significance")
    s = r.stability
    assert s["verdict_before"] == "likely transfers, weak evidence"
    assert r.summary["p_value_queries"] == pytest.approx(0.043, abs=0.003)
    assert s["stability"] < 0.8 and r.verdict == "unstable" == VERDICTS[3]
    assert r.recommended["label"] == "default" and "the default stays" in r.recommended["reason"]
    assert "unstable, keep the default" in r.verdict_reason
    assert r.per_collection["c0"]["recommended"] == r.per_collection["c0"]["default"]
    # without the stability figure the verdict stands
    assert _result(_suite([0.016 + 0.1 * _standard(i) for i in range(4)]),
                   stability_resamples=0).verdict == "likely transfers, weak evidence"


def test_stability_is_deterministic_for_a_seed():
    colls = _suite([0.02 + 0.1 * _standard(i) for i in range(4)])
    a = stability(colls, n_resamples=50, seed=3)
    assert a == stability(colls, n_resamples=50, seed=3)
    assert a["schemes"] != stability(colls, n_resamples=50, seed=4)["schemes"]
    assert _result(colls).stability == _result(colls).stability


def test_noise_moves_each_mean_by_noise_shift():
    # m = 2% of 300 queries change by N(0, s^2), s = 0.001 * 300 / sqrt(6): the mean of each
    # configuration moves by N(0, 0.001^2)
    c = coll("c", list(np.random.default_rng(0).random((50, 300))), n=300)
    (rt, re_), = _draw("noise", [c], 400, np.random.default_rng(1), NOISE_SHIFT, 0.02)
    assert rt.cols.shape == (400, 6) and re_ is not rt                 # holdout: two draws
    shift = rt.s1()[:50] / 300 - c.T.mean(axis=1)[:, None]
    assert shift.std() == pytest.approx(NOISE_SHIFT, rel=0.05)


@pytest.mark.parametrize("scheme", ["data", "bootstrap", "noise"])
def test_replicates_select_as_select_does(scheme):
    # replicate b built explicitly, then select() on it: the same picks as the vectorised code
    rng = np.random.default_rng(5)
    cv = Protocol("cv", "test", "test", 5)
    colls = [CollectionData("a", HOLD, rng.random((12, 20)), rng.random((12, 23)), rng.random(20),
                            rng.random(23), [])]
    for name, n in (("b", 8), ("c", 12)):
        T, d = rng.random((12, n)), rng.random(n)
        colls.append(CollectionData(name, cv, T, T, d, d, []))
    dist = rng.random(12).round(1)
    nbrs = neighbourhoods([{"a": i % 4, "b": i // 4, "m": "x" if i < 6 else "y"}
                           for i in range(12)])
    reps = _draw(scheme, colls, 6, np.random.default_rng(1), 0.01, 0.2)

    def explicit(r, b):
        if r.idx is not None:
            return r.X[:, r.idx[b]]
        X = r.X.copy()
        X[:, r.cols[b]] += r.noise[:, b, :]
        return X

    for objective in ("macro", "worst", "meanrank"):
        for rule in ("best", "1se", "nbr"):
            out = _replicate_outcomes(colls, reps, objective, rule, dist,
                                      np.random.default_rng(0), 200, 200, nbrs)
            for b in range(out["full"].shape[0]):
                rc = []
                for (rt, re_), c in zip(reps, colls, strict=True):
                    XT, XE = explicit(rt, b), explicit(re_, b)
                    rc.append(CollectionData(c.name, c.protocol, XT[:-1], XE[:-1], XT[-1],
                                             XE[-1], []))
                want = [select(rc[:i] + rc[i + 1:], objective, rule, dist, nbrs)
                        for i in range(3)]
                assert out["loco"][:, b].tolist() == want, (objective, rule, b)
                assert out["full"][b] == select(rc, objective, rule, dist, nbrs)


def test_transfer_json_without_stability_still_loads():
    r = _result(_suite([0.1 + 0.05 * _standard(i) for i in range(3)]), stability_resamples=20)
    d = json.loads(json.dumps(r.to_json()))
    assert TransferResult.from_json(d) == r
    for key in ("stability",):
        d.pop(key)
    old = TransferResult.from_json(d)
    assert old.stability == {} and old.verdict == r.verdict


def suite_copy(tmp_path, names, poison=None):
    """Copies of shared collections (qrels of ``poison`` replaced by junk judgments)."""
    from rrfbench.data.datasets import load_dataset

    root = tmp_path / "data"
    for name in names:
        src = load_dataset(name).path
        dst = root / name
        (dst / "qrels").mkdir(parents=True)
        for f in ("corpus.jsonl", "queries.jsonl"):
            (dst / f).symlink_to(src / f)
        for q in (src / "qrels").glob("*.tsv"):
            shutil.copy(q, dst / "qrels" / q.name)
        if name == poison:
            ds = load_dataset(name)
            docs = list(ds.corpus.docid)
            lines = ["query-id\tcorpus-id\tscore"]
            for i, qid in enumerate(ds.qrels("test").qids):
                lines.append(f"{qid}\t{docs[(7 * i) % len(docs)]}\t1")
            (dst / "qrels" / "test.tsv").write_text("\n".join(lines) + "\n")
    suites = tmp_path / "suites.toml"
    suites.write_text("[suites.t]\ncollections = [" + ", ".join(f'"{n}"' for n in names) + "]\n")
    return root, suites


def clean_and_poisoned(tmp_path, monkeypatch, names, poison="adi"):
    """Yield ("clean" | "poisoned", ...) with the environment pointing at a copy of the
    collections ``names`` as suite ``t`` (the second time with ``poison``'s qrels junk)."""
    for tag, bad in (("clean", None), ("poisoned", poison)):
        root, suites = suite_copy(tmp_path / tag, names, bad)
        monkeypatch.setenv("RRFBENCH_DATA", str(root))
        monkeypatch.setenv("RRFBENCH_SUITES", str(suites))
        monkeypatch.setenv("RRFBENCH_RESULTS", str(tmp_path / tag / "results"))
        yield tag


@needs_cranfield
def test_real_loco_fold_ignores_poisoned_qrels(tmp_path, monkeypatch):
    from rrfbench.workflows.dataset import sweep_grid
    from rrfbench.workflows.suite import sweep_suite

    names = ["cranfield", "time", "adi"]
    grid = sweep_grid(2, methods=("rrf", "convex"), k=(1, 10, 60), weight_step=0.25,
                      norms=("minmax",), missing=("zero",))
    picked = {}
    for tag in clean_and_poisoned(tmp_path, monkeypatch, names):
        r = sweep_suite("t", ["bm25", "fts5"], grid=grid, write=False, progress=False).result
        picked[tag] = {row["collection"]: row for row in r.loco}
    assert picked["clean"]["adi"]["selected"] == picked["poisoned"]["adi"]["selected"]
    assert picked["clean"]["adi"]["default"]["value"] != picked["poisoned"]["adi"]["default"]["value"]


@needs_cranfield
def test_saved_suite_result_applies_anywhere_to_1e12(tmp_path, monkeypatch, capsys):
    from rrfbench.cli import main
    from rrfbench.workflows.dataset import sweep_grid
    from rrfbench.workflows.suite import sweep_suite

    root, suites = suite_copy(tmp_path, ["cranfield", "time", "adi"])
    monkeypatch.setenv("RRFBENCH_DATA", str(root))
    monkeypatch.setenv("RRFBENCH_SUITES", str(suites))
    grid = sweep_grid(2, methods=("rrf", "convex"), k=(1, 10, 60), weight_step=0.25,
                      norms=("minmax", "tmm"), missing=("zero",))
    out = tmp_path / "suite"
    r = sweep_suite("t", ["bm25", "fts5"], grid=grid, out=out, progress=False).result
    for f in ("best.json", "report.md", "forest.png", "transfer_matrix.png", "k_curves.png"):
        assert (out / f).exists(), f
    for name in ("time", "adi"):
        with pytest.raises(SystemExit):
            main(["fuse", name, "--config", str(out / "best.json"), "--json"])
        got = json.loads(capsys.readouterr().out)["metrics"]["nDCG@10"]
        assert got == pytest.approx(r.per_collection[name]["config"], abs=1e-12)
    # a suite result exports without a warning and names its collections and verdict
    with pytest.raises(SystemExit):
        main(["export", str(out / "best.json"), "--to", "yaml"])
    cap = capsys.readouterr()
    assert "warning" not in cap.err and "suite t: cranfield, time, adi" in cap.out
    assert f"verdict: {r.verdict}" in cap.out


# --------------------------------------------------------------------------- golden results
GOLDEN = ROOT / "tests" / "golden" / "transfer"
GRID = ([{"method": "rrf", "k": [k], "w": w, "norm": None} for k in (1, 10, 60) for w in (0.0, 0.5)]
        + [{"method": "convex", "k": [60], "w": w, "norm": "zscore"} for w in (0.0, 0.5)])


def _golden_suite(gain: float, noise: float, seed: int) -> list[CollectionData]:
    """Four collections over :data:`GRID` (g3 better than the rest by about ``gain``): two
    holdout ones, one cross-validated (T = E), one small; with single runs and statistics."""
    rng = np.random.default_rng(seed)
    cv = Protocol("cv", "test", "test", 3, 1)
    colls = []
    for c, (proto, n_t, n_e) in enumerate(((HOLD, 30, 25), (HOLD, 24, 30), (cv, 27, 27),
                                           (HOLD, 9, 12))):
        def values(n):
            base = rng.random(n) * 0.6 + 0.2
            out = base + noise * rng.normal(size=(len(GRID), n))
            out[3] += gain
            return np.clip(out, 0, 1)
        T = values(n_t)
        E = T.copy() if proto.kind == "cv" else values(n_e)
        d_T, d_E = T[4] - 0.01, E[4] - 0.01
        singles = {name: (np.clip(T[i] - 0.05, 0, 1), np.clip(E[i] - 0.05, 0, 1))
                   for i, name in ((0, "bm25"), (7, "dense"))}
        colls.append(CollectionData(
            f"c{c}", proto, T, E, d_T, d_E, [f"e{i}" for i in range(E.shape[1])],
            [f"t{i}" for i in range(T.shape[1])], {k: v[0] for k, v in singles.items()},
            {k: v[1] for k, v in singles.items()}, {"docs": 100 * (c + 1), "queries": n_e}))
    return colls


def _golden_result(colls, rule, objective):
    labels = [f"g{i}" for i in range(len(GRID))]
    return transfer_result(
        "golden", colls, family="fusion", metric="nDCG@10", labels=labels, configs=GRID,
        default={"config": GRID[4], "label": "g4 (default)"}, objective=objective, rule=rule,
        distances=np.abs(np.arange(len(GRID)) - 4) / 4, runs=("bm25", "dense"),
        specs=("bm25", "dense"), k_curves={"best_k": {"c0": 10, "c2": 60}},
        assumptions=("synthetic",), families={"rrf": list(range(6)), "convex": [6, 7]},
        stability_resamples=40, stability_seed=2)


def _rounded(x):
    """JSON-ready, floats to 10 significant digits (the last bits of a mean may differ between
    CPUs' vector units; no decision here depends on them)."""
    if isinstance(x, float):
        return float(f"{x:.10g}")
    if isinstance(x, dict):
        return {str(k): _rounded(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_rounded(v) for v in x]
    return x


@pytest.mark.parametrize("case, gain, noise, seed, rule, objective", [
    ("clear_nbr_macro", 0.08, 0.05, 0, "nbr", "macro"),           # transfers, stable
    ("clear_best_worst", 0.08, 0.05, 0, "best", "worst"),
    ("weak_1se_meanrank", 0.012, 0.08, 1, "1se", "meanrank"),    # no evidence -> unstable
    ("downgraded_nbr_macro", 0.02, 0.05, 1, "nbr", "macro"),     # transfers -> likely
    ("likely_at_80_percent", 0.04, 0.08, 1, "nbr", "macro"),     # likely, support exactly 0.8
    ("transfers_unstable", 0.02, 0.08, 2, "nbr", "macro"),       # transfers -> unstable
    ("none_best_macro", 0.0, 0.08, 2, "best", "macro"),
])
def test_transfer_result_equals_its_golden_file(case, gain, noise, seed, rule, objective):
    """The whole result (LOCO rows, summary, verdict and reason, stability, transfer matrix,
    families, characteristics, tests) on synthetic suites, against ``tests/golden/transfer``:
    every field a report, a notebook or an export reads is pinned, not only the verdict. The
    cases cover each rule and objective, a clear gain, a weak one and none, and each way the
    stability figure keeps, downgrades or overturns a verdict. After a deliberate
    change, rewrite them with RRFBENCH_UPDATE_GOLDEN=1 and review the diff."""
    got = _rounded(json.loads(json.dumps(
        _golden_result(_golden_suite(gain, noise, seed), rule, objective).to_json(), default=str)))
    got["provenance"].pop("nested_grading_s")  # a time, not a result
    path = GOLDEN / f"{case}.json"
    if os.environ.get("RRFBENCH_UPDATE_GOLDEN"):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(got, indent=1, sort_keys=True) + "\n")
    assert got == json.loads(path.read_text())


# --------------------------------------------------------------------------- helpers, by hand
def test_fusion_distance_hand_computed():
    from rrfbench.fusion.config import Config
    from rrfbench.tuning.selection import fusion_distance

    assert fusion_distance(Config("rrf", (60.0, 60.0), (1.0, 1.0), (None, None)), 2) == 0.0
    # weights are shares whatever their sum (.25 + .25 is equal weights too)
    assert fusion_distance(Config("rrf", (60.0, 60.0), (.25, .25), (None, None)), 2) == 0.0
    # shares (.75, .25): L1 to (.5, .5) = .5; k: mean(|ln(11/61)|, |ln(121/61)|)
    got = fusion_distance(Config("rrf", (10.0, 120.0), (3.0, 1.0), (None, None)), 2)
    assert got == pytest.approx(0.5 + (np.log(61 / 11) + np.log(121 / 61)) / 2, abs=1e-12)
    # +1 each for a depth cut, a rank base other than 1 and a limit
    cut = Config("rrf", (60.0, 60.0), (1.0, 1.0), (100, None), 0, limit=10)
    assert fusion_distance(cut, 2) == 3.0
    assert fusion_distance(Config("rrf", (60.0,) * 3, (1.0,) * 3, (None, 5, None)), 3) == 1.0
    # score fusion: another family (10) plus the share distance; k and cuts do not count
    convex = Config("convex", (1.0, 1.0), (0.0, 2.0), (None, None), norm="minmax", missing="zero")
    assert fusion_distance(convex, 2) == pytest.approx(11.0)
    zero = Config("convex", (60.0, 60.0), (0.0, 0.0), (None, None), norm="minmax", missing="zero")
    assert fusion_distance(zero, 2) == pytest.approx(11.0)   # no weight: shares stay 0


def test_knob_distance_hand_computed():
    from rrfbench.systems.presets.base import Knob
    from rrfbench.tuning.selection import knob_distance

    knobs = [Knob("w", 0.5, 0.0, 2.0), Knob("flag", True), Knob("cut", None, 0.0, 1.0,
                                                                  optional=True),
             Knob("mode", "a"), Knob("k", 60, 1, 1, integer=True), Knob("frozen", 3, fixed=True)]
    shipped = {"w": 0.5, "flag": True, "cut": None, "mode": "a", "k": 60, "frozen": 3}
    assert knob_distance(dict(shipped), shipped, knobs) == 0.0
    assert knob_distance({"w": 1.5}, shipped, knobs) == pytest.approx(0.5)   # |1| / range 2
    assert knob_distance({"flag": False}, shipped, knobs) == 1.0
    assert knob_distance({"cut": 0.3}, shipped, knobs) == 1.0                # off vs a value
    assert knob_distance({"cut": None}, shipped, knobs) == 0.0
    assert knob_distance({"mode": "b"}, shipped, knobs) == 1.0                # no range
    assert knob_distance({"k": 61}, shipped, knobs) == 1.0                    # empty range
    assert knob_distance({"frozen": 9, "other": 1}, shipped, knobs) == 0.0   # fixed, unknown
    assert knob_distance({"w": 0.0, "flag": False, "mode": "c"}, shipped, knobs) == pytest.approx(
        0.25 + 1 + 1)
    # every kind adds to what the knobs before it gave; a range is hi - lo (lo = 1 here)
    later = [Knob("flag", True), Knob("cut", None, 0.0, 1.0, optional=True),
             Knob("w", 2.0, 1.0, 3.0)]
    assert knob_distance({"flag": False, "cut": 0.3, "w": 2.5}, shipped | {"w": 2.0}, later) == \
        pytest.approx(1 + 1 + 0.25)


def test_combine_and_slices_hand_computed():
    from rrfbench.core.runs import Qrels, Run
    from rrfbench.tuning.suite_data import SEP, combine, slices

    def run(name, rows, floor=0.0):
        return Run(pd.DataFrame(rows, columns=["qid", "docid", "score"]), name,
                   meta={"score_floor": floor})

    a = [run("bm25", [("1", "x", 2.0), ("1", "y", 1.0)]), run("dense", [("1", "y", 0.9)])]
    b = [run("bm25", [("7", "z", 5.0)]), run("dense", [("7", "z", 0.1), ("8", "w", 0.2)])]
    qa = Qrels(pd.DataFrame({"qid": ["1"], "docid": ["y"], "relevance": [2]}))
    qb = Qrels(pd.DataFrame({"qid": ["7", "8"], "docid": ["z", "w"], "relevance": [1, 0]}))
    runs, qrels = combine([("A", a, qa), ("B", b, qb)])
    assert [r.name for r in runs] == ["bm25", "dense"]
    assert runs[0].df[["qid", "docid", "score", "rank"]].values.tolist() == [
        [f"A{SEP}1", "x", 2.0, 1], [f"A{SEP}1", "y", 1.0, 2], [f"B{SEP}7", "z", 5.0, 1]]
    assert runs[1].df.qid.tolist() == [f"A{SEP}1", f"B{SEP}7", f"B{SEP}8"]
    assert runs[0].meta["score_floor"] == 0.0
    assert qrels.name == "suite" and qrels.df.values.tolist() == [
        [f"A{SEP}1", "y", 2], [f"B{SEP}7", "z", 1], [f"B{SEP}8", "w", 0]]
    got = slices([f"A{SEP}1", f"B{SEP}7", f"A{SEP}2", f"B{SEP}8"])
    assert list(got) == ["A", "B"]
    assert got["A"].tolist() == [0, 2] and got["B"].tolist() == [1, 3]
    # the collection is what comes before the first separator, spaces and all
    got = slices([f"my docs{SEP}1 a", f"B{SEP}7", f"my docs{SEP}2"])
    assert list(got) == ["my docs", "B"] and got["my docs"].tolist() == [0, 2]
    b[1] = run("dense", [("7", "z", 0.1)], floor=-1.0)
    with pytest.raises(InputError) as ei:
        combine([("A", a, qa), ("B", b, qb)])
    assert str(ei.value) == ("run 'dense' declares different score floors across collections: "
                             "['-1.0', '0.0']")


def test_refusals_are_exact():
    """Each refusal names the option, the value and the choices, in one line."""
    colls = [coll("c1", [.5, .6]), coll("c2", [.5, .4])]
    cases = [
        (lambda: objective_values(colls, "mean"),
         "--objective: 'mean' is not one of macro, worst, meanrank"),
        (lambda: select(colls, "macro", "top"), "--rule: 'top' is not one of best, 1se, nbr"),
        (lambda: _result(colls, objective="median"),
         "--objective: 'median' is not one of macro, worst, meanrank"),
        (lambda: _result(colls, rule="2se"), "--rule: '2se' is not one of best, 1se, nbr"),
        (lambda: _result(colls[:1]), "leave-one-collection-out needs at least two collections"),
    ]
    for call, message in cases:
        with pytest.raises(InputError) as ei:
            call()
        assert str(ei.value) == message


def test_diff_verdicts_exact_cases():
    """The cheap tests inside a stability replicate, on differences whose p-values are exact
    whatever the sign flips drawn: nothing to test (all zero), a mean of exactly 0 (every flip
    is at least as far from 0), and two collections that cancel out."""
    from rrfbench.tuning.stability import _diff_verdicts

    rng = np.random.default_rng(0)
    zero, even = np.zeros((2, 3)), np.array([[1.0, -1.0, 0.0], [0.5, -0.5, 0.0]])
    nothing = _diff_verdicts([zero, zero], rng, flips=10, hb_draws=10)
    assert nothing["p_collections"].tolist() == [1.0, 1.0]    # every bootstrap mean is 0
    out = _diff_verdicts([zero, even], rng, flips=50, hb_draws=40)
    assert out["p_holm"].tolist() == [[1.0, 1.0], [1.0, 1.0]]
    assert out["p_queries"].tolist() == [1.0, 1.0] and out["p_collections"].tolist() == [1.0, 1.0]
    assert out["gain"].tolist() == [0.0, 0.0] and out["code"].tolist() == [2, 2]   # no evidence
    # +1 everywhere on one collection, -1 on the other: a macro gain of exactly 0
    up, down = np.ones((1, 4)), -np.ones((1, 4))
    out = _diff_verdicts([up, down], np.random.default_rng(1), flips=50, hb_draws=40)
    assert out["means"].tolist() == [[1.0], [-1.0]] and out["p_queries"].tolist() == [1.0]
    # each collection alone: every flip but all-the-same-sign is closer to 0 than 1
    assert out["p_holm"].max() < 1.0
    # one collection is a suite too (the first one's replicate count is B)
    one = _diff_verdicts([up], np.random.default_rng(2), flips=20, hb_draws=10)
    assert one["means"].shape == (1, 1) and one["gain"].tolist() == [1.0]
    # the sign-flip p-value is (1 + flips at least as far from 0) / (flips + 1) (Phipson and
    # Smyth), ties counted: on +1 x 4 only the all-plus and all-minus flips reach |mean| = 1
    signs = np.random.default_rng(2).choice(np.array([-1.0, 1.0]), size=(20, 4))
    extreme = int((np.abs(signs.sum(axis=1)) == 4).sum())
    assert one["p_holm"].tolist() == [[(1 + extreme) / 21]]


def _shifted(name, shift, noise=.05, seed=0, n=30):
    """A two-point grid on 30 queries: g0 is the default, g1 the default moved by ``shift``."""
    r = np.random.default_rng(seed)
    base = r.random(n) * .5 + .25
    return coll(name, [list(base), list(base + shift + noise * r.standard_normal(n))],
                default=base, n=n)


def test_verdict_reasons_name_every_loss():
    # g1 loses on c0 and c1 (each chosen on the others, where it loses on one and wins on one)
    colls = [_shifted("c0", -.2, seed=1), _shifted("c1", -.2, seed=2), _shifted("c2", .3, seed=3)]
    res = _result(colls, stability_resamples=20, preset="titan", knobs={"k": 60},
                  provenance={"grid": "g"})
    assert [(r["collection"], r["default"]["outcome"]) for r in res.loco] == [
        ("c0", "loss"), ("c1", "loss"), ("c2", "tie")]
    assert res.verdict_reason == (
        "LOCO macro gain -0.1298 over the default; p=0.0001 over queries; hierarchical "
        "bootstrap p=0.0690; significant losses on c0, c1 (Holm-adjusted p 0.0003, 0.0003): "
        "keep the default")
    # the stability of a loss is measured as a loss (a replicate losing there agrees)
    assert res.stability["per_collection"]["c0"]["share_same_outcome"] == 1.0
    assert (res.preset, res.knobs) == ("titan", {"k": 60})
    assert res.provenance == {"grid": "g", "nested_grading_s": res.provenance["nested_grading_s"]}
    # a loss before Holm's adjustment only is named in the reason, as such
    colls = [_shifted("c0", .3, seed=1), _shifted("c1", .03, noise=.2, seed=2),
             _shifted("c2", .03, noise=.2, seed=4), _shifted("c3", -.018, seed=3)]
    res = _result(colls, stability_resamples=0)
    assert [r["default"]["outcome_unadjusted"] for r in res.loco] == ["win", "win", "tie", "loss"]
    assert res.verdict == VERDICTS[1] and res.verdict_reason.endswith(
        "no collection loses significantly (Holm over the 4 per-collection tests; unadjusted "
        "p < 0.05 on c3)")


def test_rules_choose_over_all_collections_with_their_own_inputs():
    # g1..g3 within one standard error of the best, g3; g2 has the best neighbourhood; g1 is
    # the closest to the default by the distances given
    P = {0: [.1, -.1, .1, -.1], 1: [.1, -.1, -.1, .1], 2: [-.1, .1, .1, -.1], 3: [.1, .1, -.1, -.1],
         4: [0] * 4}
    rows = [list(v + np.array(P[i])) for i, v in enumerate((.5, .58, .59, .60, .2))]
    colls = [coll(f"c{i}", rows, default=np.full(4, .4)) for i in range(3)]
    dist = np.array([5, .1, 3, 2, 9.])
    got = {(rule, d is not None): _result(colls, rule=rule, distances=d, stability_resamples=0)
           for rule, d in (("best", None), ("1se", dist), ("1se", None), ("nbr", None))}
    assert {key: r.label for key, r in got.items()} == {
        ("best", False): "g3", ("1se", True): "g1", ("1se", False): "g3", ("nbr", False): "g2"}
    assert [r["selected"] for r in got["1se", True].loco] == ["g1"] * 3
    assert [r["selected"] for r in got["nbr", False].loco] == ["g2"] * 3


def test_family_results_are_the_suite_result_of_each_family_alone():
    rng = np.random.default_rng(3)
    colls = [coll(f"c{i}", list(.5 + .1 * rng.random((5, 12))), default=np.full(12, .5), n=12)
             for i in range(3)]
    families = {"one": [4], "rrf": [0, 1], "convex": [2, 3, 4]}
    res = _result(colls, families=families, stability_resamples=5)
    assert list(res.families) == ["rrf", "convex"]        # a one-point family has no choice
    for fam in ("rrf", "convex"):
        idx = families[fam]
        sub = [CollectionData(c.name, c.protocol, c.T[idx], c.E[idx], c.default_T, c.default_E,
                              c.eval_qids) for c in colls]
        alone = transfer_result("s", sub, family=fam, metric="m",
                                labels=[f"g{i}" for i in idx], configs=[{"g": i} for i in idx],
                                default={"config": {"g": -1}, "label": "default"},
                                stability_resamples=5)
        row = res.families[fam]
        assert (row["selected"], row["verdict"], row["gain"], row["wins"]) == (
            alone.label, alone.verdict, alone.summary["gain"], alone.summary["wins"])
        assert row["selected_per_collection"] == {r["collection"]: r["selected"]
                                                  for r in alone.loco}
        assert row["stability"]["stability"] == alone.stability["stability"]
    assert _result(colls, stability_resamples=0).stability == {}      # skipped, not None
    assert _result(colls, stability_resamples=1).stability["B"] == 1


def test_stability_is_the_same_at_every_simd_level():
    """The stability figures (query bootstraps and CPU-size noise, suite and per-query
    verdicts) in fresh processes running NumPy as CPUs with fewer vector units do: identical.
    The noise draws used to go to the queries in ``np.argpartition``'s order, which differs
    between the AVX-512 and AVX2 levels at 3,000 queries (and at every size below AVX2)."""
    from tests.conftest import at_every_simd_level

    code = """
import hashlib, json
import numpy as np
from rrfbench.tuning.stability import _random_subsets, stability, verdict_stability
from tests.tuning.test_transfer import _standard, _suite
print(hashlib.sha256(_random_subsets(np.random.default_rng(0), 200, 3000, 60).tobytes()).hexdigest())
a = stability(_suite([0.016 + 0.1 * _standard(i) for i in range(4)]), n_resamples=60, seed=3)
d = [np.random.default_rng(i).normal(0.0036, 0.1, 3000) for i in range(3)]
v = verdict_stability(d, 1, n_resamples=60)
print(json.dumps([a, v], sort_keys=True, default=repr))
"""
    out = at_every_simd_level(code)
    assert len(set(out.values())) == 1, {k: v[:300] for k, v in out.items()}
