"""The environment that makes the ``torch`` dense backend give the same bits on every x86-64 CPU
with AVX2 (AVX2-only and AVX-512, Intel and AMD), and lets it run fast.

Two parts keep the bits:

* every matrix product of the encoder is exact (:mod:`rrfbench.core.exact_products`,
  :mod:`rrfbench.retrievers.exact_bert`): its result cannot depend on the BLAS, the CPU or the
  thread count, so MKL needs no pinning (``MKL_CBWR=COMPATIBLE``, the previous cap, made MKL
  3-5x slower: 4.9 documents/s against 24.7 on an Intel Xeon, issue 55);
* the elementwise and row kernels that remain (embedding lookup, LayerNorm, GELU, softmax, the
  final norm) are torch's own, which dispatch by CPU: ``ATEN_CPU_CAPABILITY=avx2`` gives them
  the same AVX2 code everywhere (they cost nothing at that level), and
  ``ONEDNN_MAX_CPU_ISA=AVX2`` keeps any oneDNN primitive at the same level.

Measured with ``benchmarks/encoder_portability.py`` (natively at 1, 2 and 8 threads and under
``qemu-x86_64`` emulating AVX2-only CPUs) and pinned by ``tests/retrievers/
test_dense_fingerprint.py``.

:data:`THREAD_ENV` is speed only: the encoder alternates torch's OpenMP threads, NumPy's
OpenBLAS threads and numba's; by default each pool spins for a while after its work, taking
the cores from the next one (measured on a 2-core EPYC: 7.7 documents/s with spinning pools,
9.5 with ``OMP_WAIT_POLICY=PASSIVE`` and ``OPENBLAS_THREAD_TIMEOUT=4``).

Each library reads its variable once, when it initialises, so :func:`cap_math_libraries` runs
when the package is imported, before anything of rrfbench can import torch; a value already in
the environment is kept, and the backend refuses to encode when torch did not take the cap
(:func:`check_portable_torch`).
"""

from __future__ import annotations

import os
import platform

from .errors import MissingDependencyError

PORTABLE_MATH_ENV = {"ATEN_CPU_CAPABILITY": "avx2", "ONEDNN_MAX_CPU_ISA": "AVX2"}
THREAD_ENV = {"OMP_WAIT_POLICY": "PASSIVE", "OPENBLAS_THREAD_TIMEOUT": "4"}


def cap_math_libraries() -> None:
    """Set :data:`PORTABLE_MATH_ENV` where it is not set (x86-64 only: elsewhere no cap
    exists)."""
    for key, value in THREAD_ENV.items():
        os.environ.setdefault(key, value)
    if platform.machine().lower() in ("x86_64", "amd64"):
        for key, value in PORTABLE_MATH_ENV.items():
            os.environ.setdefault(key, value)


_PORTABLE_CAPABILITY = "AVX2"  # what a capped torch reports


def check_portable_torch() -> None:
    """Refuse to encode with the ``torch`` backend unless torch's own kernels dispatch at AVX2
    (:data:`PORTABLE_MATH_ENV`; the matrix products need no cap: they are exact).

    The cap is set when rrfbench is imported; a process whose torch initialised first (a
    notebook that imported torch before rrfbench), an environment that sets another value, or a
    CPU without AVX2 fails here with one line, instead of encoding numbers that another machine
    would not get. Only x86-64 is checked (elsewhere no cap exists)."""
    if platform.machine().lower() not in ("x86_64", "amd64"):
        return
    import torch

    cap = torch.backends.cpu.get_cpu_capability()
    if cap != _PORTABLE_CAPABILITY:
        env = " ".join(f"{k}={v}" for k, v in PORTABLE_MATH_ENV.items())
        got = " ".join(f"{k}={os.environ.get(k, '(unset)')}" for k in PORTABLE_MATH_ENV)
        raise MissingDependencyError(
            f"dense backend 'torch': torch runs {cap} kernels, not {_PORTABLE_CAPABILITY} "
            f"(environment: {got}), so its embeddings would differ from other CPUs' in the "
            f"last bits; start the process with {env} (or import rrfbench before torch), on a "
            "CPU with AVX2, or use backend 'onnx' (CPU-dependent)")
