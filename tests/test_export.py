"""Every export format parses back to the same numbers and carries provenance."""

import ast
import json
import re
import shutil
import subprocess
import tomllib

import pytest
import yaml

from rrfbench.errors import InputError
from rrfbench.export import FORMATS, constants, render

PROV = {"dataset": "scifact", "fingerprint": "abc123", "rrfbench": "0.1.0", "git_commit": "deadbeef"}
EVAL = {"split": "test", "value": 0.71, "ci95": [0.67, 0.75]}
SWEEP_BEST = {"dataset": "scifact", "runs": ["bm25", "fts5", "dense"], "metric": "nDCG@10",
              "tune": {"split": "train"}, "eval": EVAL, "provenance": PROV,
              "config": {"method": "rrf", "k": [20.0, 20.0, 20.0], "weights": [0.3, 0.2, 0.5],
                         "depth": [None, None, None], "rank_base": 1, "norm": None,
                         "missing": None, "limit": None}}


def preset_best(name, config):
    return {"preset": name, "metric": "nDCG@10", "tune": {"split": "train"}, "eval": EVAL,
            "provenance": PROV, "config": config}


NEXUS = preset_best("nexusai", {"semanticWeight": 1.5, "keywordWeight": 2.0, "RRF_K": 60})
TITAN = preset_best("titan", {"k": 20, "vector_weight": 0.7, "fts_weight": 0.3, "minScore": 0.01,
                              "dropoff": 0.0})
ZEUS = preset_best("zeus", {"vector_weight": 0.8, "keyword_weight": 0.2, "top_k": 10,
                            "use_rerank": True, "bm25_available": True})
AIMEM = preset_best("ai-memory", {"fts5": True, "vector": False, "k": 60})


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


def test_zeus_shapes():
    y = yaml.safe_load(render(ZEUS, "zeus-yaml"))
    assert y == {"top_k": 10, "vector_weight": 0.8, "keyword_weight": 0.2}
    assert python_constants(render(ZEUS, "zeus-python"))["RETRIEVAL_PARAMS"] == y


def test_aimemory_rust_consts():
    text = render(AIMEM, "ai-memory")
    consts = dict(re.findall(r"^pub const (\w+): \w+ = ([^;]+);$", text, re.M))
    assert consts == {"RRF_K": "60.0", "STREAM_FTS5": "true", "STREAM_VECTOR": "false"}
    assert text.startswith("// Tuned by rrfbench.")


def test_system_format_refuses_other_configs():
    with pytest.raises(InputError, match="needs a best.json"):
        render(SWEEP_BEST, "nexusai")
    with pytest.raises(InputError, match="unknown export format"):
        render(SWEEP_BEST, "xml")
    assert len(FORMATS) == 12
