"""What a person reads or another system loads: plots, the report, exports in each engine's
or system's config shape, explanations of one query. They read results, never build them.

May import: every part up to ``adaptive``.
"""
