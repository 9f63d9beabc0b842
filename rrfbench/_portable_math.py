"""The environment that makes the ``torch`` dense backend give the same bits on every x86-64 CPU
with AVX2 (AVX2-only and AVX-512, Intel and AMD): torch's own kernels and oneDNN capped at
AVX2, MKL on its vendor-neutral branch (measured in :mod:`rrfbench.retrievers.dense`'s
docstring).

Each library reads its variable once, when it initialises, so :func:`cap_math_libraries` runs
when the package is imported, before anything of rrfbench can import torch; a value already in
the environment is kept, and the backend refuses to encode when the libraries did not take
these values (:func:`rrfbench.retrievers.dense.check_portable_torch`). They slow torch's matrix
products about 3x: the price of the reproducible backend, paid by any other torch work in the
same process too.
"""

from __future__ import annotations

import os
import platform

PORTABLE_MATH_ENV = {"ATEN_CPU_CAPABILITY": "avx2", "ONEDNN_MAX_CPU_ISA": "AVX2",
                     "MKL_CBWR": "COMPATIBLE"}


def cap_math_libraries() -> None:
    """Set :data:`PORTABLE_MATH_ENV` where it is not set (x86-64 only: elsewhere no cap
    exists)."""
    if platform.machine().lower() in ("x86_64", "amd64"):
        for key, value in PORTABLE_MATH_ENV.items():
            os.environ.setdefault(key, value)
