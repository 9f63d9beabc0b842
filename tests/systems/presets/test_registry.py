"""The registry: one module per system, found by scanning the package; grids within ranges."""

import importlib
import sys
import textwrap

import pytest

from rrfbench.core.errors import InputError
from rrfbench.systems.presets import PRESETS, export_formats, get_preset
from tests.conftest import needs_cranfield


def test_four_systems_registered_with_their_exports():
    assert set(PRESETS) == {"nexusai", "titan", "ai-memory", "zeus"}
    assert set(export_formats()) == {"nexusai", "nexusai-settings", "titan", "zeus-yaml",
                                     "zeus-python", "ai-memory"}
    with pytest.raises(InputError, match="known: ai-memory, nexusai, titan, zeus"):
        get_preset("nope")


def test_grids_respect_ranges_and_fidelity_is_declared():
    for p in PRESETS.values():
        grid = p.grid()
        assert len(grid) > 1
        for params in grid:
            p.check(params)
        statuses = {f.status for f in p.fidelity}
        assert statuses <= {"exact", "assumption", "not modelled"} and "exact" in statuses


def test_a_fifth_system_is_one_file(tmp_path, monkeypatch):
    """One module plus its entry in the registry adds a system, export shape included."""
    import rrfbench.systems.presets as pkg

    mod = tmp_path / "fifth.py"
    mod.write_text(textwrap.dedent('''
        from rrfbench.systems.presets.base import EXACT, Fidelity, Knob, Preset, ranked

        class Fifth(Preset):
            def fuse_query(self, lists, params, limit, prior=None):
                scores = {}
                for rank, d in enumerate(lists.get("only", []), 1):
                    scores[d] = params["w"] / (10 + rank)
                return ranked(scores, "docid")[:limit]

        PRESET = Fifth(name="fifth", system="a test system", streams={"only": "bm25"},
                       knobs=(Knob("w", 1.0, 0.0, 2.0, (0.5, 1.0)),),
                       fidelity=(Fidelity("everything", EXACT),),
                       exports={"fifth-json": lambda params, prov: str(params)})
    '''))
    monkeypatch.syspath_prepend(str(tmp_path))
    sys.modules.pop("fifth", None)
    fifth = importlib.import_module("fifth")
    found = pkg.registry([*PRESETS.values(), fifth.PRESET])
    assert "fifth" in found and len(found) == 5
    assert found["fifth"].fuse_query({"only": ["b", "a"]}, {"w": 1.0}, 10)[0] == ("b", 1 / 11)
    monkeypatch.setattr(pkg, "PRESETS", found)
    assert get_preset("fifth") is fifth.PRESET and "fifth-json" in export_formats()
    with pytest.raises(RuntimeError, match="two presets named 'fifth'"):
        pkg.registry([fifth.PRESET, fifth.PRESET])
    sys.modules.pop("fifth", None)
    importlib.invalidate_caches()


@needs_cranfield
def test_cranfield_presets_run(cranfield):
    from rrfbench.core.evaluation import evaluate
    from rrfbench.workflows.dataset import preset_runs

    for name in ("nexusai", "zeus"):
        p = PRESETS[name]
        runs = preset_runs(p, cranfield, "test")
        assert 0.2 < evaluate(p.run(runs), cranfield.qrels("test"))["nDCG@10"] < 0.6
