"""report.md reads result objects and says what was measured, how, and what it means."""

from rrfbench.outputs.report import presets_section, sweep_section, write_report
from rrfbench.results.dataset import StudiedSystems
from tests.outputs.test_exporters import NEXUS, SWEEP_BEST


def test_sweep_section_states_protocol_numbers_and_verdict():
    text = sweep_section(SWEEP_BEST, {"k curves": "k_curves.png"})
    assert "tuned on split 'train', evaluated on split 'test'" in text
    assert "**0.7100**" in text and "[0.6700, 0.7500]" in text
    assert "beats both baselines" in text and "![k curves](k_curves.png)" in text
    assert "significant at 0.05 against: best single run, RRF k=60 equal weights" in text


def test_presets_section_lists_fidelity():
    text = presets_section(StudiedSystems("scifact", (NEXUS,)))
    assert "| nexusai |" in text and "semanticWeight=1.5" in text
    assert "train -> test" in text


def test_write_report_orders_sections(tmp_path):
    write_report(tmp_path, {"presets": "## P\n", "sweep": "## S\n", "retrievers": "## R\n"})
    text = (tmp_path / "report.md").read_text()
    assert text.index("## R") < text.index("## S") < text.index("## P")
    write_report(tmp_path, {"sweep": "## S2\n"})  # one section regenerated, others kept
    text = (tmp_path / "report.md").read_text()
    assert "## S2" in text and "## P" in text and "## S\n" not in text


def test_committed_retriever_tables_hold_nothing_a_rerun_changes():
    """A fresh clone that retrieves its runs anew writes the same retrievers.json and report
    section: no retrieval times, no cache state (they are printed, and kept in the ignored
    demo_timing.json)."""
    import json

    from tests.conftest import ROOT

    files = sorted((ROOT / "results").glob("*/retrievers.json"))
    assert files
    for f in files:
        assert all({"retrieve_s", "cached"}.isdisjoint(row) for row in json.loads(f.read_text())), f
        md = f.with_name("report.retrievers.md")
        if md.exists():
            assert "retrieve_s" not in md.read_text() and "cached" not in md.read_text(), md
