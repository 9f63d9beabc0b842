"""The metric-regression gate: green on the committed baselines, red when reality is worse."""

import json
from pathlib import Path

import pytest

from rrfbench.cli import main
from rrfbench.errors import InputError
from rrfbench.regress import check, load_baselines, update
from tests.conftest import needs_cranfield

BASELINES = Path(__file__).resolve().parents[1] / "results" / "baselines.json"


def _exit(args):
    try:
        main(args)
    except SystemExit as exc:
        return exc.code
    return 0


@needs_cranfield
def test_committed_baselines_pass(capsys):
    """Everything CI can afford is recomputed (dense scifact is SKIP unless its embeddings are
    cached on this machine); nothing may be worse than the committed numbers."""
    code = _exit(["regress", "--baselines", str(BASELINES)])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "FAIL=0" in out and "OK=" in out


@needs_cranfield
def test_better_than_reality_fails(tmp_path, capsys):
    data = load_baselines(BASELINES)
    cheap = [e for e in data["entries"] if e["dataset"] == "cranfield"
             and e.get("spec") in ("bm25", "fts5")]
    assert len(cheap) == 2
    cheap[0]["metrics"]["nDCG@10"] += 0.05  # pretend we used to be much better
    path = tmp_path / "baselines.json"
    path.write_text(json.dumps({"tolerance": 0.005, "entries": cheap}))
    assert _exit(["regress", "--baselines", str(path)]) == 1
    assert "FAIL=1" in capsys.readouterr().out
    # within tolerance is OKISH, not FAIL; better than baseline is IMPROVED, not FAIL
    cheap[0]["metrics"]["nDCG@10"] -= 0.05 - 0.003
    cheap[1]["metrics"]["nDCG@10"] -= 0.05
    rows = check({"entries": cheap})
    status = {(r["system"], r["metric"]): r["status"] for r in rows}
    assert status[("bm25", "nDCG@10")] == "OKISH"
    assert status[("fts5", "nDCG@10")] == "IMPROVED"
    new, diff = update({"entries": cheap}, rows)
    assert len(diff) == 2 and check(new) and all(r["status"] == "OK" for r in check(new))


def test_missing_baselines_file_is_clean_error(tmp_path, capsys):
    assert _exit(["regress", "--baselines", str(tmp_path / "none.json")]) == 2
    assert "none.json: file not found" in capsys.readouterr().err


def test_committed_file_covers_retrievers_presets_and_tuned():
    data = load_baselines(BASELINES)
    kinds = {("spec" in e, "preset" in e, "config" in e) for e in data["entries"]}
    assert kinds == {(True, False, False), (False, True, False), (False, False, True)}
    assert {e["dataset"] for e in data["entries"]} == {"cranfield", "scifact"}
    with pytest.raises(InputError, match="not valid JSON"):
        load_baselines(Path(__file__))
