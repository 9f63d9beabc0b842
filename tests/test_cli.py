"""The CLI: one-line errors with exit code 2, JSON output, and the retrieve/evaluate flow."""

import json
import subprocess
import sys

import pytest

from rrfbench.cli import main
from tests.conftest import needs_cranfield


def run_cli(args, capsys):
    with pytest.raises(SystemExit) as ei:
        main(args)
    out = capsys.readouterr()
    return ei.value.code, out.out, out.err


def ok_cli(args, capsys):
    try:
        main(args)
        code = 0
    except SystemExit as exc:
        code = exc.code
    out = capsys.readouterr()
    return code, out.out, out.err


def _one_line_error(code, err, *needles):
    assert code == 2
    lines = [ln for ln in err.strip().splitlines() if ln]
    assert len(lines) == 1, err
    assert "Traceback" not in err
    for n in needles:
        assert n in lines[0], (n, lines[0])


@needs_cranfield
def test_bad_run_file_five_columns(tmp_path, capsys):
    p = tmp_path / "bad.trec"
    p.write_text("1 Q0 1 1 2.0 x\n1 Q0 2 2 1.0\n")
    code, _, err = run_cli(["evaluate", str(p), "--dataset", "cranfield"], capsys)
    _one_line_error(code, err, f"{p}:2:", "expected 6 columns")


@needs_cranfield
def test_bad_score_and_duplicate(tmp_path, capsys):
    p = tmp_path / "bad.trec"
    p.write_text("1 Q0 1 1 high x\n")
    code, _, err = run_cli(["evaluate", str(p), "--dataset", "cranfield"], capsys)
    _one_line_error(code, err, f"{p}:1:", "'high' is not a number")
    p.write_text("1 Q0 1 1 2.0 x\n1 Q0 1 2 1.0 x\n")
    code, _, err = run_cli(["evaluate", str(p), "--dataset", "cranfield"], capsys)
    _one_line_error(code, err, f"{p}:2:", "first seen on line 1")


@needs_cranfield
def test_bad_split_and_unknown_dataset(tmp_path, capsys):
    p = tmp_path / "ok.trec"
    p.write_text("1 Q0 1 1 2.0 x\n")
    code, _, err = run_cli(["evaluate", str(p), "--dataset", "cranfield", "--split", "dev"], capsys)
    _one_line_error(code, err, "no qrels split 'dev'", "available: test")
    code, _, err = run_cli(["evaluate", str(p), "--dataset", "nosuch"], capsys)
    _one_line_error(code, err, "unknown dataset 'nosuch'", "cranfield")


def test_bad_corpus_line_via_cli(tiny_beir, capsys):
    with open(tiny_beir / "corpus.jsonl", "a") as fh:
        fh.write("{broken\n")
    code, _, err = run_cli(["retrieve", str(tiny_beir), "-r", "bm25"], capsys)
    _one_line_error(code, err, "corpus.jsonl:5:", "not valid JSON")


def test_debug_shows_traceback(tiny_beir):
    with open(tiny_beir / "corpus.jsonl", "a") as fh:
        fh.write("{broken\n")
    proc = subprocess.run([sys.executable, "-m", "rrfbench.cli", "--debug", "retrieve",
                           str(tiny_beir), "-r", "bm25"], capture_output=True, text=True)
    assert proc.returncode != 0 and "Traceback" in proc.stderr


@needs_cranfield
def test_retrieve_then_evaluate_json(capsys, results_root):
    code, out, err = ok_cli(["retrieve", "cranfield", "-r", "bm25"], capsys)
    assert code == 0, err
    assert "bm25" in out and "nDCG@10" in out
    run_file = results_root / "runs" / "cranfield" / "test" / "bm25.trec.gz"
    manifest = json.loads(run_file.with_name("bm25.json").read_text())
    assert manifest["retriever"] == "bm25" and manifest["params"]["k1"] == 1.2
    assert manifest["fingerprint"] and manifest["versions"]["bm25s"] != "missing"
    code, out, _ = ok_cli(["evaluate", str(run_file), "--dataset", "cranfield", "-m", "ndcg@10",
                           "-m", "recall@100", "--json"], capsys)
    obj = json.loads(out)
    assert set(obj) == {"dataset", "split", "run", "n_queries", "metrics"}
    assert obj["n_queries"] == 225 and set(obj["metrics"]) == {"nDCG@10", "R@100"}
    assert 0.3 < obj["metrics"]["nDCG@10"] < 0.6


def test_datasets_command(capsys):
    code, out, _ = ok_cli(["datasets"], capsys)
    assert code == 0
