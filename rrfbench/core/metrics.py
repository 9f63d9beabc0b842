"""Metric names: parsed once into :class:`Metric` objects whose ``str`` is the canonical name.

Canonical names follow ir_measures: ``nDCG@10``, ``R@100``, ``RR@10``, ``AP@1000``, ``P@10``.
Aliases are case-insensitive: ``ndcg@10``, ``recall@100``, ``mrr@10``, ``map@1000``,
``precision@10``. A metric without ``@k`` has no cut-off.
"""

from __future__ import annotations

import re
from typing import NamedTuple

from .errors import InputError

_FAMILIES = {
    "ndcg": "nDCG",
    "r": "R", "recall": "R",
    "rr": "RR", "mrr": "RR", "recip_rank": "RR",
    "ap": "AP", "map": "AP",
    "p": "P", "precision": "P",
}
_RANX = {"nDCG": "ndcg", "R": "recall", "RR": "mrr", "AP": "map", "P": "precision"}
_TREC = {"nDCG": "ndcg_cut", "R": "recall", "P": "P"}
_PATTERN = re.compile(r"^\s*([A-Za-z_]+)\s*(?:@\s*(\d+))?\s*$")


class Metric(NamedTuple):
    """A measure and its cut-off (``None`` = whole ranking)."""

    family: str
    cutoff: int | None = None

    def __str__(self) -> str:
        return self.family if self.cutoff is None else f"{self.family}@{self.cutoff}"

    __repr__ = __str__

    @property
    def ranx_name(self) -> str:
        base = _RANX[self.family]
        return base if self.cutoff is None else f"{base}@{self.cutoff}"


def parse_metric(name: str | Metric) -> Metric:
    """``"ndcg@10"`` -> ``Metric("nDCG", 10)``; raises :class:`InputError` on unknown names."""
    if isinstance(name, Metric):
        return name
    m = _PATTERN.match(str(name))
    family = _FAMILIES.get(m.group(1).lower()) if m else None
    if family is None:
        raise InputError(f"unknown metric {name!r}; known: nDCG@k, R@k, RR@k, AP@k, P@k "
                         "(aliases ndcg, recall, mrr, map, precision; case-insensitive)")
    cutoff = int(m.group(2)) if m.group(2) else None
    if cutoff is not None and cutoff < 1:
        raise InputError(f"metric cut-off must be >= 1 in {name!r}")
    return Metric(family, cutoff)


def parse_metrics(names) -> list[Metric]:
    if isinstance(names, (str, Metric)):
        names = [names]
    out = []
    for n in names:
        m = parse_metric(n)
        if m not in out:
            out.append(m)
    return out


DEFAULT_METRICS = ("nDCG@10", "R@100", "RR@10", "AP@1000", "P@10")
