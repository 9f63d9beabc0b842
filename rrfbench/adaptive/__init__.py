"""Per-query fusion: query features from runs and corpus statistics (``features``), fitting
policies (``policies``), their nested validation over a suite (``validation``), and the same
policy in dependency-free Python and JavaScript (``portable``).

May import: every part up to ``tuning``.
"""
