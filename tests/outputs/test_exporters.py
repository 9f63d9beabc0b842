"""Every export format parses back to the same numbers and carries provenance."""

import ast
import json
import os
import re
import shutil
import subprocess
import tomllib

import pytest
import yaml

from rrfbench._version import __version__
from rrfbench.core.errors import InputError, ValidationWarning
from rrfbench.outputs.exporters import constants, formats, render
from rrfbench.results.dataset import PresetResult, SweepResult
from rrfbench.results.values import Comparison, Estimate, Protocol
from rrfbench.systems.presets import get_preset
from tests.conftest import ROOT

PROV = {"dataset": "scifact", "fingerprint": "abc123", "rrfbench": "0.2.0", "git_commit": "deadbeef"}
PROTO = Protocol("holdout", "train", "test", 0, 0, "default")
EST = Estimate(0.71, (0.67, 0.75), 300)
CMP = Comparison("x", 0.6, (0.5, 0.7), 0.11, 0.01, 0.02)
SWEEP_BEST = SweepResult(
    dataset="scifact", fingerprint="abc123", runs=("bm25", "fts5", "dense"), metric="nDCG@10",
    protocol=PROTO, config={"method": "rrf", "k": [20.0, 20.0, 20.0], "weights": [0.3, 0.2, 0.5],
                            "depth": [None, None, None], "rank_base": 1, "norm": None,
                            "missing": None, "limit": None, "label": "rrf"},
    tuned=EST, tune_value=0.7, baselines={"best_single": CMP, "rrf60_equal": CMP},
    singles={"bm25": 0.6}, optimism={"rank_on_eval_grid": 1, "grid_size": 1, "best_on_eval": 0.71,
                                     "best_on_eval_label": "rrf", "gap": 0.0},
    grid_size=1, family_best={}, per_query={}, provenance=PROV)


def preset_best(name, config):
    p = get_preset(name)
    return PresetResult(preset=name, system=p.system, dataset="scifact", fingerprint="abc123",
                        metric="nDCG@10", protocol=PROTO, knobs=p.knob_table(),
                        streams=dict(p.streams),
                        shipped={"params": p.defaults(), "metrics": {"nDCG@10": 0.6, "R@100": 0.8}},
                        config=config, tuned=EST, tuned_metrics={"nDCG@10": 0.71, "R@100": 0.85},
                        vs_shipped=CMP, fidelity=tuple(f.to_json() for f in p.fidelity),
                        tune_value=0.7, grid_size=1, per_query={}, provenance=PROV)


NEXUS = preset_best("nexusai", {"semanticWeight": 1.5, "keywordWeight": 2.0, "RRF_K": 60})
TITAN = preset_best("titan", {"k": 20, "vector_weight": 0.7, "fts_weight": 0.3, "minScore": 0.01,
                              "dropoff": None})
ZEUS = preset_best("zeus", {"vector_weight": 0.8, "keyword_weight": 0.2, "top_k": 10,
                            "use_rerank": True, "bm25_available": True})
AIMEM = preset_best("ai-memory", {"vector": False, "entity_match": True, "graph": True, "k": 60})
pytestmark = pytest.mark.filterwarnings("ignore::rrfbench.core.errors.ValidationWarning")


def js_object(text: str) -> dict:
    """Evaluate an exported JS/TS object with node when available, else a strict parser."""
    body = re.search(r"export const \w+ = (\{.*\})( as const)?;\s*$", text, re.S).group(1)
    if shutil.which("node"):
        out = subprocess.run(["node", "-e", f"console.log(JSON.stringify({body}))"],
                             capture_output=True, text=True, check=True)
        return json.loads(out.stdout)
    strict = re.sub(r"([{,]\s*)([A-Za-z_]\w*)\s*:", r'\1"\2":', body)
    return json.loads(re.sub(r",(\s*[}\]])", r"\1", strict))


def python_constants(text: str) -> dict:
    tree = ast.parse(text)
    return {t.targets[0].id: ast.literal_eval(t.value) for t in tree.body if isinstance(t, ast.Assign)}


@pytest.mark.parametrize("best", [SWEEP_BEST, NEXUS, TITAN, ZEUS, AIMEM])
def test_generic_formats_roundtrip(best):
    want = json.loads(json.dumps(constants(best)))
    assert {k: v for k, v in json.loads(render(best, "json")).items() if k != "_provenance"} == want
    assert tomllib.loads(render(best, "toml")) == want
    assert yaml.safe_load(render(best, "yaml")) == want
    assert python_constants(render(best, "python")) == {k.upper(): v for k, v in want.items()}
    assert js_object(render(best, "js")) == want
    assert js_object(render(best, "ts")) == want
    for fmt in ("toml", "yaml", "python", "js", "ts"):
        assert "deadbeef" in render(best, fmt) and "abc123" in render(best, fmt)


def test_sweep_constants_shape():
    c = constants(SWEEP_BEST)
    assert c == {"method": "rrf", "k": 20.0, "rank_base": 1,
                 "weights": {"bm25": 0.3, "fts5": 0.2, "dense": 0.5}}


def test_nexusai_shapes():
    block = js_object(render(NEXUS, "nexusai"))
    assert block == {"RRF_K": 60, "SEMANTIC_WEIGHT": 1.5, "KEYWORD_WEIGHT": 2}
    assert "export const RETRIEVAL" in render(NEXUS, "nexusai")
    body = json.loads(render(NEXUS, "nexusai-settings"))
    assert body["semanticWeight"] == 1.5 and body["keywordWeight"] == 2
    assert any("abc123" in line for line in body["_provenance"])


def test_titan_shape_includes_trims_when_tuned():
    opts = js_object(render(TITAN, "titan"))
    assert opts == {"fusion": {"k": 20, "weights": {"vector": 0.7, "fts": 0.3}}, "minScore": 0.01}
    zero = preset_best("titan", TITAN.config | {"dropoff": 0.0})  # 0 is a setting, not "off"
    assert js_object(render(zero, "titan"))["dropoff"] == 0


def test_zeus_shapes():
    y = yaml.safe_load(render(ZEUS, "zeus-yaml"))
    assert y == {"top_k": 10, "vector_weight": 0.8, "keyword_weight": 0.2}
    assert python_constants(render(ZEUS, "zeus-python"))["RETRIEVAL_PARAMS"] == y


def test_aimemory_rust_consts():
    text = render(AIMEM, "ai-memory")
    consts = dict(re.findall(r"^pub const (\w+): \w+ = ([^;]+);$", text, re.M))
    assert consts == {"RRF_K": "60.0", "STREAM_VECTOR": "false", "STREAM_ENTITY_MATCH": "true",
                      "STREAM_GRAPH": "true"}
    assert text.startswith("// Tuned by rrfbench.")


def test_system_format_refuses_other_configs():
    with pytest.raises(InputError, match="needs a result of `rrfbench tune DATASET --preset nexusai`"):
        render(SWEEP_BEST, "nexusai")
    with pytest.raises(InputError, match=r"needs a result .*\(got preset 'zeus'\)"):
        render(ZEUS, "titan")
    with pytest.raises(InputError, match="unknown export format"):
        render(SWEEP_BEST, "xml")
    assert len(formats()) == 12 + 13   # generic, the studied systems', the engines'
    assert {"qdrant", "qdrant-python", "elasticsearch", "opensearch", "milvus", "weaviate",
            "lancedb", "vespa", "sqlite"} <= set(formats())


def test_single_collection_result_warns_and_says_so_in_the_file():
    with pytest.warns(ValidationWarning, match="validated on one collection only"):
        text = render(SWEEP_BEST, "yaml")
    assert "# validated on one collection only (scifact)" in text
    assert "not cross-validated on other collections" in render(NEXUS, "nexusai", warn=False)


GOLDEN = ROOT / "tests" / "golden" / "exports"
SYSTEM_SHAPES = {  # golden file -> (format, result)
    "nexusai": ("nexusai", NEXUS), "nexusai-settings": ("nexusai-settings", NEXUS),
    "titan": ("titan", TITAN),
    "titan-every-option": ("titan", preset_best("titan", {
        "k": 10, "vector_weight": 1.0, "fts_weight": 0.5, "overfetch": 5, "minSimilarity": 0.3,
        "minScore": None, "dropoff": 0.5})),
    "zeus-yaml": ("zeus-yaml", ZEUS), "zeus-python": ("zeus-python", ZEUS),
    "zeus-yaml-threshold": ("zeus-yaml", preset_best("zeus", ZEUS.config | {
        "score_threshold": 0.25})),
    "nexusai-implied-k": ("nexusai", preset_best("nexusai", {"semanticWeight": 1.0,
                                                             "keywordWeight": 0.5})),
    "ai-memory": ("ai-memory", AIMEM),
    "ai-memory-other-constants": ("ai-memory", preset_best("ai-memory", {
        "vector": True, "entity_match": False, "graph": False, "k": 20})),
    "ai-memory-implied-constants": ("ai-memory", preset_best("ai-memory", {"vector": True})),
}


@pytest.mark.parametrize("name", sorted(SYSTEM_SHAPES))
def test_system_files_are_exactly_the_reviewed_ones(name):
    """Each system's file, byte for byte, as reviewed against that system's own config file
    (comments, file path, key names, number spelling): ``tests/golden/exports/<name>.txt``.
    After a deliberate change, rewrite them with RRFBENCH_UPDATE_GOLDEN=1 and review the diff."""
    fmt, best = SYSTEM_SHAPES[name]
    text = render(best, fmt).replace(__version__, "<version>")
    path = GOLDEN / f"{name}.txt"
    if os.environ.get("RRFBENCH_UPDATE_GOLDEN"):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    assert text == path.read_text()
