"""Code that runs outside rrfbench: query-time policy functions (Python and JavaScript) with no
dependency but the language's own library. :mod:`rrfbench.exporters` embeds a saved policy in
them; ``tests/test_portable.py`` checks both against :mod:`rrfbench.qfeatures` and
:mod:`rrfbench.policies`."""
