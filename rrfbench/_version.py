"""The one place the version is written: the package (``rrfbench.__version__``) and its
metadata (pyproject reads it: ``[tool.setuptools.dynamic]``) both come from here."""

__version__ = "0.2.0"
