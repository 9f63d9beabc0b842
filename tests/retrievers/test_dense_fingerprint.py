"""The default dense encoder gives the same embeddings on every x86-64 CPU kind.

A fingerprint of the embeddings of 125 fixed texts (scifact's first 100 test queries and first
25 documents) is committed in ``dense_fingerprint.json``: per text, its projections on 8 fixed
random directions and its 5 nearest other texts (no embedding is stored). This test recomputes
it. A CPU whose kernels give other numbers (as the int8 backends do between AVX2 and AVX-512
VNNI) fails here, loudly, instead of silently shifting every dense number, regress baseline and
suite verdict. Regenerate (only after a deliberate change of model or backend) with
``RRFBENCH_UPDATE_FINGERPRINT=1 pytest tests/retrievers/test_dense_fingerprint.py``.
"""

from __future__ import annotations

import copy
import importlib.util
import json
import os
import platform
from pathlib import Path

import numpy as np
import pytest

from tests.conftest import needs_scifact

# find_spec, not importorskip: importing sentence-transformers (torch, transformers) costs ~7 s,
# and every test worker would pay it at collection; the fixture below imports it when it runs
if importlib.util.find_spec("sentence_transformers") is None:
    pytest.skip("sentence-transformers is not installed", allow_module_level=True)

PATH = Path(__file__).with_name("dense_fingerprint.json")


def _texts(ds) -> list[str]:
    """scifact's first 100 test queries and first 25 documents (100 until 2026-12-07: the
    documents, cut at 256 tokens, were most of the check's 30-37 s; the torch backend's bits are
    pinned exactly by TORCH_BITS below and by cranfield's committed dense run, tests/
    test_portability.py, so this tolerance check needs no more of them)."""
    queries = ds.split_queries("test").text.tolist()[:100]
    return queries + ds.doc_texts()[:25]


@pytest.fixture(scope="module")
def fingerprint(scifact):
    from rrfbench.retrievers.dense import DenseRetriever, embedding_fingerprint

    return embedding_fingerprint(DenseRetriever(show_progress=False), _texts(scifact))


@needs_scifact
def test_default_encoder_matches_the_committed_fingerprint(fingerprint):
    from rrfbench.retrievers.dense import compare_fingerprints

    if os.environ.get("RRFBENCH_UPDATE_FINGERPRINT"):
        PATH.write_text(json.dumps({**fingerprint, "made_on": platform.machine()}) + "\n")
    expected = json.loads(PATH.read_text())
    problems = compare_fingerprints(expected, fingerprint)
    assert not problems, (
        "THIS CPU ENCODES DIFFERENTLY from the machine that made the committed results: dense "
        "runs, regress baselines and suite verdicts will not reproduce here. " + "; ".join(problems))


@needs_scifact
def test_fingerprint_comparison_catches_an_int8_sized_difference(fingerprint):
    """The check can fail: a change of the size int8 kernels make (1e-3) is reported, fp32
    noise (1e-7) is not."""
    from rrfbench.retrievers.dense import compare_fingerprints

    noisy = copy.deepcopy(fingerprint)
    rng = np.random.default_rng(1)
    p = np.asarray(noisy["projections"])
    noisy["projections"] = (p + rng.normal(0, 1e-7, p.shape)).tolist()
    assert compare_fingerprints(fingerprint, noisy) == []
    noisy["projections"] = (p + rng.normal(0, 1e-3, p.shape)).tolist()
    assert any("projections differ" in x for x in compare_fingerprints(fingerprint, noisy))
    moved = copy.deepcopy(fingerprint)
    moved["neighbours"][3] = moved["neighbours"][3][::-1]
    assert any("neighbours changed" in x for x in compare_fingerprints(fingerprint, moved))
    other = copy.deepcopy(fingerprint)
    other["recipe"]["backend"] = "onnx-int8 (avx2)"
    assert compare_fingerprints(fingerprint, other)[0].startswith("recipe backend")


def _encode_one(env: dict):
    """One query encoded by the torch backend in a fresh process with ``env`` added."""
    import subprocess
    import sys

    code = ("from rrfbench.retrievers.dense import DenseRetriever\n"
            "e = DenseRetriever(backend='torch', show_progress=False).encode(['portable bits'], "
            "'query')\n"
            "import hashlib, torch\n"
            "print(hashlib.sha256(e.tobytes()).hexdigest(), torch.get_num_threads())")
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=300, env={**os.environ, **env})


@pytest.mark.skipif(platform.machine().lower() not in ("x86_64", "amd64"),
                    reason="the caps are x86-64's")
def test_the_torch_backend_refuses_an_uncapped_torch():
    """The same bits on every CPU hold only while torch's own kernels run capped; a process
    whose environment says otherwise (here: at the lowest level, below AVX2) must not encode
    silently different numbers. MKL is no longer pinned (the products are exact): a process
    with MKL on its fastest branch encodes the same bits."""
    from rrfbench.core.portable_math import PORTABLE_MATH_ENV

    assert "MKL_CBWR" not in PORTABLE_MATH_ENV
    capped = _encode_one({**PORTABLE_MATH_ENV, "RRFBENCH_TORCH_THREADS": "1"})
    assert capped.returncode == 0, capped.stderr[-2000:]
    digest, threads = capped.stdout.split()
    assert len(digest) == 64 and threads == "1"  # $RRFBENCH_TORCH_THREADS taken
    fast_mkl = _encode_one({**PORTABLE_MATH_ENV, "MKL_CBWR": "AUTO"})
    assert fast_mkl.returncode == 0 and fast_mkl.stdout.split()[0] == digest
    other = _encode_one({**PORTABLE_MATH_ENV, "ATEN_CPU_CAPABILITY": "default"})
    assert other.returncode != 0
    assert "its embeddings would differ from other CPUs'" in other.stderr, other.stderr[-2000:]


# sha256 of the `torch` backend's float32 embeddings of _texts(scifact)[:8] + [95:105]
# (queries and documents), made on a 2-core AMD EPYC with AVX-512 (Zen 4) with the exact
# matrix products (issue 55, 2026-12-07); the same at 1, 2 and 8 threads there. Any summation
# order gives these bits (tests/retrievers/test_exact_bert.py); torch's remaining kernels are
# capped at AVX2 (benchmarks/encoder_portability.py checks them under qemu's AVX2-only CPUs)
TORCH_BITS = "a853b0cd972f5768b86f72c2b9611ddb97c54ae43da37539f0cd7850dd0fc372"


@needs_scifact
@pytest.mark.skipif(platform.machine().lower() not in ("x86_64", "amd64"),
                    reason="the caps are x86-64's")
def test_the_torch_backend_gives_the_committed_bits_on_this_cpu(scifact):
    """Not close: equal. A CPU whose capped libraries compute otherwise fails here."""
    import hashlib

    from rrfbench.retrievers.dense import DenseRetriever

    texts = _texts(scifact)
    emb = DenseRetriever(backend="torch", show_progress=False).encode(
        texts[:8] + texts[95:105], "document")
    assert hashlib.sha256(emb.tobytes()).hexdigest() == TORCH_BITS, (
        "THIS CPU'S CAPPED TORCH COMPUTES OTHER BITS: the torch backend is not portable here")


@pytest.mark.skipif(platform.machine().lower() not in ("x86_64", "amd64"),
                    reason="NumPy's x86-64 dispatch levels")
def test_corpus_embeddings_do_not_depend_on_numpys_simd_level(cranfield):
    """The first 160 cranfield documents cut to 100 characters (nearly all tie at 100), encoded
    in one call as a shard is, in a fresh process with this CPU's NumPy kernels and with those
    of an AVX2-only CPU (an older x86-64 one where this CPU has no more than AVX2): the same
    bits. Failed before rrfbench formed the batches itself: sentence-transformers ordered them
    by NumPy's unstable argsort (issue 39). Measured on an AVX2-only Zen 1 EPYC with 400 such
    texts: through sentence-transformers' own ``encode`` sha256 ``4511f1..`` with this CPU's
    kernels and ``e9e99e..`` with X86_V3 switched off; through rrfbench's, ``4511f1..`` both.
    On an AVX2-only Zen 3 EPYC 100, 160 and 200 texts tell the two batchings apart as well
    (160: ``065803..`` against ``f65f40..`` through sentence-transformers', ``065803..`` both
    through rrfbench's), so the check encodes 160 (41 s contended with 400; at 300 characters,
    as first written, it cost 103 s)."""
    import subprocess
    import sys

    from tests.conftest import ROOT, simd_levels

    levels = simd_levels()
    other = [lv for lv in levels if "X86_V3" not in lv.split()][-1] or levels[-1]
    code = ("import hashlib\n"
            "from rrfbench import load_dataset\n"
            "from rrfbench.retrievers.dense import DenseRetriever\n"
            "texts = [t[:100] for t in load_dataset('cranfield').doc_texts()[:160]]\n"
            "e = DenseRetriever(backend='torch', show_progress=False).encode(texts, 'document')\n"
            "print(hashlib.sha256(e.tobytes()).hexdigest())")
    digests = []
    for level in ("", other):
        p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                           timeout=300, cwd=ROOT, env={**os.environ, "NPY_DISABLE_CPU_FEATURES": level})
        if p.returncode != 0 or len(p.stdout.strip()) != 64:  # an error is no expected failure
            pytest.fail(p.stderr[-2000:])
        digests.append(p.stdout.strip())
    assert digests[0] == digests[1], f"NumPy with {other!r} switched off encodes other bits"
