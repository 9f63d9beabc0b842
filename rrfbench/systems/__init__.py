"""The systems rrfbench reproduces: the four studied production systems (``presets``) and the
search engines' fusion modes (``engines``), each a fusion function, its knobs, grid and export
shape; ``registry`` looks a name up in both.

May import: ``core``, ``data``, ``fusion``, ``results``, ``retrievers``.
"""
