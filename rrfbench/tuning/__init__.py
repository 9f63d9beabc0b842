"""Choosing constants without fooling ourselves: the holdout and cross-validation protocol
(``holdout``), suite data and leave-one-collection-out selection (``suite_data``,
``selection``), verdicts and their stability (``verdicts``, ``stability``), the decision rules
(``decisions``), advice (``advice``) and the suite result's builder (``transfer``).

May import: ``core``, ``data``, ``fusion``, ``results``, ``retrievers``, ``systems``.
"""
