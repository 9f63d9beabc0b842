"""The environment that makes the ``torch`` dense backend give the same bits on every x86-64 CPU
with AVX2 (AVX2-only and AVX-512, Intel and AMD): torch's own kernels and oneDNN capped at
AVX2, MKL on its vendor-neutral branch.

Why each: ``ATEN_CPU_CAPABILITY=avx2`` (torch's own kernels: GELU, softmax, attention),
``ONEDNN_MAX_CPU_ISA=AVX2``, ``MKL_CBWR=COMPATIBLE`` (MKL's matrix products on its
vendor-neutral code). Measured with ``benchmarks/encoder_portability.py`` on a 2-core AMD EPYC
with AVX-512 and under ``qemu-x86_64`` emulating AVX2-only CPUs (an Intel Haswell, AMD EPYC Rome
and Milan: no AVX-512 in CPUID, so every library takes its AVX2 code): with the caps the
embeddings and torch's primitives are the same to the bit here (1, 2, 8 and 16 threads) and on
the emulated CPUs; without them linear layers, GELU, attention and softmax all differ.
``MKL_CBWR=AVX2`` is not enough: MKL then runs attention's small products differently on the
emulated AMD CPUs than on Intel's (linear layers agreed). Between two uncapped fp32 backends on
cranfield (noise of the size a CPU change makes) cosines differ by up to 6e-7, the top 10 never,
the order at depth 1000 of 48 of 225 queries: a reuse rule keyed on rankings would not survive
it either. The cost: 4.9 documents/s against ONNX Runtime's 17.1 and uncapped torch's 16.3 on
300 scifact documents on that machine (``MKL_CBWR=AVX2``: 10.2).

Each library reads its variable once, when it initialises, so :func:`cap_math_libraries` runs
when the package is imported, before anything of rrfbench can import torch; a value already in
the environment is kept, and the backend refuses to encode when the libraries did not take
these values (:func:`rrfbench.retrievers.dense.check_portable_torch`). They slow torch's matrix
products about 3x: the price of the reproducible backend, paid by any other torch work in the
same process too.
"""

from __future__ import annotations

import ctypes
import os
import platform
from pathlib import Path

from .errors import MissingDependencyError

PORTABLE_MATH_ENV = {"ATEN_CPU_CAPABILITY": "avx2", "ONEDNN_MAX_CPU_ISA": "AVX2",
                     "MKL_CBWR": "COMPATIBLE"}


def cap_math_libraries() -> None:
    """Set :data:`PORTABLE_MATH_ENV` where it is not set (x86-64 only: elsewhere no cap
    exists)."""
    if platform.machine().lower() in ("x86_64", "amd64"):
        for key, value in PORTABLE_MATH_ENV.items():
            os.environ.setdefault(key, value)


# what a capped torch reports: ATen's dispatch level and MKL's code branch
# (mkl_serv_cbwr_get(1) answers 3 under MKL_CBWR=COMPATIBLE in torch 2.13's MKL)
_PORTABLE_CAPABILITY, _MKL_CBWR_BRANCH, _MKL_CBWR_COMPATIBLE = "AVX2", 1, 3


def check_portable_torch() -> None:
    """Refuse to encode with the ``torch`` backend unless torch runs the capped kernels of
    :data:`rrfbench.core.portable_math.PORTABLE_MATH_ENV`: ATen dispatching at AVX2 and MKL on its AVX2 branch.

    They are set when rrfbench is imported; a process whose torch initialised first (a
    notebook that imported torch before rrfbench), an environment that sets other values, or a
    CPU without AVX2 fails here with one line, instead of encoding numbers that another machine
    would not get. Only x86-64 is checked (elsewhere no cap exists)."""
    if platform.machine().lower() not in ("x86_64", "amd64"):
        return
    import torch

    cap = torch.backends.cpu.get_cpu_capability()
    branch = None
    try:
        lib = ctypes.CDLL(str(Path(torch.__file__).parent / "lib" / "libtorch_cpu.so"))
        branch = int(lib.mkl_serv_cbwr_get(_MKL_CBWR_BRANCH))
    except (OSError, AttributeError):  # a torch build without MKL: its BLAS is not capped
        pass
    if cap != _PORTABLE_CAPABILITY or branch != _MKL_CBWR_COMPATIBLE:
        env = " ".join(f"{k}={v}" for k, v in PORTABLE_MATH_ENV.items())
        got = " ".join(f"{k}={os.environ.get(k, '(unset)')}" for k in PORTABLE_MATH_ENV)
        raise MissingDependencyError(
            f"dense backend 'torch': torch runs {cap} kernels with MKL branch {branch}, not "
            f"AVX2 and {_MKL_CBWR_COMPATIBLE} (environment: {got}), so its embeddings would differ from other "
            f"CPUs' in the last bits; start the process with {env} (or import rrfbench before "
            "torch), on a CPU with AVX2, or use backend 'onnx' (CPU-dependent)")
