"""Transfer across collections: objectives, the one-standard-error rule, LOCO without leaks,
the verdict, and saved suite results applied anywhere."""

import json
import shutil

import numpy as np
import pytest

from rrfbench.results import Protocol
from rrfbench.transfer import (
    CollectionData,
    objective_values,
    one_se_set,
    select,
    transfer_result,
)
from tests.conftest import needs_cranfield

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
    r = _result(flat)
    assert r.verdict == "no evidence that it transfers"
    assert r.recommended["label"] == "default" and r.label == "g1"
    # a gain on two collections and a significant loss on a third: no evidence
    mixed = up[:2] + [coll("bad", [[.5] * 30, [.1] * 30], n=30)]
    assert _result(mixed).verdict == "no evidence that it transfers"
    assert _result(mixed).summary["losses"] == 1


def suite_copy(tmp_path, names, poison=None):
    """Copies of shared collections (qrels of ``poison`` replaced by junk judgments)."""
    from rrfbench.datasets import load_dataset

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


@needs_cranfield
def test_real_loco_fold_ignores_poisoned_qrels(tmp_path, monkeypatch):
    from rrfbench.workflows import sweep_grid, sweep_suite

    names = ["cranfield", "time", "adi"]
    grid = sweep_grid(2, methods=("rrf", "convex"), k=(1, 10, 60), weight_step=0.25,
                      norms=("minmax",), missing=("zero",))
    picked = {}
    for tag, poison in (("clean", None), ("poisoned", "adi")):
        root, suites = suite_copy(tmp_path / tag, names, poison)
        monkeypatch.setenv("RRFBENCH_DATA", str(root))
        monkeypatch.setenv("RRFBENCH_SUITES", str(suites))
        monkeypatch.setenv("RRFBENCH_RESULTS", str(tmp_path / tag / "results"))
        r = sweep_suite("t", ["bm25", "fts5"], grid=grid, write=False, progress=False).result
        picked[tag] = {row["collection"]: row for row in r.loco}
    assert picked["clean"]["adi"]["selected"] == picked["poisoned"]["adi"]["selected"]
    assert picked["clean"]["adi"]["default"]["value"] != picked["poisoned"]["adi"]["default"]["value"]


@needs_cranfield
def test_saved_suite_result_applies_anywhere_to_1e12(tmp_path, monkeypatch, capsys):
    from rrfbench.cli import main
    from rrfbench.workflows import sweep_grid, sweep_suite

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
