"""End-to-end steps the CLI and the notebooks share: the cache rule (``cache``), one dataset's
steps (``dataset``), a suite's (``suite``), the demo, the CLI's steps and options
(``commands``, ``options``), Dask (``distributed``), and the steps that retrieve runs:
the metric-regression check (``regress``), the explorer and the engine table.

May import: every part below; only the faces (``rrfbench``, ``api``, ``cli``) import it.
"""
