"""One fusion configuration as a value: the method and its per-run constants (k, weights,
depths, rank base, normalisation, missing-score rule, limit), its label and its JSON form.

A value that results hold (:mod:`rrfbench.results`), so it lives apart from the sweep engine
that scores grids of them (:mod:`rrfbench.fusion.sweep`): loading a result imports this and the
fusion functions' option checks, never the engine or its numba kernels. Callers: the sweep
engine, every tuning and results module, the presets and engines' grids, the CLI's ``fuse``.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from ..core.errors import InputError
from ..core.runs import Run
from .functions import check_choices, check_numbers, rrf, score_fusion


@dataclass(frozen=True)
class Config:
    """One fusion configuration; per-run tuples follow the engine's run order."""

    method: str = "rrf"
    k: tuple = (60.0,)
    weights: tuple = (1.0,)
    depth: tuple = (None,)
    rank_base: int = 1
    norm: str | None = None
    missing: str | None = None
    limit: int | None = None

    def label(self, names: list[str]) -> str:
        w = ",".join(f"{x:g}" for x in self.weights)
        if self.method == "rrf":
            ks = ",".join(f"{x:g}" for x in (self.k[:1] if len(set(self.k)) == 1 else self.k))
            extra = "" if set(self.depth) == {None} else " depth=" + ",".join(map(str, self.depth))
            base = "" if self.rank_base == 1 else f" base={self.rank_base}"
            return f"rrf k={ks} w={w}{extra}{base}"
        if self.method == "convex":
            return f"convex {self.norm} w={w} missing={self.missing}"
        return f"{self.method} {self.norm} missing={self.missing}"

    def row(self, names: list[str]) -> dict:
        """Flat columns for the sweep table."""
        out = {"method": self.method, "label": self.label(names), "rank_base": self.rank_base,
               "norm": self.norm or "", "missing": self.missing or "",
               "limit": self.limit or 0}
        for i, n in enumerate(names):
            out[f"k_{n}"] = float(self.k[i])
            out[f"w_{n}"] = float(self.weights[i])
            out[f"depth_{n}"] = int(self.depth[i]) if self.depth[i] is not None else 0
        return out

    def fuse(self, runs: list[Run]) -> Run:
        """The fused run this configuration describes (reference path, for checks)."""
        if self.method == "rrf":
            return rrf(runs, k=list(self.k), weights=list(self.weights), rank_base=self.rank_base,
                       depth=list(self.depth), limit=self.limit)
        return score_fusion(runs, method=self.method, norm=self.norm, weights=list(self.weights),
                            missing=self.missing, limit=self.limit)

    def to_json(self) -> dict:
        """Plain JSON types (tuples as lists), so a saved and a fresh result compare equal."""
        return {k: list(v) if isinstance(v, tuple) else v for k, v in asdict(self).items()}

    @classmethod
    def from_json(cls, d: dict) -> Config:
        """From :meth:`to_json` output (lists become tuples; a ``label`` key is ignored)."""
        known = {f for f in cls.__dataclass_fields__}
        extra = set(d) - known - {"label"}
        if extra:
            raise InputError(f"unknown configuration fields {sorted(extra)}; known: "
                             f"{sorted(known)}")
        kw = {k: tuple(v) if isinstance(v, list) else v for k, v in d.items() if k in known}
        return cls(**kw)

    def check(self, n_runs: int) -> None:
        """Raise :class:`InputError` unless this configuration can fuse ``n_runs`` runs."""
        check_choices(method=self.method)
        for what, v in (("k", self.k), ("weights", self.weights), ("depth", self.depth)):
            if len(v) != n_runs:
                raise InputError(f"{what}: expected one value per run ({n_runs}), got {len(v)}")
        check_numbers(self.weights, "weights")
        if sum(self.weights) <= 0:
            raise InputError("weights: at least one run needs a weight > 0")
        check_numbers(self.depth, "depth", positive=True, integer=True)
        if self.limit:
            check_numbers([self.limit], "limit", positive=True, integer=True)
        if self.method == "rrf":
            check_numbers(self.k, "k", positive=self.rank_base == 0)
            check_choices(rank_base=self.rank_base)
        else:
            check_choices(norm=self.norm, missing=self.missing)
            if any(d is not None for d in self.depth):
                raise InputError("depth: score fusion uses each run's full depth in sweeps")
