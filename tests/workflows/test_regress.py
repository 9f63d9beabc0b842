"""The metric-regression gate: green on the committed baselines and on noise of the size a CPU's
integer kernels make, red on a real loss of 0.01 (a perturbed run read from the run cache)."""

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from rrfbench.cli import main
from rrfbench.core.errors import InputError, RrfbenchWarning
from rrfbench.workflows.regress import (
    ABOUT,
    RULE,
    check,
    dumps,
    load_baselines,
    one_sided_p,
    update,
)
from tests.conftest import ROOT, needs_cranfield

BASELINES = ROOT / "results" / "baselines.json"
MARGIN = RULE["margin"]


def _exit(args):
    try:
        main(args)
    except SystemExit as exc:
        return exc.code
    return 0


def _entry(spec: str, dataset: str = "cranfield") -> dict:
    """A committed single-retriever entry, without its per-query values (an old-format entry)."""
    [e] = [e for e in load_baselines(BASELINES)["entries"]
           if e["dataset"] == dataset and e.get("spec") == spec]
    return {k: v for k, v in e.items() if k != "per_query"}


def _write(path: Path, data: dict) -> Path:
    path.write_text(json.dumps(data))
    return path


# --------------------------------------------------------------------------- perturbed runs
@pytest.fixture(scope="module")
def bm25(cranfield):
    """Cranfield's bm25 run, its per-query nDCG@10 and the relevant (qid, docid) pairs."""
    from rrfbench.core.evaluation import evaluate_per_query
    from rrfbench.workflows.dataset import retrieve

    qrels = cranfield.qrels("test")
    run = retrieve(cranfield, "bm25", "test", 1000)
    rel = qrels.df[qrels.df.relevance >= 1]
    return {"ds": cranfield, "qrels": qrels, "run": run,
            "ndcg": evaluate_per_query(run, qrels, ["nDCG@10"])["nDCG@10"],
            "relevant": set(zip(rel.qid, rel.docid, strict=True))}


def _reorder(run, qids, move):
    """``run`` with the ranking of each query in ``qids`` reordered by ``move(qid, docids)`` (a
    new docid order); those queries get scores n..1 in the new order."""
    from rrfbench.core.runs import Run

    qids = set(qids)
    parts = []
    for qid, g in run.df.sort_values(["qid", "rank"]).groupby("qid", sort=False):
        if qid in qids:
            docids = move(qid, list(g.docid))
            g = pd.DataFrame({"qid": qid, "docid": docids,
                              "score": np.arange(len(docids), 0, -1, dtype=float)})
        parts.append(g[["qid", "docid", "score"]])
    return Run.from_pandas(pd.concat(parts), name=run.name)


def _push_relevant(bm25, qids, by):
    """The best-ranked relevant document of each query in ``qids`` moved ``by`` places down."""
    def move(qid, docids):
        hits = [i for i, d in enumerate(docids) if (qid, d) in bm25["relevant"]]
        if hits and hits[0] + by < len(docids):
            docids.insert(hits[0] + by, docids.pop(hits[0]))
        return docids

    return _reorder(bm25["run"], qids, move)


class _Replay:
    """The bm25 retriever's identity (name, params, versions) returning a given run, so that
    :func:`~rrfbench.retrievers.base.cached_run` files that run where ``regress`` reads bm25."""

    def __init__(self, run):
        from rrfbench.retrievers import make_retriever

        self._inner, self._run = make_retriever("bm25"), run
        self.name, self.score_floor = self._inner.name, self._inner.score_floor

    def params(self):
        return self._inner.params()

    def versions(self):
        return self._inner.versions()

    def retrieve(self, dataset, queries, depth):
        return self._run


def _cache_as_bm25(run, ds, root: Path, monkeypatch):
    """Point the results folder at a fresh ``root`` whose cached bm25 run is ``run``."""
    from rrfbench.retrievers.base import cached_run

    monkeypatch.setenv("RRFBENCH_RESULTS", str(root))
    cached_run(_Replay(run), ds, "test", 1000, force=True)


def _ndcg(bm25, run):
    from rrfbench.core.evaluation import evaluate_per_query

    return evaluate_per_query(run, bm25["qrels"], ["nDCG@10"])["nDCG@10"]


def _bm25_baseline(tmp_path) -> Path:
    """A baselines file holding cranfield bm25 with today's per-query values (via --update)."""
    path = _write(tmp_path / "baselines.json", {"entries": [_entry("bm25")]})
    assert _exit(["regress", "--baselines", str(path), "--update"]) == 0
    assert "per_query" in load_baselines(path)["entries"][0]
    return path


# --------------------------------------------------------------------------- the gate
@needs_cranfield
def test_committed_baselines_pass(capsys):
    """Everything CI can afford is recomputed (dense scifact is SKIP unless its embeddings are
    cached on this machine); nothing may be materially and significantly worse."""
    code = _exit(["regress", "--baselines", str(BASELINES)])
    out = capsys.readouterr()
    assert code == 0, out.out
    assert "FAIL=0" in out.out and "OK=" in out.out
    assert "rule: FAIL = mean loss" in out.out and "p < alpha 0.05" in out.out
    assert "no per-query values" not in out.err  # the committed file stores them


@needs_cranfield
def test_real_loss_of_a_hundredth_fails(bm25, tmp_path, monkeypatch, results_root, capsys):
    """A fifth of the queries (seed 0) get their best relevant document pushed two places down:
    nDCG@10 loses about 0.012 over ~35 queries. That FAILs (exit 1); a wider --margin lets it
    pass; with the roles swapped (baseline = the perturbed run) it is IMPROVED."""
    path = _bm25_baseline(tmp_path)
    qids = list(bm25["ndcg"].index)
    pick = np.random.default_rng(0).choice(qids, size=len(qids) // 5, replace=False)
    worse = _push_relevant(bm25, pick, 2)
    loss = float((bm25["ndcg"] - _ndcg(bm25, worse)).mean())
    assert 0.008 < loss < 0.016  # a real loss of about 0.01
    _cache_as_bm25(worse, bm25["ds"], tmp_path / "perturbed", monkeypatch)
    capsys.readouterr()

    assert _exit(["regress", "--baselines", str(path)]) == 1
    out = capsys.readouterr().out
    assert "FAIL=1" in out and "OK=1" in out  # nDCG@10 fails; R@100 (top 100 kept) is OK
    assert f"{-loss:+.4f}" in out
    rows = {r["metric"]: r for r in check(load_baselines(path))}
    assert rows["nDCG@10"]["status"] == "FAIL" and rows["nDCG@10"]["p"] < 0.001
    assert rows["nDCG@10"]["delta"] == pytest.approx(-loss, abs=1e-6)
    assert rows["R@100"]["status"] == "OK" and rows["R@100"]["p"] == 1.0

    # the margin is an option (--tolerance is its old name)
    assert _exit(["regress", "--baselines", str(path), "--margin", "0.02"]) == 0
    assert "OKISH=1" in capsys.readouterr().out
    assert _exit(["regress", "--baselines", str(path), "--tolerance", "0.02"]) == 0
    assert _exit(["regress", "--baselines", str(path), "--margin", "1.5"]) == 2

    # symmetrical: record the perturbed run as the baseline, then restore the real run
    assert _exit(["regress", "--baselines", str(path), "--update"]) == 0
    monkeypatch.setenv("RRFBENCH_RESULTS", str(results_root))
    capsys.readouterr()
    assert _exit(["regress", "--baselines", str(path)]) == 0
    assert "IMPROVED=1" in capsys.readouterr().out


@needs_cranfield
def test_noise_of_cpu_kernel_size_does_not_fail(bm25, tmp_path, monkeypatch, capsys):
    """Two kinds of noise, neither a FAIL: (1) a tenth of the queries get two neighbouring
    documents of their top 10 swapped (the mean moves by less than the margin); (2) three
    queries lose their best relevant document from the top 10 - the mean loss is beyond the
    margin but carried by three queries (p ~ 1/8), so it is NOISE, where the old mean-only
    rule FAILed it."""
    path = _bm25_baseline(tmp_path)
    qids = list(bm25["ndcg"].index)
    rng = np.random.default_rng(1)
    swaps = {q: int(rng.integers(0, 9)) for q in rng.choice(qids, size=len(qids) // 10,
                                                            replace=False)}

    def swap(qid, docids):
        i = swaps[qid]
        docids[i], docids[i + 1] = docids[i + 1], docids[i]
        return docids

    jitter = _reorder(bm25["run"], swaps, swap)
    assert 0 < abs(float((_ndcg(bm25, jitter) - bm25["ndcg"]).mean())) < MARGIN
    _cache_as_bm25(jitter, bm25["ds"], tmp_path / "jitter", monkeypatch)
    rows = {r["metric"]: r for r in check(load_baselines(path))}
    assert rows["nDCG@10"]["status"] in ("OK", "OKISH") and rows["R@100"]["status"] == "OK"

    # three queries that lose, together, just over the margin's worth of nDCG@10 when their
    # best relevant document leaves the top 10 (the last such window in the order of loss)
    drop = (bm25["ndcg"] - _ndcg(bm25, _push_relevant(bm25, qids, 10))).sort_values(
        ascending=False, kind="stable")
    sums = drop.rolling(3).sum().shift(-2).to_numpy()
    i = int(np.flatnonzero(sums > MARGIN * len(qids))[-1])
    three = list(drop.index[i:i + 3])
    few = _push_relevant(bm25, three, 10)
    delta = float((_ndcg(bm25, few) - bm25["ndcg"]).mean())
    assert -1.5 * MARGIN < delta < -MARGIN
    _cache_as_bm25(few, bm25["ds"], tmp_path / "few", monkeypatch)
    capsys.readouterr()
    assert _exit(["regress", "--baselines", str(path)]) == 0
    out = capsys.readouterr().out
    assert "NOISE=1" in out and "FAIL=0" in out
    [row] = [r for r in check(load_baselines(path)) if r["metric"] == "nDCG@10"]
    assert row["status"] == "NOISE" and row["p"] > 0.1 and row["delta"] < -MARGIN  # p ~ 1/8
    # the same numbers without per-query values: the mean-only fallback fails it
    with pytest.warns(RrfbenchWarning, match="no per-query values"):
        [row] = [r for r in check({"entries": [_entry("bm25")]}) if r["metric"] == "nDCG@10"]
    assert row["status"] == "FAIL" and row["p"] is None


@needs_cranfield
def test_old_format_entries_use_the_mean_with_a_warning(tmp_path, capsys):
    """Without per-query values the mean alone decides (FAIL / OKISH / IMPROVED at the file's
    old ``tolerance``), with one warning; --update stores them, writes the rule out and is
    deterministic."""
    cheap = [_entry("bm25"), _entry("fts5")]
    cheap[0]["metrics"]["nDCG@10"] += 0.05  # pretend we used to be much better
    path = _write(tmp_path / "baselines.json", {"tolerance": 0.005, "entries": cheap})
    assert _exit(["regress", "--baselines", str(path)]) == 1
    out = capsys.readouterr()
    assert "FAIL=1" in out.out
    assert out.err.count("no per-query values") == 1 and "2 baseline entries" in out.err
    # within the margin is OKISH, not FAIL; better than baseline is IMPROVED, not FAIL
    cheap[0]["metrics"]["nDCG@10"] -= 0.05 - 0.003
    cheap[1]["metrics"]["nDCG@10"] -= 0.05
    with pytest.warns(RrfbenchWarning, match="2 baseline entries have no per-query values"):
        rows = check({"tolerance": 0.005, "entries": cheap})
    status = {(r["system"], r["metric"]): r["status"] for r in rows}
    assert status[("bm25", "nDCG@10")] == "OKISH"
    assert status[("fts5", "nDCG@10")] == "IMPROVED"
    assert all(r["p"] is None and not r["paired"] for r in rows)

    new, diff = update({"tolerance": 0.005, "entries": cheap}, rows)
    assert len(diff) == 3 and diff[-1] == "per-query values: 2 entries added, 0 changed"
    assert "tolerance" not in new
    assert {k: new["rule"][k] for k in RULE} == RULE and "about" in new["rule"]
    assert new["about"] == ABOUT and "fp32" in ABOUT and "int8" not in ABOUT  # kept current
    for e in new["entries"]:
        assert len(e["per_query"]["qids"]) == 225
        assert set(e["per_query"]) == {"qids", "nDCG@10", "R@100"}
        assert np.mean(e["per_query"]["nDCG@10"]) == pytest.approx(e["metrics"]["nDCG@10"],
                                                                  abs=1e-6)
    rows = check(new)
    assert all(r["status"] == "OK" and r["paired"] and r["p"] == 1.0 for r in rows)
    again, diff = update(new, rows)
    assert dumps(again) == dumps(new) and diff == []
    assert json.loads(dumps(new)) == new


@needs_cranfield
def test_queries_on_one_side_only_are_counted_and_left_out():
    old = {"entries": [_entry("bm25")]}
    with pytest.warns(RrfbenchWarning, match="no per-query values"):
        rows = check(old)
    [entry] = update(old, rows)[0]["entries"]
    pq = entry["per_query"]
    keep = range(5, len(pq["qids"]))  # five queries the baseline never saw ...
    entry["per_query"] = {k: [v[i] for i in keep] + ["nosuch" if k == "qids" else 1.0]
                          for k, v in pq.items()}  # ... and one today's qrels do not have
    with pytest.warns(RrfbenchWarning, match=r"1 queries only in the baseline, 5 only today; "
                                             r"compared on the 220 both have"):
        rows = check({"entries": [entry]})
    assert {r["status"] for r in rows} == {"OK"}
    assert all(r["n"] == 220 and r["only_baseline"] == 1 and r["only_today"] == 5 for r in rows)


def test_one_sided_p_is_the_halved_sign_flip_test():
    a = np.zeros(225)
    assert one_sided_p(a, a) == 1.0
    b = a.copy()
    b[:3] = 0.5  # three queries worse today, all by the same amount: exactly 1/8 of the flips
    assert one_sided_p(a, b) == pytest.approx(1 / 8, abs=0.01)
    b[:40] = 0.5
    assert one_sided_p(a, b) < 1e-3


def test_missing_baselines_file_is_clean_error(tmp_path, capsys):
    assert _exit(["regress", "--baselines", str(tmp_path / "none.json")]) == 2
    assert "none.json: file not found" in capsys.readouterr().err


def test_committed_file_covers_retrievers_presets_and_tuned(tmp_path):
    data = load_baselines(BASELINES)
    kinds = {("spec" in e, "preset" in e, "config" in e) for e in data["entries"]}
    assert kinds == {(True, False, False), (False, True, False), (False, False, True)}
    assert {e["dataset"] for e in data["entries"]} == {"cranfield", "scifact"}
    # the rule is written out, and every entry (dense scifact too) has its per-query values
    assert {k: data["rule"][k] for k in RULE} == RULE
    n = {"cranfield": 225, "scifact": 300}
    for e in data["entries"]:
        assert set(e["per_query"]) == {"qids", *e["metrics"]}, e["system"]
        assert len(e["per_query"]["qids"]) == n[e["dataset"]], e["system"]
        for m, mean in e["metrics"].items():
            assert np.mean(e["per_query"][m]) == pytest.approx(mean, abs=1e-6), e["system"]
    with pytest.raises(InputError, match="not valid JSON"):
        load_baselines(Path(__file__))
    bad = {"entries": [{**data["entries"][0], "per_query": {"qids": ["1"], "nDCG@10": []}}]}
    with pytest.raises(InputError, match="one value per qid"):
        load_baselines(_write(tmp_path / "bad.json", bad))
    with pytest.raises(InputError, match="rule.alpha"):
        load_baselines(_write(tmp_path / "bad.json", {"rule": {"alpha": 2}, "entries": []}))


def test_a_baseline_whose_mean_disagrees_with_its_per_query_values_is_refused(tmp_path):
    """A hand-edited or corrupted baselines.json (the mean says one thing, the per-query
    values another) is refused in one line naming the file, the entry and the metric."""
    import subprocess
    import sys

    from rrfbench.workflows.regress import dumps, load_baselines

    good = {"entries": [{"dataset": "cranfield", "split": "test", "system": "bm25",
                         "spec": "bm25", "metrics": {"nDCG@10": 0.5, "R@100": 0.25},
                         "per_query": {"qids": ["1", "2"], "nDCG@10": [0.4, 0.6],
                                       "R@100": [0.25, 0.25]}}]}
    path = tmp_path / "baselines.json"
    path.write_text(dumps(good))
    assert load_baselines(path)["entries"][0]["metrics"]["nDCG@10"] == 0.5
    bad = json.loads(json.dumps(good))
    bad["entries"][0]["metrics"]["R@100"] = 0.3
    path.write_text(dumps(bad))
    with pytest.raises(InputError, match=r"entry 0 \(cranfield/test bm25\): metrics R@100 "
                                         r"0\.300000 is not the mean of its per_query values "
                                         r"\(0\.250000\)"):
        load_baselines(path)
    p = subprocess.run([sys.executable, "-m", "rrfbench.cli", "regress", "--baselines",
                        str(path)], capture_output=True, text=True, timeout=120)
    lines = (p.stdout + p.stderr).strip().splitlines()
    assert p.returncode == 2 and len(lines) == 1
    assert lines[0].startswith(f"error: {path}: entry 0 (cranfield/test bm25): metrics R@100")
    # rounding to the stored 6 decimals is not a disagreement
    ok = json.loads(json.dumps(good))
    ok["entries"][0]["per_query"]["nDCG@10"] = [0.4000004, 0.6]
    path.write_text(dumps(ok))
    load_baselines(path)
