"""What every engine's fusion shares: a knob space over rrfbench's keyword and vector runs.

An :class:`EngineSpace` is one fusion mode of one search engine or vector database (Qdrant's
RRF, Elasticsearch's linear retriever...), the way a studied system is a
:class:`~rrfbench.systems.presets.base.Preset` (it is one, so tuning, LOCO, the decision rule and
explain work unchanged): the candidate window each list is cut to, the engine's formula with its
rank base, how weights enter and what a document missing from a list gets, the engine's float
width, its tie order, its knobs with their defaults, its request shape (``exports``) and a
fidelity list. The formulas below are the engines' own, read from their source where it is
installed here (qdrant-client's local mode, lancedb) or public (Elasticsearch), else from their
documentation (marked so in each fidelity list).

Scores: the vector stream is rrfbench's dense run (cosine similarity), which each engine reports
in its own scale (:meth:`EngineSpace.vector_score`: Elasticsearch and OpenSearch ``(1 + cos) /
2``, LanceDB a distance...); the keyword stream is BM25 (bm25s, Lucene's formula; SQLite: FTS5).
"""

from __future__ import annotations

import math
import struct
from collections.abc import Callable, Sequence

import numpy as np

from ...core.errors import InputError
from ..presets.base import ASSUMED, EXACT, NOT_MODELLED, Fidelity, Hit, Knob, Preset, ranked

ROLES = ("vector", "keyword")
NOT_LIVE = "not run against a live engine"
WEIGHT_GRID = tuple(round(0.1 * i, 1) for i in range(11))   # convex weights: vector share


_F32 = struct.Struct("f")


def f32(x: float, _pack=_F32.pack, _unpack=_F32.unpack) -> float:
    """``x`` rounded to the nearest float32 (engines that score in float).

    The engine models call this tens of millions of times in a suite's tables: a pack to the
    C ``float`` and back (IEEE round-to-nearest-even, the bits ``np.float32`` gives) costs half
    of a NumPy scalar; beyond float32's range, where ``struct`` refuses, NumPy's ``inf``."""
    try:
        return _unpack(_pack(x))[0]
    except OverflowError:
        return float(np.float32(x))


def f32_values(scores: dict[str, float]) -> dict[str, float]:
    """:func:`f32` of every value, in one NumPy cast (the same IEEE rounding: C's
    ``(float)x``, which ``struct`` applies too; beyond float32's range ``inf``)."""
    if not scores:
        return {}
    with np.errstate(over="ignore"):
        v = np.fromiter(scores.values(), dtype=np.float64, count=len(scores)).astype(np.float32)
    return dict(zip(scores, v.astype(np.float64).tolist(), strict=True))


def as_hits(lists: dict[str, list]) -> dict[str, list[Hit]]:
    """Each role's list as :class:`Hit` objects (a bare docid: ``Hit(docid, 0.0)``); lists of
    Hits, as a grid's ``ranked_lists`` hands them, pass without a copy."""
    return {role: hits if all(type(h) is Hit for h in hits)
            else [h if isinstance(h, Hit) else Hit(h, 0.0) for h in hits]
            for role, hits in lists.items()}


def _scores(hits: Sequence[Hit]) -> list[float]:
    return [float(h.score) for h in hits]


# --------------------------------------------------------------------------- normalisations
def minmax(scores: list[float], equal: float | None = None) -> list[float]:
    """``(s - min) / (max - min)``; all equal: ``equal`` each (``None``: 0 each)."""
    if not scores:
        return []
    lo, hi = min(scores), max(scores)
    if hi - lo <= 0:
        return [0.0 if equal is None else equal for _ in scores]
    return [(s - lo) / (hi - lo) for s in scores]


def l2(scores: list[float]) -> list[float]:
    """``s / sqrt(sum s^2)`` (unchanged when the norm is 0)."""
    norm = math.sqrt(sum(s * s for s in scores))
    return list(scores) if norm <= 0 else [s / norm for s in scores]


def zscore(scores: list[float]) -> list[float]:
    """``(s - mean) / std`` (population std; all equal: 0 each)."""
    if not scores:
        return []
    m = sum(scores) / len(scores)
    sd = math.sqrt(sum((s - m) ** 2 for s in scores) / len(scores))
    return [0.0 if sd <= 0 else (s - m) / sd for s in scores]


# --------------------------------------------------------------------------- the space
class EngineSpace(Preset):
    """One fusion mode of one engine as a knob space (see the module docstring).

    Subclasses set ``formula(lists, params) -> {docid: {role: contribution}}`` (in the order
    the engine first sees each document) through :meth:`contributions`; the base cuts each
    list to the window (:meth:`depth`), sorts by the engine's tie rule (``ties``: ``stable``,
    first seen first; ``docid``, the smaller id first) and cuts to ``limit``.
    """

    engine: str = ""                   # the engine's name (its export formats' owner)
    mode: str = ""
    version: str = ""                  # the engine version the formula was read from / run on
    live: bool = False                 # round-tripped against the real engine in the tests
    ties: str = "stable"
    window_knob: str = "window"
    round32: bool = False              # the engine sorts a float32 fused score
    sum32: bool = False                # ... and adds the contributions in float32
    # version ranges whose formulas differ, newest first (the default): ``engine_version`` in a
    # mode's parameters picks one (``--set engine_version=...``, ``export --engine-version``);
    # empty when one formula holds for every version the mode was read from
    versions: tuple[str, ...] = ()

    def version_of(self, params: dict) -> str:
        """The version range ``params`` model (the newest when they do not say)."""
        v = params.get("engine_version")
        return str(v) if v else (self.versions[0] if self.versions else "")

    def check_version(self, version: str) -> str:
        """``version`` when this mode has a formula for it; else one line naming those it has."""
        if not self.versions:
            raise InputError(f"--engine-version: {self.name} has one formula for every version "
                             f"it was read from ({self.version})")
        if version not in self.versions:
            raise InputError(f"--engine-version: {version!r} is not a version range of "
                             f"{self.name}; known: {', '.join(self.versions)}")
        return version

    def parse_settings(self, items: list[str]) -> dict:
        """Knob values, and ``engine_version=RANGE`` where the mode has version ranges."""
        ver = [i for i in items if i.partition("=")[0].strip() == "engine_version"]
        out = super().parse_settings([i for i in items if i not in ver])
        for i in ver:
            out["engine_version"] = self.check_version(i.partition("=")[2].strip())
        return out

    def check(self, params: dict) -> None:
        rest = dict(params)
        if "engine_version" in rest:
            self.check_version(str(rest.pop("engine_version")))
        super().check(rest)

    def depth(self, role, params, limit):
        return int(params.get(self.window_knob) or limit)

    def vector_score(self, cos: float) -> float:
        """The engine's score of a cosine similarity (identity by default)."""
        return cos

    def role_scores(self, role: str, hits: Sequence[Hit]) -> list[float]:
        s = _scores(hits)
        return [self.vector_score(x) for x in s] if role == "vector" else s

    def finish(self, scores, params, limit, prior=None):
        if self.round32:
            scores = f32_values(scores)
        out = ranked(scores, self.ties)
        stage = {d: "kept" for d, _ in out[:limit]} | {d: "cut: limit" for d, _ in out[limit:]}
        return out[:limit], stage

    def fuse_query(self, lists, params, limit, prior=None):
        contribs = self.contributions(as_hits(lists), params, limit)
        return self.finish(self.fused(contribs, params), params, limit, prior)[0]

    def fused(self, contribs: dict, params: dict) -> dict[str, float]:
        """docid -> :meth:`combine` of its contributions. The default sum runs here without a
        call per document (the engine models' hot loop in a suite's tables: the same
        additions, in the same order and float width, as :meth:`combine`; tested)."""
        if type(self).combine is not EngineSpace.combine:
            return {d: self.combine(c, params) for d, c in contribs.items()}
        order = self.order(params)
        out = {}
        if self.sum32:
            pack, unpack = _F32.pack, _F32.unpack
            for d, c in contribs.items():
                total = 0.0
                for role in order:
                    if role in c:
                        try:
                            total = unpack(pack(total + c[role]))[0]
                        except OverflowError:
                            total = f32(total + c[role])
                out[d] = total
        else:
            for d, c in contribs.items():
                total = 0.0
                for role in order:
                    if role in c:
                        total = total + c[role]
                out[d] = total
        return out

    def combine(self, contribs: dict, params: dict) -> float:
        """One document's fused score from its per-role contributions (a sum by default, in
        the engine's float width, roles in the order of the request)."""
        total = 0.0
        for role in self.order(params):
            if role in contribs:
                total = f32(total + contribs[role]) if self.sum32 else total + contribs[role]
        return total

    def order(self, params: dict) -> tuple[str, ...]:
        """The order the engine sees the lists in (the request's)."""
        return ROLES

    def weight(self, role: str, params: dict) -> float:
        return float(params.get(f"{role}_weight", 1.0))

    def knob_label(self, params: dict) -> str:
        tunable = [k.name for k in self.knobs if not k.fixed and k.grid]
        return ", ".join(f"{k}={params[k]}" for k in tunable)


def tie_groups(ranked_list: Sequence[tuple[str, float]]) -> list[list[str]]:
    """Consecutive runs of equal scores in a ranked (docid, score) list."""
    out: list[list[str]] = []
    last = None
    for d, s in ranked_list:
        if out and s == last:
            out[-1].append(d)
        else:
            out.append([d])
        last = s
    return out


def agrees_up_to_ties(ours: Sequence[tuple[str, float]], theirs: Sequence[str],
                      k: int = 10) -> bool:
    """True when ``theirs[:k]`` is ``ours`` with documents of equal score in any order (an
    engine that breaks ties in no fixed order, as Qdrant's server) and nothing else: every
    tie group wholly inside the top ``k`` holds the same documents, and the group the cut
    falls in gives its remaining places to any of its members. ``ours`` must reach past the
    ``k``-th document's whole tie group."""
    theirs = list(theirs)[:k]
    if len(set(theirs)) != len(theirs):
        return False
    pos = 0
    for group in tie_groups(ours):
        if pos >= len(theirs):
            break
        got = theirs[pos:pos + len(group)]
        if not set(got) <= set(group):
            return False
        if pos + len(group) <= len(theirs) and set(got) != set(group):
            return False
        pos += len(group)
    return pos >= len(theirs)


_POSITIONS: dict[tuple, list[float]] = {}
_POSITIONS_MAX = 4096


def position_scores(space: EngineSpace, role: str, w: float, params: dict,
                    score: Callable[[int, float, dict], float], n: int) -> list[float]:
    """``[score(p, w, params) for p in range(n)]``, remembered per mode, role, weight and
    parameters: an RRF contribution depends on the position alone, so a grid point's queries
    share one list (``score`` must be a function of its arguments and the mode, as every
    mode's is). Parameters that cannot be a key (a list value) are computed each time."""
    try:
        key = (type(space), space.name, role, w, tuple(sorted(params.items())))
        got = _POSITIONS.get(key)
    except TypeError:
        return [score(p, w, params) for p in range(n)]
    if got is None or len(got) < n:
        if len(_POSITIONS) >= _POSITIONS_MAX:
            _POSITIONS.clear()
        got = _POSITIONS[key] = [score(p, w, params) for p in range(max(n, 100))]
    return got


def rrf_contributions(space: EngineSpace, lists: dict, params: dict,
                      score: Callable[[int, float, dict], float]) -> dict:
    """docid -> {role: score(position, weight, params)} over the lists in the engine's order
    (position 0-based); a document missing from a list gets nothing from it."""
    out: dict[str, dict[str, float]] = {}
    for role in space.order(params):
        hits = lists.get(role, [])
        if not hits:
            continue
        values = position_scores(space, role, space.weight(role, params), params, score,
                                 len(hits))
        for h, v in zip(hits, values[:len(hits)], strict=True):
            out.setdefault(h.docid, {})[role] = v
    return out


def score_contributions(space: EngineSpace, lists: dict, params: dict,
                        norm: Callable[[list[float]], list[float]],
                        missing: float = 0.0) -> dict:
    """docid -> {role: weight x normalised score}; ``missing`` for a list a document is not in
    (added only where it is not 0)."""
    out: dict[str, dict[str, float]] = {}
    for role in space.order(params):
        hits = lists.get(role, [])
        w = space.weight(role, params)
        for h, s in zip(hits, norm(space.role_scores(role, hits)), strict=True):
            out.setdefault(h.docid, {})[role] = w * s
    if missing:
        for c in out.values():
            for role in space.order(params):
                c.setdefault(role, space.weight(role, params) * missing)
    return out


def knobs_rrf(k_name: str, k_default: int, window_default: int, weights: bool = True,
              k_fixed: bool = False, window_name: str = "window", note: str = "") -> tuple:
    """The knobs an RRF mode has: its constant, per-list weights (when the engine takes them)
    and the candidate window."""
    out = [Knob(k_name, k_default, 1, 1000, () if k_fixed else (1, 2, 5, 10, 20, 40, 60, 100),
                fixed=k_fixed, integer=True, note=note)]
    if weights:
        out += [Knob("vector_weight", 1.0, 0.0, 10.0, (0.5, 1.0, 2.0)),
                Knob("keyword_weight", 1.0, 0.0, 10.0, (0.5, 1.0, 2.0))]
    out.append(Knob(window_name, window_default, 1, 10000, (10, 20, 50, 100), integer=True))
    return tuple(out)


def knobs_convex(window_default: int, vector_default: float = 0.5, window_name: str = "window",
                 extra: tuple = ()) -> tuple:
    """The knobs a weighted-sum mode has: the vector weight, the keyword weight (the two sum
    to 1 on the grid: only their ratio matters), the window, and mode-specific ones."""
    return (Knob("vector_weight", vector_default, 0.0, 1.0, WEIGHT_GRID),
            Knob("keyword_weight", round(1.0 - vector_default, 6), 0.0, 1.0, WEIGHT_GRID),
            *extra,
            Knob(window_name, window_default, 1, 10000, (10, 20, 50, 100), integer=True))


def convex_valid(params: dict) -> bool:
    return abs(params["vector_weight"] + params["keyword_weight"] - 1.0) < 1e-9


def fidelity_common(live: bool, keyword: str = "BM25 (bm25s, Lucene's formula)") -> tuple:
    return (Fidelity("keyword stream", ASSUMED,
                     f"rrfbench's {keyword} stands in for the engine's own keyword search"),
            Fidelity("vector stream", ASSUMED,
                     "rrfbench's exact dense top-k (all-MiniLM-L6-v2, cosine) stands in for the "
                     "engine's (approximate) vector index"),
            Fidelity("against the real engine", EXACT if live else NOT_MODELLED,
                     "round-tripped in the tests (tests/systems/engines/test_engines_live.py)" if live
                     else NOT_LIVE))


__all__ = ["EngineSpace", "Knob", "Fidelity", "EXACT", "ASSUMED", "NOT_MODELLED", "NOT_LIVE",
           "f32", "minmax", "l2", "zscore", "rrf_contributions", "score_contributions",
           "tie_groups", "agrees_up_to_ties",
           "knobs_rrf", "knobs_convex", "convex_valid", "fidelity_common", "ROLES"]
