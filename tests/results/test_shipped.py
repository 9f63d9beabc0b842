"""The suite's advice shipped with the package: the same as the committed results, and what
``judge`` reads from a team's folder, where no results of the suite exist."""

import gzip
import json

from rrfbench.results.shipped import bundle_path, collect, shipped
from tests.conftest import ROOT
from tests.test_cli import console


def test_the_shipped_advice_is_the_committed_suite_results():
    """Run ``python -m rrfbench.results.shipped`` (``make advice``) after a suite result
    changes; this fails until then."""
    got = json.loads(gzip.decompress(bundle_path("en").read_bytes()))
    assert got == collect(ROOT / "results", "en")
    assert {"best.json", "presets/titan/best.json", "engines/qdrant-rrf/best.json"} <= set(got)
    r = shipped("en", "presets/zeus/best.json")
    assert r.preset == "zeus" and shipped("en", "presets/nosuch/best.json") is None


def test_judge_works_from_a_team_folder_with_no_suite_results(tiny_beir, tmp_path):
    team = tmp_path / "team"
    team.mkdir()
    env = {"RRFBENCH_RESULTS": str(team / "results")}
    code, out, err = console("judge", str(tiny_beir), "--sheet", str(team / "next.tsv"), env=env)
    assert code == 0, err
    assert (team / "next.tsv").read_text().startswith("query_id\tdoc_id\tgrade")
    code, out, err = console("judge", str(tiny_beir), "-p", "titan", "--sheet",
                             str(team / "titan.tsv"), env=env)
    assert code == 0, err
    assert not (team / "results" / "transfer").exists()     # nothing of the suite written there
