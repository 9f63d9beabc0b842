"""A learned per-query fusion policy as a value (:class:`Policy`): which of K candidate
configurations fuses a query, from the query's features, in plain JSON (no pickle), applied
without scikit-learn.

Results hold policies (:mod:`rrfbench.results.suite`), so the value lives here, with the
arithmetic that applies it (a fixed-order NumPy sum, scikit-learn's tree rule, utilities rounded
to 1e-6); fitting one is :mod:`rrfbench.adaptive.policies`, features are
:mod:`rrfbench.adaptive.features` (which reads its defaults ``DEPTH`` and ``RBO_P`` from here).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

import numpy as np

from ..core.errors import InputError

DEPTH = 100             # ranks of each run the features read
RBO_P = 0.9             # rank-biased overlap's persistence
WEIGHT_KINDS = ("wridge", "wgbm")
UTILITY_QUANTUM = 1e6   # utilities are rounded to 1e-6 (see quantize)


@dataclass
class Policy:
    """A fitted policy in portable form (see the module docstring)."""

    kind: str                      # select | ridge | gbm | constant
    runs: list                     # run names, in the order the candidates' weights follow
    features: list                 # feature names (rrfbench.adaptive.features.feature_names)
    candidates: list               # configurations (Config.to_json() + "label"); 0: static
    model: dict                    # {"type": linear | trees | constant, "target", ...}
    tau: float = 0.0
    depth: int = DEPTH
    rbo_p: float = RBO_P
    feature_set: str = "portable"
    notes: dict = field(default_factory=dict)   # how it was trained (inner LOCO figures)

    def utilities(self, X) -> np.ndarray:
        """(queries x candidates) utilities; column 0 is 0."""
        X = np.asarray(X, dtype=np.float64)
        m = self.model
        k = len(self.candidates)
        if m["type"] == "constant":
            return np.zeros((len(X), k))
        Z = (X - np.asarray(m["mean"])) / np.asarray(m["scale"])
        if m["type"] == "linear":
            coef = np.asarray(m["coef"], dtype=np.float64)  # a NumPy sum, not BLAS: see _rowdot
            raw = _rowdot(Z, coef) + np.asarray(m["intercept"])
        elif m["type"] == "trees":
            raw = np.stack([e["init"] + e["rate"] * sum(_tree_predict(t, Z) for t in e["trees"])
                            for e in m["ensembles"]], axis=1)
        else:
            raise InputError(f"policy model type {m['type']!r} is not linear, trees or constant")
        if m["target"] == "logits":
            return quantize(raw - raw[:, :1])
        if m["target"] == "weights":      # distance advantage of each family point over point 0
            dist = np.abs(raw[:, None, :] - np.asarray(m["points"], dtype=np.float64)[None]).sum(axis=2)
            return quantize(dist[:, :1] - dist)
        return quantize(np.hstack([np.zeros((len(X), 1)), raw]))

    def choose(self, X) -> np.ndarray:
        """Candidate index per query: the best utility if above ``tau``, else 0."""
        U = self.utilities(X)
        best = U.argmax(axis=1)                      # first maximum: the lowest index
        return np.where(U[np.arange(len(U)), best] > self.tau, best, 0)

    def to_json(self) -> dict:
        return asdict(self)

    @classmethod
    def from_json(cls, d: dict) -> Policy:
        return cls(**d)

    def describe(self) -> str:
        if self.kind == "constant":
            return f"always {self.candidates[0]['label']} (no model beat it on training data)"
        if self.kind in WEIGHT_KINDS:
            return (f"{self.kind}: weight vector predicted per query, snapped to the nearest of "
                    f"{len(self.candidates)} weightings of {self.candidates[0]['label']}, "
                    f"tau={self.tau:.4g}, {len(self.features)} {self.feature_set} features")
        return (f"{self.kind} over {len(self.candidates)} candidates "
                f"({'; '.join(c['label'] for c in self.candidates)}), tau={self.tau:.4g}, "
                f"{len(self.features)} {self.feature_set} features")


def quantize(U: np.ndarray) -> np.ndarray:
    """Utilities rounded to 1e-6 (``rint(u * 1e6) / 1e6``, half to even; the portable Python
    and JavaScript round the same way). A predicted weight vector sums to 1 only up to its last
    bits, and on the simplex the L1 distances to two grid points are often exactly equal: the
    argmax and the ``top > tau`` test then followed rounding noise, which BLAS kernels change.
    With nine collections, the free-fusion adaptive suite chose another threshold on one
    collection with OpenBLAS's Haswell kernels than with this CPU's (``benchmarks/
    cpu_portability.py``). Rounded, an exact tie stays a tie (the lowest index wins) and a
    plateau value is one number; a choice moves only where a utility lies within the noise
    (~1e-10) of a rounding boundary and that matters, which is rare."""
    return np.rint(np.asarray(U, dtype=np.float64) * UTILITY_QUANTUM) / UTILITY_QUANTUM


def _rowdot(Z: np.ndarray, coef: np.ndarray) -> np.ndarray:
    """``Z @ coef.T`` summed by NumPy in a fixed order. BLAS picks its kernel by CPU
    (OpenBLAS's SkylakeX and Haswell kernels sum in different orders), and a last-bit
    difference in a utility or a boosting target can move a tree split or a threshold: the
    adaptive suite's policies differed between the two (``OPENBLAS_CORETYPE`` shows it on one
    machine). The fitted scikit-learn models' own BLAS use is not covered by this."""
    return (Z[:, None, :] * coef[None, :, :]).sum(axis=2)


def _tree_predict(t: dict, Z: np.ndarray) -> np.ndarray:
    """One regression tree on all rows: scikit-learn's rule (float32 inputs, ``<=`` left)."""
    feat, thr = np.asarray(t["feature"]), np.asarray(t["threshold"], dtype=np.float64)
    left, right = np.asarray(t["left"]), np.asarray(t["right"])
    value = np.asarray(t["value"], dtype=np.float64)
    Z32 = Z.astype(np.float32).astype(np.float64)
    node = np.zeros(len(Z), dtype=np.int64)
    rows = np.arange(len(Z))
    while True:
        inner = left[node] != -1
        if not inner.any():
            return value[node]
        go_left = Z32[rows, np.where(inner, feat[node], 0)] <= thr[node]
        node = np.where(inner, np.where(go_left, left[node], right[node]), node)
