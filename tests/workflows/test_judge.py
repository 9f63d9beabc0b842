"""``rrfbench judge --simulate``: the console script, with right and wrong arguments."""

import json
import shutil

from tests.conftest import ROOT, needs_cranfield
from tests.test_cli import console, one_line_error


def _with_suite_result(results_root):
    dst = results_root / "transfer" / "en" / "best.json"
    dst.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy(ROOT / "results" / "transfer" / "en" / "best.json", dst)


@needs_cranfield
def test_a_simulated_decision_reports_itself_and_is_graded_on_the_full_qrels(results_root):
    _with_suite_result(results_root)
    env = {"RRFBENCH_RESULTS": str(results_root)}
    code, out, err = console("judge", "cranfield", "--simulate", "--budget", "60", "--json", env=env)
    assert code == 0, err
    row = json.loads(out)
    assert {"decision", "current", "judgments", "right", "regret"} <= set(row)
    assert row["judgments"] == 60 and row["current"] == "rrf k=60 w=1,1,1"
    # the candidates: RRF k=60, the suite's change and two alternatives from its LOCO evidence
    assert row["candidates"] == 4 and len(row["alternatives"]) == 2
    assert row["current"] not in row["alternatives"]
    assert (row["took"] == "alternative") == (row["decision"] in row["alternatives"])
    assert (row["took"] == "current") == (row["decision"] == row["current"])
    chosen = row["ndcg10_decision"]
    if row["took"] != "alternative":
        assert chosen == row["ndcg10_change" if row["take_change"] else "ndcg10_current"]
    best = max(row["ndcg10_change"], row["ndcg10_current"], row["ndcg10_best_alternative"])
    assert row["regret"] == round(best - chosen, 6)
    assert row["right"] == (best - chosen <= 0.005)     # right among all the candidates
    two = max(row["ndcg10_change"], row["ndcg10_current"])
    assert row["right_of_two"] == (two - chosen <= 0.005)
    assert "without cranfield" in row["prior"]        # the prior never saw this collection
    log = results_root / "judging" / "logs" / "cranfield.sample.jsonl"
    lines = [json.loads(x) for x in log.read_text().splitlines()]
    assert len(lines) == 60 and all(x["why"].startswith("sample, phase ") for x in lines)
    # half the budget on the first question (current vs change), first
    assert all("phase 1" in x["why"] for x in lines[:30])
    assert row["method"] == "sample" and row["unbiased_se_dcg10"] > 0
    # with no judgments, the decision is the suite's advice made without the collection
    code, out, _ = console("judge", "cranfield", "--simulate", "--budget", "0", "--json", env=env)
    zero = json.loads(out)
    assert zero["judgments"] == 0 and zero["take_change"] == zero["prior_take_change"]


def _refused(*args):
    code, _, err = console(*args)
    return code, err


def test_wrong_arguments_get_one_line():
    one_line_error(*_refused("judge", "cranfield", "--simulate", "--method", "best"),
                   "--method", "sample, mtc, pool, random")
    one_line_error(*_refused("judge", "cranfield", "--simulate", "--budget", "-1"), "--budget")
    one_line_error(*_refused("judge", "--simulate"), "name a collection")
    one_line_error(*_refused("judge", "no-such-collection", "--simulate"), "no-such-collection")


@needs_cranfield
def test_a_studied_system_or_engine_mode_decides_within_its_own_knobs(results_root):
    for sub in ("presets/zeus", "engines/qdrant-rrf"):
        dst = results_root / "transfer" / "en" / sub / "best.json"
        dst.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(ROOT / "results" / "transfer" / "en" / sub / "best.json", dst)
    env = {"RRFBENCH_RESULTS": str(results_root)}
    code, out, err = console("judge", "cranfield", "--simulate", "-p", "qdrant-rrf", "--budget",
                             "30", "--json", env=env)
    assert code == 0, err
    row = json.loads(out)
    assert row["current"] == "qdrant-rrf k=2, vector_weight=1.0, keyword_weight=1.0, prefetch_limit=10"
    assert row["judgments"] == 30 and "without cranfield" in row["prior"]
    # the team's own current values (--set) replace the shipped ones as "current"
    code, out, err = console("judge", "cranfield", "--simulate", "-p", "zeus", "--set", "top_k=10",
                             "--budget", "0", "--json", env=env)
    assert code == 0, err
    row = json.loads(out)
    assert "top_k=10" in row["current"] and "your --set" in row["prior"]


def test_wrong_system_arguments_get_one_line():
    one_line_error(*_refused("judge", "cranfield", "--simulate", "--set", "k=3"), "--set", "-p")
    one_line_error(*_refused("judge", "cranfield", "--simulate", "-p", "nosuch"), "nosuch")
    one_line_error(*_refused("judge", "cranfield", "--simulate", "-p", "zeus", "--set", "k=3"),
                   "no knob 'k'")


def test_the_readme_headline_is_the_committed_simulation_table():
    """The README's judging headlines (free fusion; every fusion: free fusion, the studied
    systems and the engine modes) say what the committed summaries hold, and the issue's bound
    holds in them: with the sampled design, judgments never cause a loss of more than 0.01
    nDCG@10 against the current constants, at any budget (a loss the advice alone already had
    may remain)."""
    import pandas as pd

    from rrfbench.workflows.judging_table import headline

    text = " ".join((ROOT / "README.md").read_text().split())
    for sub in ("", "all/"):
        s = pd.read_json(ROOT / "results" / "judging" / "en" / sub / "summary.json")
        assert headline(s) in text, sub
        sampled = s[(s["method"] == "sample") & (s["judge"] == "qrels")]
        assert len(sampled) == 6 and (sampled["caused"] == 0).all(), sub
    by = pd.read_csv(ROOT / "results" / "judging" / "en" / "all" / "by_system.csv")
    assert len(by) == 1 + 4 + 19 and (by.collections == 9).all()
    assert by.caused_any_budget.sum() == 0


def test_the_team_s_current_fusion_is_the_current_constants(tiny_beir, tmp_path):
    """``judge --current``: the fusion a team runs today replaces RRF k=60 as the current
    constants, and without judgments it stays (the suite measured its change against RRF k=60);
    a wrong one is one line, exit 2, nothing written."""
    from rrfbench.workflows.judge import candidates, parse_current

    c = candidates("en", "teamcoll", current="rrf k=20 w=0,0.3,0.7")
    assert c.current["label"] == "rrf k=20 w=0,0.3,0.7" and c.current["k"] == [20.0] * 3
    assert c.prior_take is False and "your --current" in c.source
    assert parse_current("convex minmax w=0.2,0.3,0.5 missing=zero")["method"] == "convex"
    env = {"RRFBENCH_RESULTS": str(tmp_path / "results")}
    code, out, err = console("judge", str(tiny_beir), "--current", "rrf k=20 w=0,0.3,0.7",
                             "--budget", "0", "--json", "--sheet", str(tmp_path / "s.tsv"), env=env)
    assert code == 0, err
    for bad, says in (("rrf k=60 w=0.3,0.7", "2 values of w for 3 streams"),
                      ("rrf x=1", "unknown key 'x'"), ("best", "'best'")):
        one_line_error(*console("judge", str(tiny_beir), "--current", bad, "--sheet",
                                str(tmp_path / "t.tsv"), env=env)[::2], "--current", says)
    assert not (tmp_path / "t.tsv").exists()
