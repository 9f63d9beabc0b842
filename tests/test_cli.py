"""The CLI as a user runs it: the real console script in a subprocess, right and wrong arguments.

Rule under test: bad input or arguments print one line ``error: ...`` and exit 2; nothing ends
in a traceback (``--debug`` shows one). The hypothesis test feeds random argv lists to every
command in-process (the same ``main`` the console script calls).
"""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rrfbench.cli import main
from tests.conftest import needs_cranfield

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = shutil.which("rrfbench") or str(Path(sys.executable).parent / "rrfbench")


def console(*args, env=None, timeout=300):
    """Run the installed console script; returns (exit code, stdout, stderr)."""
    p = subprocess.run([SCRIPT, *args], capture_output=True, text=True, timeout=timeout,
                       env={**os.environ, **(env or {})}, stdin=subprocess.DEVNULL)
    return p.returncode, p.stdout, p.stderr


def one_line_error(code, err, *needles):
    assert code == 2, err
    lines = [ln for ln in err.strip().splitlines() if ln]
    assert len(lines) == 1, err
    assert lines[0].startswith("error: ") and "Traceback" not in err
    for n in needles:
        assert n in lines[0], (n, lines[0])


def in_process(args, capsys):
    with pytest.raises(SystemExit) as ei:
        main(list(args))
    out = capsys.readouterr()
    return ei.value.code, out.out, out.err


def test_console_script_is_installed():
    assert Path(SCRIPT).exists(), "pip install -e . should install the rrfbench script"
    code, out, _ = console("--help")
    assert code == 0 and "sweep" in out and "fuse" in out


@needs_cranfield
@pytest.mark.parametrize("args, needles", [
    (["fuse", "cranfield", "--bogus"], ["No such option: --bogus"]),
    (["fuse", "cranfield", "--method", "foo"], ["--method: 'foo' is not one of rrf, convex"]),
    (["fuse", "cranfield", "--depth", "abc"], ["--depth: 'abc' is not a whole number"]),
    (["fuse", "cranfield", "--weights", "1,2,3"], ["--weights: expected 2 values"]),
    (["fuse", "cranfield", "--rank-base", "2"], ["--rank-base: '2' is not one of 0, 1"]),
    (["fuse", "cranfield", "--limit", "x"], ["Invalid value for '--limit'"]),
    (["preset", "cranfield", "-p", "zeus", "--set", "top_k=abc"],
     ["--set top_k: 'abc' is not a whole number"]),
    (["preset", "cranfield", "-p", "nope"], ["--preset: unknown preset 'nope'"]),
    (["retrieve", "cranfield", "-r", "bm25:spanish"], ["'bm25' has no variant 'spanish'"]),
    (["retrieve", "cranfield", "-r", "bm25", "--hops", "2"], ["--hops: no retriever takes it"]),
    (["preset", "cranfield", "-p", "zeus", "--limit", "10"], ["Zeus's result limit is top_k"]),
    (["retrieve", "cranfield", "-r", "fts5:nope"], ["variants: fts5:or_tokens"]),
    (["sweep", "cranfield", "--eval-split", "dev"], ["--eval-split: no split 'dev'"]),
    (["sweep", "cranfield", "--method", "rrf", "--k", "a,b"], ["--k: expected comma-separated"]),
    (["export", "/nonexistent/best.json", "--to", "json"], ["file not found"]),
    (["nosuchcommand"], ["No such command"]),
    (["sweep"], ["give a DATASET or --suite NAME"]),
    (["sweep", "cranfield", "--suite", "small"], ["give a DATASET or --suite NAME"]),
    (["sweep", "--suite", "nope"], ["--suite: unknown suite 'nope'; known: en, small, zh"]),
    (["sweep", "--suite", "small", "--objective", "median"], ["--objective: 'median' is not one of"]),
    (["sweep", "--suite", "small", "--folds", "3"], ["a suite's splits come from"]),
    (["sweep", "cranfield", "--rule", "1se"], ["use them with --suite"]),
    (["tune", "--suite", "small"], ["--preset: give the studied system"]),
    (["fuse", "cranfield", "--config", "/nonexistent.json"], ["file not found"]),
    (["export", str(ROOT / "pyproject.toml"), "--to", "json"], ["not valid JSON"]),
    (["export", str(ROOT / "results" / "baselines.json"), "--to", "json"], ["older rrfbench"]),
    (["retrieve", "cranfield", "--workers", "0"], ["--workers: 0 must be >= 1"]),
    (["sweep", "cranfield", "--workers", "2", "--scheduler", "tcp://127.0.0.1:1"],
     ["give --scheduler or --workers, not both"]),
    (["compare", str(ROOT / "results" / "cranfield" / "best.json"), "/nonexistent.json"],
     ["file not found"]),
])
def test_wrong_arguments_one_line_exit_2(args, needles):
    one_line_error(*console(*args)[::2], *needles)


def test_bad_files_one_line(tmp_path):
    binary = tmp_path / "run.trec"
    binary.write_bytes(b"1 Q0 d 1 1.0 x\n\x00\x01\x02")
    latin = tmp_path / "latin.trec"
    latin.write_bytes("1 Q0 caf\xe9 1 1.0 x\n".encode("latin-1"))
    for path in (binary, latin):
        code, _, err = console("evaluate", str(path), "-d", str(ROOT / "no" / "dataset"))
        one_line_error(code, err)  # the dataset is checked first; now give a real one
    ds = tmp_path / "tiny"
    _tiny(ds)
    for path, needle in ((binary, ":2: binary data"), (latin, ":1: not UTF-8 text")):
        code, _, err = console("evaluate", str(path), "-d", str(ds))
        one_line_error(code, err, str(path) + needle)


def _tiny(d: Path):
    (d / "qrels").mkdir(parents=True)
    (d / "corpus.jsonl").write_text('{"_id": "d1", "title": "", "text": "green apples"}\n'
                                    '{"_id": "d2", "title": "", "text": "red cars"}\n')
    (d / "queries.jsonl").write_text('{"_id": "q1", "text": "apples"}\n{"_id": "q2", "text": "cars"}\n')
    (d / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq1\td1\t1\nq2\td2\t1\n")


def test_empty_and_wrong_split_runs_warn_and_report_coverage(tmp_path):
    ds = tmp_path / "tiny"
    _tiny(ds)
    empty = tmp_path / "empty.trec"
    empty.write_text("")
    code, out, err = console("evaluate", str(empty), "-d", str(ds), "--json")
    assert code == 0, err
    assert json.loads(out)["coverage"]["answered"] == 0
    warn = [ln for ln in err.splitlines() if ln.startswith("warning: ")]
    assert any("holds no result lines" in w for w in warn)
    assert any("the run is empty" in w for w in warn)
    other = tmp_path / "other.trec"
    other.write_text("q9 Q0 d1 1 1.0 x\n")  # answers no judged query
    code, out, err = console("evaluate", str(other), "-d", str(ds))
    assert code == 0 and "answers only 0 of 2 judged queries" in err and "coverage: 0 of 2" in out
    bom = tmp_path / "bom.trec"
    bom.write_bytes(b"\xef\xbb\xbfq1 Q0 d1 1 1.0 x\r\nq2 Q0 d2 1 1.0 x\r\n")
    code, out, err = console("evaluate", str(bom), "-d", str(ds), "--json")
    assert code == 0 and json.loads(out)["metrics"]["nDCG@10"] == 1.0 and "warning" not in err


def test_debug_shows_traceback(tiny_beir):
    with open(tiny_beir / "corpus.jsonl", "a") as fh:
        fh.write("{broken\n")
    code, _, err = console("retrieve", str(tiny_beir), "-r", "bm25")
    one_line_error(code, err, "corpus.jsonl:5:", "not valid JSON")
    code, _, err = console("--debug", "retrieve", str(tiny_beir), "-r", "bm25")
    assert code != 0 and "Traceback" in err


@needs_cranfield
def test_retrieve_then_evaluate_json(results_root):
    code, out, err = console("retrieve", "cranfield", "-r", "bm25",
                             env={"RRFBENCH_RESULTS": str(results_root)})
    assert code == 0, err
    assert "bm25" in out and "nDCG@10" in out and "225/225" in out
    run_file = results_root / "runs" / "cranfield" / "test" / "bm25.trec.gz"
    manifest = json.loads(run_file.with_name("bm25.json").read_text())
    assert manifest["retriever"] == "bm25" and manifest["params"]["k1"] == 1.2
    assert manifest["score_floor"] == 0.0 and manifest["versions"]["bm25s"] != "missing"
    code, out, _ = console("evaluate", str(run_file), "--dataset", "cranfield", "-m", "ndcg@10",
                           "-m", "recall@100", "--json")
    obj = json.loads(out)
    assert set(obj) == {"dataset", "split", "run", "n_queries", "coverage", "metrics"}
    assert obj["n_queries"] == 225 and set(obj["metrics"]) == {"nDCG@10", "R@100"}
    assert obj["coverage"]["fraction"] == 1.0
    assert 0.3 < obj["metrics"]["nDCG@10"] < 0.6


def test_tables_keep_full_text_off_a_terminal(tmp_path):
    ds = tmp_path / "a-dataset-with-a-rather-long-name-for-the-table"
    _tiny(ds)
    code, out, err = console("retrieve", str(ds), "-r", "fts5:and_tokens", "-m", "nDCG@10")
    assert code == 0, err
    assert "fts5-and_tokens" in out and "…" not in out


# --------------------------------------------------------------------------- fuzzing
COMMANDS = ["retrieve", "evaluate", "fuse", "sweep", "demo", "preset", "tune",
            "export", "regress", "presets"]
OPTIONS = ["-r", "--retriever", "--split", "--depth", "--force", "-m", "--metric", "-d",
           "--dataset", "--json", "--k", "--weights", "--rank-base", "--limit", "--method",
           "--norm", "--missing", "-o", "--output", "--weight-step", "--per-run-k",
           "--tune-split", "--eval-split", "--folds", "--run-depth", "--out", "--no-progress",
           "-p", "--preset", "--set", "--prior", "--to", "--baselines", "--tolerance", "--update",
           "--suite", "--objective", "--rule", "--config", "--which",
           "--help", "--bogus", "-x"]
VALUES = ["0", "1", "-1", "2.5", "1e309", "nan", "inf", "abc", "", " ", "60,20", "1,2,3",
          "0.7,0.3", "all", "bm25", "fts5:phrase", "dense:cuda", "rank_bm25:jieba", "bm25:x",
          "fts5;granularity=span", "graph;seed=bm25", "entity", "--granularity", "--seed",
          "--hops", "--streams", "full", "span",
          "ndcg@10", "bleu@4", "rrf", "convex", "minmax", "tmm", "zero", "test", "train",
          "top_k=abc", "k=2", "nexusai", "zeus", "json", "titan", "/nonexistent/x",
          "/dev/null", "/bin/ls", "naïve", "日本語", "\u200b", "--", "-", "small", "nope", "macro",
          "1se", "recommended", str(ROOT / "pyproject.toml")]


@st.composite
def argvs(draw, tiny_path, junk_path):
    cmd = draw(st.sampled_from(COMMANDS))
    # demo, tune, sweep and regress would do real work on a resolvable dataset: keep them to
    # paths and names that fail before any work
    datasets = ["nosuchdataset", junk_path] + ([] if cmd in ("demo", "tune", "sweep", "regress")
                                               else [tiny_path])
    # demo's dataset defaults to scifact, and --suite without a dataset would start a real
    # suite sweep: the commands that take a dataset always get one (so --suite is refused)
    takes_dataset = cmd in ("demo", "sweep", "tune", "retrieve", "fuse", "preset")
    parts = [draw(st.sampled_from(datasets))] if takes_dataset or draw(st.booleans()) else []
    tokens = st.one_of(st.sampled_from(OPTIONS), st.sampled_from(VALUES + datasets),
                       st.text(max_size=8))
    parts += draw(st.lists(tokens, max_size=6))
    if cmd == "regress":
        parts = [p for p in parts if p not in ("--update",)] + ["--baselines", junk_path]
    if cmd in ("retrieve", "fuse", "preset") and "-r" not in parts:
        parts += ["-r", "bm25"]
    return [cmd, *parts]


def test_random_argv_never_traceback(tmp_path_factory):
    base = tmp_path_factory.mktemp("fuzz")
    tiny = base / "tiny"
    _tiny(tiny)
    junk = base / "junk.json"
    junk.write_bytes(b"\x00\xff not a dataset")
    seen = []

    @settings(max_examples=int(os.environ.get("RRFBENCH_FUZZ_EXAMPLES", "120")), deadline=None,
              suppress_health_check=list(HealthCheck))
    @given(argvs(str(tiny), str(junk)))
    def check(argv):
        import contextlib
        import io

        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                main(argv)
                code = 0
            except SystemExit as exc:
                code = exc.code
        seen.append(code)
        assert code in (0, 1, 2), (argv, code, err.getvalue())
        assert "Traceback" not in err.getvalue(), (argv, err.getvalue())
        assert "internal error" not in err.getvalue(), (argv, err.getvalue())

    check()
    assert 2 in seen and 0 in seen


def test_datasets_command_lists_the_search_path(tmp_path):
    ds = tmp_path / "tiny"
    _tiny(ds)
    code, out, err = console("datasets", env={"RRFBENCH_DATA": str(tmp_path)})
    assert code == 0, err
    assert "tiny" in out and "test (2 q, 2 j)" in out


def test_version_has_one_home():
    from importlib import metadata

    import rrfbench
    from rrfbench._version import __version__

    assert rrfbench.__version__ == __version__ == metadata.version("rrfbench")
    text = (ROOT / "pyproject.toml").read_text()
    assert 'attr = "rrfbench._version.__version__"' in text and '\nversion = "' not in text
