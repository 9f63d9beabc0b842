"""Large temporary arrays kept in the heap while the exact encoders run, instead of mapped and
unmapped for every product.

Why: glibc's ``malloc`` serves a block larger than its mmap threshold (128 KiB, growing to at
most 32 MiB) with a fresh ``mmap`` and returns it with ``munmap`` when freed. The exact encoders
(:mod:`rrfbench.retrievers.exact_bert`, :mod:`rrfbench.retrievers.exact_use`) allocate tens of
MB per product (float64 operands and sums: a batch's feed-forward sums are 8,192 x 1,536 x 8
bytes), so every product paid the kernel's page faults on memory it had just given back. Inside
:func:`reused_heap` such blocks come from the heap and stay there between products; on leaving,
the heap is trimmed back and glibc's thresholds are set back to what they were (fixed at their
defaults' values: glibc has no getter). Nothing computed changes: this is where memory comes
from, not what is done with it. Elsewhere than glibc (musl, macOS) it does nothing.
"""

from __future__ import annotations

import contextlib
import ctypes
import platform

M_TRIM_THRESHOLD, M_TOP_PAD, M_MMAP_THRESHOLD = -1, -2, -3
HELD = {M_MMAP_THRESHOLD: 1 << 30, M_TRIM_THRESHOLD: 1 << 30, M_TOP_PAD: 64 << 20}
DEFAULTS = {M_MMAP_THRESHOLD: 32 << 20, M_TRIM_THRESHOLD: 128 << 10, M_TOP_PAD: 128 << 10}
_depth = 0


def _glibc():
    if platform.system() != "Linux":
        return None
    try:
        libc = ctypes.CDLL("libc.so.6")
        libc.gnu_get_libc_version  # noqa: B018 (glibc only: musl has no such symbol)
        return libc
    except (OSError, AttributeError):
        return None


@contextlib.contextmanager
def reused_heap():
    """Within: blocks up to 1 GiB from the heap, freed memory kept (nestable)."""
    global _depth
    libc = _glibc() if _depth == 0 else None
    _depth += 1
    try:
        if libc is not None:
            for key, value in HELD.items():
                libc.mallopt(key, value)
        yield
    finally:
        _depth -= 1
        if libc is not None:
            for key, value in DEFAULTS.items():
                libc.mallopt(key, value)
            libc.malloc_trim(0)
