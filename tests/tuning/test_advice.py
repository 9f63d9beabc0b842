"""The suite's advice: every decision's recommendation with its rule's track record, the rules
graded over all decisions together, and the report that opens with it."""

import dataclasses
import json

import pytest

from rrfbench.core.errors import InputError
from rrfbench.outputs.report import advice_section, write_report
from rrfbench.results.dataset import save_result
from rrfbench.tuning.advice import gather, load_advice
from rrfbench.tuning.decisions import DEFAULT_DECISION, RULES
from rrfbench.tuning.transfer import transfer_result
from tests.conftest import ROOT
from tests.tuning.test_decisions import GRID, LABELS, suite


def result(colls, preset=None, rule=DEFAULT_DECISION):
    return transfer_result("s", colls, family=preset or "fusion", metric="nDCG@10",
                           labels=LABELS, configs=GRID, preset=preset,
                           default={"config": GRID[0], "label": "g0 (default)"},
                           runs=("bm25", "dense"), stability_resamples=20, decision=rule)


@pytest.fixture()
def saved(tmp_path):
    t, a = tmp_path / "transfer" / "s", tmp_path / "adaptive" / "s"
    fusion = result(suite(5, gain=0.03, seed=0))
    zeus = result(suite(5, gain=-0.02, seed=1), preset="zeus")
    save_result(fusion, t / "best.json")
    save_result(zeus, t / "presets" / "zeus" / "best.json")
    # a system tuned on other collections is not part of this suite's advice
    old = dataclasses.replace(result(suite(4, seed=2), preset="titan"))
    save_result(old, t / "presets" / "titan" / "best.json")
    return t, a, fusion, zeus


def test_gather_reads_every_decision_of_the_suite(saved):
    t, a, fusion, zeus = saved
    adv = gather("s", t, a, notes={"c0": "made up"})
    assert [r["family"] for r in adv.rows] == ["fusion", "preset:zeus"]
    assert adv.graded == 10 and set(adv.pooled) == set(RULES)
    f = adv.rows[0]
    assert f["use"] == fusion.recommended["label"] and f["of"] == 5
    assert f["right"] == fusion.decision["track_record"]["right"]
    want = fusion.decision["recommended_gain"]
    assert f["expected_gain"] == want["value"] and f["prediction95"] == want["prediction95"]
    # the pooled figures are the two families' decisions together
    regrets = [d["regret"] for r in (fusion, zeus) for d in
               r.decision["grading"]["rules"]["always"]["per_collection"].values()]
    assert adv.pooled["always"]["mean_regret"] == pytest.approx(sum(regrets) / 10)
    assert adv.best_rule in RULES and adv.agrees == (adv.best_rule == DEFAULT_DECISION)
    assert list(adv.table().columns[:3]) == ["decision", "use", "expected gain (nDCG@10)"]
    assert adv.table()["advice right on"].iloc[0] == f"{f['right']} of 5"
    verb = "use" if f["take_change"] else "keep"
    assert adv.headline()[0].startswith(f"free fusion (bm25 + dense) vs g0 (default): {verb} ")
    assert ("not enough for rule" in adv.headline()[0]) == (not f["take_change"])
    assert adv.notes == {"c0": "made up", "c1": "", "c2": "", "c3": "", "c4": ""}


def test_the_advice_round_trips_and_opens_the_report(saved, tmp_path):
    t, a, _, _ = saved
    adv = gather("s", t, a)
    path = tmp_path / "advice.json"
    path.write_text(json.dumps(adv.to_json()))
    assert load_advice(path) == adv
    write_report(t, {"transfer": "## Transfer\n", "preset-zeus": "## Zeus\n",
                     "advice": advice_section(adv)})
    lines = (t / "report.md").read_text().splitlines()
    assert lines[2] == "## The recommendation (suite `s`: 5 collections)"
    heads = [ln for ln in lines if ln.startswith("## ")]
    assert heads == ["## The recommendation (suite `s`: 5 collections)", "## Transfer", "## Zeus"]
    path.write_text('{"kind": "transfer"}')
    with pytest.raises(InputError, match="not an advice.json written by this rrfbench"):
        load_advice(path)


def test_no_advice_before_the_free_fusion_result(tmp_path):
    assert gather("s", tmp_path / "t", tmp_path / "a") is None


def test_the_committed_suite_uses_its_lowest_cost_rule():
    """The rule rrfbench uses (decisions.DEFAULT_DECISION) is the one with the lowest pooled
    cost (regret, shipped losses counted twice) on the committed English suite, every decision
    of it graded on nine collections; and no committed recommendation takes a change whose own
    expected gain is negative."""

    path = ROOT / "results" / "transfer" / "en" / "advice.json"
    adv = load_advice(path)
    assert len(adv.collections) == 9 and adv.graded == 90 and len(adv.rows) == 10
    assert adv.rule == DEFAULT_DECISION and adv.best_rule == DEFAULT_DECISION and adv.agrees
    assert all(r["of"] == 9 for r in adv.rows)
    assert all(r["change_gain"] > 0 for r in adv.rows if r["take_change"])
    assert adv.by_loss_aversion["1"] == DEFAULT_DECISION
