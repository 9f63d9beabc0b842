"""Shared fixtures. Real data comes from $RRFBENCH_DATA (../shared/datasets in CI).

Runs and indexes go to a per-session temporary results folder; dense embeddings use the
per-machine cache ($RRFBENCH_CACHE), as in normal use, so they are computed once per machine.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
if not os.environ.get("RRFBENCH_DATA") and (ROOT.parent / "shared" / "datasets").is_dir():
    os.environ["RRFBENCH_DATA"] = str(ROOT.parent / "shared" / "datasets")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
if os.environ.get("PYTEST_XDIST_WORKER"):
    # the test workers already use every core: fits and preset grids in this process (the
    # tests that check other processes give the same numbers set RRFBENCH_JOBS themselves)
    os.environ.setdefault("RRFBENCH_JOBS", "1")
    # and one torch thread each for encoding (inherited by the README's and notebooks'
    # processes): two workers at torch's default threads oversubscribe 2 cores (1.30x slower
    # on a Zen 3 EPYC, benchmarks/bench_encode_workers.py), with the same bits either way
    os.environ.setdefault("RRFBENCH_TORCH_THREADS", "1")


# The longest test files first (about 190, 165 and 75 s on 2 cores): under `--dist worksteal` the
# first worker starts on them at once and the second steals the short tests from the end of the
# queue, so no long test starts last and leaves one core idle while it finishes.
LONGEST_FIRST = ("tests/test_readme.py", "tests/test_notebooks.py", "tests/workflows/test_regress.py")


# With an empty embedding cache this test encodes cranfield (~340 s on a 2-core AVX2 EPYC) and
# every other cranfield dense user waits on its lock. pytest-xdist's worksteal hands the first
# half of the list to one worker and the rest to the other, so it opens the second half: the two
# long tests (the README commands, cranfield's encoding) start together, one per worker. Left to
# the collection order it once started 136 s late, behind a test that then waited on it: 15:48
# from nothing instead of 13:58-14:36.
SECOND_HALF_FIRST = "tests/retrievers/test_dense.py::test_cranfield_dense_run_and_embedding_cache"


def pytest_collection_modifyitems(config, items):
    def rank(item):
        path = item.nodeid.split("::")[0]
        return LONGEST_FIRST.index(path) if path in LONGEST_FIRST else len(LONGEST_FIRST)

    items.sort(key=rank)  # stable: the collection order otherwise
    at = [i for i, item in enumerate(items) if item.nodeid == SECOND_HALF_FIRST]
    if at:
        n = len(items)
        items.insert(n // 2, items.pop(at[0]))


def _have(name: str) -> bool:
    from rrfbench.data.datasets import available_datasets

    return name in dict(available_datasets())


needs_scifact = pytest.mark.skipif(not _have("scifact"), reason="scifact not on RRFBENCH_DATA")
needs_cranfield = pytest.mark.skipif(not _have("cranfield"), reason="cranfield not on RRFBENCH_DATA")


@pytest.fixture(scope="session", autouse=True)
def results_root(tmp_path_factory):
    root = tmp_path_factory.mktemp("results")
    old = os.environ.get("RRFBENCH_RESULTS")
    os.environ["RRFBENCH_RESULTS"] = str(root)
    yield root
    if old is None:
        os.environ.pop("RRFBENCH_RESULTS", None)
    else:
        os.environ["RRFBENCH_RESULTS"] = old


# Small cuts of the real collections, under their real names: the README's command lines and
# the notebooks run on them (tests/test_readme.py, tests/test_notebooks.py).
CUT_COLLECTIONS = ("scifact", "nfcorpus-preprocessed", "cranfield", "lisa", "time", "adi",
                   "cosqa", "checkthat2020-t2", "mediqa2019-qa", "cmrc2018-zh")
QUERIES_PER_SPLIT = 5
DOCS = 60
JUDGED_PER_QUERY = 5
TEXT_CHARS = 200  # each kept document's text is cut to its first 200 characters
# ... except where a character is a token: all-MiniLM-L6-v2's WordPiece splits Chinese into
# one token per character, so 200 of them cost ~4x the ~50 tokens of 200 English characters
# (the cmrc2018-zh cut's 60 documents took 22 s to encode on a 2-core AMD EPYC, Zen 3)
TEXT_CHARS_OF = {"cmrc2018-zh": 60}


def cut_collection(src: Path, dst: Path) -> None:
    """A small BEIR folder cut from ``src``: per qrels split its first
    :data:`QUERIES_PER_SPLIT` judged queries (at most :data:`JUDGED_PER_QUERY` judgments each),
    the judged documents, then the corpus's first documents up to :data:`DOCS`, each document's
    text cut to its first :data:`TEXT_CHARS` characters (:data:`TEXT_CHARS_OF` for a collection
    whose characters are tokens; the commands' output is not what this
    test checks, and a short text is encoded ~5x faster on a machine whose embedding cache is
    still empty)."""
    (dst / "qrels").mkdir(parents=True)
    keep_docs: dict[str, None] = {}
    keep_queries: set[str] = set()
    for qrels in sorted((src / "qrels").glob("*.tsv")):
        lines = qrels.read_text(encoding="utf-8").splitlines()
        kept, per_query = [lines[0]], {}
        for ln in lines[1:]:
            qid, did, _ = ln.split("\t")
            if qid not in per_query and len(per_query) >= QUERIES_PER_SPLIT:
                continue
            if per_query.get(qid, 0) >= JUDGED_PER_QUERY:
                continue
            per_query[qid] = per_query.get(qid, 0) + 1
            keep_docs[did] = None
            kept.append(ln)
        keep_queries |= set(per_query)
        (dst / "qrels" / qrels.name).write_text("\n".join(kept) + "\n", encoding="utf-8")
    with open(src / "corpus.jsonl", encoding="utf-8") as fh, \
            open(dst / "corpus.jsonl", "w", encoding="utf-8") as out:
        rows = [json.loads(ln) for ln in fh if ln.strip()]
        chosen = [r for r in rows if str(r["_id"]) in keep_docs]
        chosen += [r for r in rows if str(r["_id"]) not in keep_docs][:max(0, DOCS - len(chosen))]
        cut = TEXT_CHARS_OF.get(dst.name, TEXT_CHARS)
        chosen = [{**r, "text": r["text"][:cut]} for r in chosen]
        out.writelines(json.dumps(r, ensure_ascii=False) + "\n" for r in chosen)
    with open(src / "queries.jsonl", encoding="utf-8") as fh, \
            open(dst / "queries.jsonl", "w", encoding="utf-8") as out:
        out.writelines(ln for ln in fh if ln.strip() and str(json.loads(ln)["_id"]) in keep_queries)



@pytest.fixture(scope="session")
def cut_data(tmp_path_factory):
    """A data root holding :func:`cut_collection` of every collection in
    :data:`CUT_COLLECTIONS` (skips when one is not on ``RRFBENCH_DATA``)."""
    from rrfbench.data.datasets import available_datasets

    missing = [c for c in CUT_COLLECTIONS if not _have(c)]
    if missing:
        pytest.skip(f"not on RRFBENCH_DATA: {', '.join(missing)}")
    where = dict(available_datasets())
    data = tmp_path_factory.mktemp("cuts")
    for name in CUT_COLLECTIONS:
        cut_collection(Path(where[name]), data / name)
    return data


@pytest.fixture(scope="session")
def scifact():
    from rrfbench import load_dataset

    if not _have("scifact"):
        pytest.skip("scifact not on RRFBENCH_DATA")
    return load_dataset("scifact")


@pytest.fixture(scope="session")
def cranfield():
    from rrfbench import load_dataset

    if not _have("cranfield"):
        pytest.skip("cranfield not on RRFBENCH_DATA")
    return load_dataset("cranfield")


@pytest.fixture(scope="session")
def run_of():
    """run_of(dataset, spec, split='test', depth=1000) -> Run, cached for the session."""
    from rrfbench.retrievers import cached_run, make_retriever

    memo = {}

    def get(ds, spec, split="test", depth=1000):
        key = (ds.name, spec, split, depth)
        if key not in memo:
            kw = {"show_progress": False} if spec.startswith("dense") else {}
            memo[key] = cached_run(make_retriever(spec, **kw), ds, split, depth).run
        return memo[key]

    return get


@pytest.fixture()
def tiny_zh(tmp_path):
    """A 2-document Chinese BEIR folder (one judged query) written on the fly."""
    from rrfbench import load_dataset

    d = tmp_path / "zh"
    (d / "qrels").mkdir(parents=True)
    (d / "corpus.jsonl").write_text('{"_id": "a", "title": "", "text": "北京是中国的首都"}\n'
                                    '{"_id": "b", "title": "", "text": "上海是一个大城市"}\n')
    (d / "queries.jsonl").write_text('{"_id": "q", "text": "中国的首都在哪里"}\n')
    (d / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq\ta\t1\n")
    return load_dataset(str(d))


@pytest.fixture()
def tiny_beir(tmp_path):
    """A 4-document BEIR folder written on the fly."""
    d = tmp_path / "tiny"
    (d / "qrels").mkdir(parents=True)
    (d / "corpus.jsonl").write_text(
        '{"_id": "d1", "title": "Apples", "text": "red apples and green apples"}\n'
        '{"_id": "d2", "title": "Pears", "text": "pears are green"}\n'
        '{"_id": "d3", "title": "Cars", "text": "fast red cars"}\n'
        '{"_id": "d4", "title": "", "text": "nothing to see"}\n')
    (d / "queries.jsonl").write_text('{"_id": "q1", "text": "green apples"}\n'
                                     '{"_id": "q2", "text": "red cars"}\n')
    (d / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq1\td1\t2\nq1\td2\t1\nq2\td3\t1\n")
    return d


# 150 would shorten the cut's cold encoding (36-45 s of a cold test run), but then the Milvus Lite
# round trip (k=1, window 50) differed at rank 10 for one query: not investigated, left at 300
MINI_CHARS = 300


@pytest.fixture(scope="session")
def mini_beir(tmp_path_factory):
    """A small two-split BEIR folder cut from cranfield: 400 documents, each text cut to its
    first :data:`MINI_CHARS` characters (its tests check protocols and caches, not values, and
    short texts cut its dense encoding on a machine whose embedding cache is empty), train = judged queries
    with odd positions, test = even, judgments restricted to the kept documents."""
    from rrfbench import load_dataset

    if not _have("cranfield"):
        pytest.skip("cranfield not on RRFBENCH_DATA")
    src = load_dataset("cranfield")
    d = tmp_path_factory.mktemp("mini") / "mini"
    (d / "qrels").mkdir(parents=True)
    docs = src.corpus.iloc[:400]
    keep = set(docs.docid)
    with open(d / "corpus.jsonl", "w") as fh:
        for r in docs.itertuples():
            fh.write(json.dumps({"_id": r.docid, "title": r.title, "text": r.text[:MINI_CHARS]})
                     + "\n")
    qr = src.qrels("test").df
    qr = qr[qr.docid.isin(keep)]
    qids = sorted(qr.qid.unique(), key=int)
    with open(d / "queries.jsonl", "w") as fh:
        for r in src.queries[src.queries.qid.isin(qids)].itertuples():
            fh.write(json.dumps({"_id": r.qid, "text": r.text}) + "\n")
    for split, part in (("train", qids[0::2]), ("test", qids[1::2])):
        rows = qr[qr.qid.isin(part)]
        (d / "qrels" / f"{split}.tsv").write_text(
            "query-id\tcorpus-id\tscore\n" + "".join(
                f"{a}\t{b}\t{c}\n" for a, b, c in zip(rows.qid, rows.docid, rows.relevance, strict=True)))
    return d


def python_without_jit(code: str, *args: str, timeout: int = 300) -> str:
    """Run ``code`` (with ``args`` as ``sys.argv[1:]``) in a fresh interpreter with
    ``NUMBA_DISABLE_JIT=1`` and return its stdout.

    For checks against ranx: ranx's numba kernels take ~75 s to compile in a fresh
    environment (and ~20 s to load even when cached), while its Python source, the same
    algorithm, runs the test-sized inputs in well under a second without the JIT. Numba is
    already loaded in the test process (rrfbench's kernels), so this needs its own process.
    """
    import subprocess
    import sys

    env = {**os.environ, "NUMBA_DISABLE_JIT": "1"}
    p = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, env=env,
                       timeout=timeout, cwd=ROOT)
    assert p.returncode == 0, p.stderr[-3000:]
    return p.stdout


class Stop(Exception):
    """Raised by a :func:`stop_after` callback: work interrupted mid-way, as a kill would."""


def stop_after(n: int):
    """An ``on_chunk``/``on_shard`` callback that raises :class:`Stop` once ``n`` are done."""
    def callback(i):
        if i == n - 1:
            raise Stop
    return callback


def simd_levels() -> list[str]:
    """``NPY_DISABLE_CPU_FEATURES`` values under which NumPy dispatches as CPUs with fewer
    vector units do: "" (everything this CPU has), then its dispatch targets switched off from
    the top down (on an AVX-512 machine with NumPy 2.4: AVX512_SPR, ..., down to X86_V2 alone,
    i.e. what an AVX2-only and an older x86-64 CPU run). NumPy's sorts, partitions and
    transcendental functions have per-target kernels; a result that changes between two of
    these levels would change between two machines."""
    try:
        from numpy._core._multiarray_umath import __cpu_dispatch__, __cpu_features__
    except ImportError:  # NumPy 1.x
        from numpy.core._multiarray_umath import __cpu_dispatch__, __cpu_features__
    found = [t for t in __cpu_dispatch__ if __cpu_features__.get(t)]
    return [" ".join(found[i:]) for i in range(len(found), -1, -1)]


def _each_env(var: str, values: list[str], own: str, code: str, args, timeout: int) -> dict:
    """stdout of ``code`` run in a fresh interpreter once per value of environment ``var``
    (keyed by the value, ``own`` for "")."""
    import subprocess
    import sys

    out = {}
    for value in values:
        p = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True,
                           env={**os.environ, var: value}, timeout=timeout, cwd=ROOT)
        assert p.returncode == 0, (value, p.stderr[-3000:])
        out[value or own] = p.stdout
    return out


def at_every_simd_level(code: str, *args: str, timeout: int = 300) -> dict[str, str]:
    """stdout of ``code`` run in a fresh interpreter at each of :func:`simd_levels`."""
    return _each_env("NPY_DISABLE_CPU_FEATURES", simd_levels(), "(all on)", code, args, timeout)


def blas_kernels() -> list[str]:
    """``OPENBLAS_CORETYPE`` values this CPU can run besides its own: OpenBLAS (NumPy's and
    SciPy's) picks its kernels by CPU, and its SkylakeX, Haswell and Prescott kernels sum
    matrix products in different orders. "" is the CPU's own choice."""
    import platform

    if platform.machine() not in ("x86_64", "AMD64"):
        return [""]
    try:
        flags = Path("/proc/cpuinfo").read_text().split()
    except OSError:
        flags = []
    return ["", "Prescott"] + (["Haswell"] if "avx2" in flags else [])


def at_every_blas_kernel(code: str, *args: str, timeout: int = 300) -> dict[str, str]:
    """stdout of ``code`` run in a fresh interpreter with each of :func:`blas_kernels`."""
    return _each_env("OPENBLAS_CORETYPE", blas_kernels(), "(own)", code, args, timeout)
