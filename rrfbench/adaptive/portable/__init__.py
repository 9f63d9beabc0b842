"""Code that runs outside rrfbench: query-time policy functions (Python and JavaScript) with no
dependency but the language's own library. :mod:`rrfbench.outputs.exporters` embeds a saved policy in
them; ``tests/adaptive/test_portable.py`` checks both against :mod:`rrfbench.adaptive.features` and
:mod:`rrfbench.adaptive.policies`."""
