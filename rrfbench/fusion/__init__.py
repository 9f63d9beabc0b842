"""Fusion on runs alone: the fusion functions and their options (``functions``: weighted RRF,
score fusion, normalisations), one configuration as a value (``config``), and the sweep engine
that scores whole grids of configurations at once (``sweep``, with its numba ``kernels``).

May import: ``core``. Never a retriever: any run file from any system can be fused.
"""
