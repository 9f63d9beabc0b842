"""Numba kernels behind :mod:`rrfbench.sweep` (private; typed wrappers live there).

The trick that makes sweeps fast: every metric rrfbench reports (nDCG@k, R@k, RR@k, AP@k, P@k)
depends only on the fused ranks of the *relevant* documents. So for each configuration and
query the kernel scores the candidates once, then finds each relevant document's exact rank
by counting the candidates that beat it (higher score, or equal score and smaller docid -
candidates are stored in docid order). No sort, no per-configuration dict.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

NDCG, RECALL, RR, AP, PREC = 0, 1, 2, 3, 4
MODE_RRF, MODE_SUM, MODE_MNZ = 0, 1, 2
INF_RANK = 1 << 60


@njit(cache=True, nogil=True)
def _score_query(c0, c1, q, mode, ks, ws, depths, base, ranks, normvals, missvals, out_scores,
                 out_valid):
    nruns = ranks.shape[1]
    for c in range(c0, c1):
        s = 0.0
        npresent = 0
        valid = False
        for r in range(nruns):
            w = ws[r]
            if w <= 0.0:
                continue
            rk = ranks[c, r]
            present = rk <= depths[r]
            if mode == MODE_RRF:
                if present:
                    s += w / (ks[r] + rk - 1.0 + base)
                    valid = True
            else:
                if present:
                    s += w * normvals[c, r]
                    npresent += 1
                    valid = True
                else:
                    s += w * missvals[q, r]
        if mode == MODE_MNZ:
            s *= npresent
        out_scores[c - c0] = s
        out_valid[c - c0] = valid


@njit(cache=True, nogil=True)
def _metrics_for_query(ranks_rel, gains_rel, n_rel, idcg, fam, cut, out):
    """Fill ``out[m]`` from the fused ranks of the relevant documents of one query."""
    nm = fam.shape[0]
    order = np.argsort(ranks_rel)
    for m in range(nm):
        k = cut[m]
        f = fam[m]
        v = 0.0
        if f == NDCG:
            if idcg[m] > 0:
                for jj in range(order.shape[0]):  # in rank order, as trec_eval sums
                    j = order[jj]
                    rk = ranks_rel[j]
                    if rk > k:
                        break
                    v += gains_rel[j] / np.log2(rk + 1.0)
                v /= idcg[m]
        elif f == RECALL:
            if n_rel > 0:
                cnt = 0
                for j in range(ranks_rel.shape[0]):
                    if ranks_rel[j] <= k:
                        cnt += 1
                v = cnt / n_rel
        elif f == RR:
            best = INF_RANK
            for j in range(ranks_rel.shape[0]):
                if ranks_rel[j] < best:
                    best = ranks_rel[j]
            if best <= k:
                v = 1.0 / best
        elif f == AP:
            if n_rel > 0:
                i = 0
                for jj in range(order.shape[0]):
                    rk = ranks_rel[order[jj]]
                    if rk > k:
                        break
                    i += 1
                    v += i / rk
                v /= n_rel
        elif f == PREC:
            cnt = 0
            for j in range(ranks_rel.shape[0]):
                if ranks_rel[j] <= k:
                    cnt += 1
            v = cnt / k
        out[m] = v


@njit(cache=True, nogil=True)
def _rrf_query_ranks(c0, c1, r0, r1, table, ub, iranks, perm, minr, rel_cand, limit, ranks_rel,
                     rel_scores):
    """Fused ranks of one query's relevant documents under RRF: no division, early exit.

    ``table[r, rank]`` holds ``w_r / (k_r + rank - 1 + base)`` (0 when absent, beyond depth or
    weight 0), so a candidate's score is R lookups and it is fused iff score > 0. Candidates
    are visited by their best rank in any run (``perm``/``minr``); ``ub[m]`` bounds the score
    of every candidate whose best rank is >= m, so once ``ub[m]`` falls below the lowest
    relevant score no later candidate can outrank a relevant document (MaxScore-style exact
    pruning).
    """
    nruns = iranks.shape[1]
    nrel = r1 - r0
    smin = np.inf
    for j in range(nrel):
        cj = rel_cand[r0 + j]
        s = 0.0
        if cj >= 0:
            for r in range(nruns):
                s += table[r, iranks[cj, r]]
        rel_scores[j] = s
        if s > 0.0:
            ranks_rel[j] = 1
            if s < smin:
                smin = s
        else:
            ranks_rel[j] = INF_RANK
    if smin == np.inf:
        return
    for p in range(c0, c1):
        if ub[minr[p]] < smin:
            break
        c = perm[p]
        s = 0.0
        for r in range(nruns):
            s += table[r, iranks[c, r]]
        if s <= 0.0:
            continue
        for j in range(nrel):
            sj = rel_scores[j]
            if sj > 0.0 and (s > sj or (s == sj and c < rel_cand[r0 + j])):
                ranks_rel[j] += 1
    if limit > 0:
        for j in range(nrel):
            if ranks_rel[j] > limit:
                ranks_rel[j] = INF_RANK


@njit(cache=True, parallel=True)
def sweep_kernel(qstart, ranks, iranks, perm, minr, max_rank, normvals, missvals, rel_start, rel_cand, rel_gain, n_rel, idcg,
                 fam, cut, modes, ks, ws, depths, bases, norm_idx, miss_idx, limits, out):
    """out[c, m, q] = metric m of configuration c on query q."""
    nconf = modes.shape[0]
    nq = qstart.shape[0] - 1
    maxc = 0
    for q in range(nq):
        if qstart[q + 1] - qstart[q] > maxc:
            maxc = qstart[q + 1] - qstart[q]
    maxrel = 0
    for q in range(nq):
        if rel_start[q + 1] - rel_start[q] > maxrel:
            maxrel = rel_start[q + 1] - rel_start[q]
    for ci in prange(nconf):
        scores = np.empty(max(maxc, 1))
        valid = np.empty(max(maxc, 1), dtype=np.bool_)
        ranks_rel = np.empty(max(maxrel, 1), dtype=np.int64)
        vals = np.empty(fam.shape[0])
        ni = norm_idx[ci]
        mi = miss_idx[ci]
        is_rrf = modes[ci] == MODE_RRF
        table = np.zeros((ranks.shape[1], max_rank + 2))
        ub = np.zeros(max_rank + 2)
        rel_scores = np.empty(max(maxrel, 1))
        if is_rrf:
            for r in range(ranks.shape[1]):
                w = ws[ci, r]
                if w <= 0.0:
                    continue
                for rk in range(1, max_rank + 1):
                    if rk <= depths[ci, r]:
                        table[r, rk] = w / (ks[ci, r] + rk - 1.0 + bases[ci])
            for rk in range(1, max_rank + 1):
                for r in range(ranks.shape[1]):
                    ub[rk] += table[r, rk]
        for q in range(nq):
            c0 = qstart[q]
            c1 = qstart[q + 1]
            r0 = rel_start[q]
            r1 = rel_start[q + 1]
            if is_rrf:
                _rrf_query_ranks(c0, c1, r0, r1, table, ub, iranks, perm, minr, rel_cand,
                                 limits[ci], ranks_rel, rel_scores)
                _metrics_for_query(ranks_rel[: r1 - r0], rel_gain[r0:r1], n_rel[q], idcg[q],
                                   fam, cut, vals)
                for m in range(fam.shape[0]):
                    out[ci, m, q] = vals[m]
                continue
            _score_query(c0, c1, q, modes[ci], ks[ci], ws[ci], depths[ci], bases[ci], ranks,
                         normvals[ni], missvals[ni, mi], scores, valid)
            for j in range(r0, r1):
                cj = rel_cand[j]
                if cj < 0 or not valid[cj - c0]:
                    ranks_rel[j - r0] = INF_RANK
                    continue
                sj = scores[cj - c0]
                rk = 1
                for c in range(c1 - c0):
                    if valid[c]:
                        sc = scores[c]
                        if sc > sj or (sc == sj and c < cj - c0):
                            rk += 1
                if limits[ci] > 0 and rk > limits[ci]:
                    rk = INF_RANK
                ranks_rel[j - r0] = rk
            _metrics_for_query(ranks_rel[: r1 - r0], rel_gain[r0:r1], n_rel[q], idcg[q], fam, cut,
                               vals)
            for m in range(fam.shape[0]):
                out[ci, m, q] = vals[m]


def _signatures() -> dict:
    """The argument types the engine calls each entry point with (``FusionEngine.evaluate``:
    ``sweep_kernel``; ``JudgedLists.score``: ``_metrics_for_query``), tested to be exactly
    the ones a real sweep compiles."""
    from numba import types

    i8, f8 = types.int64, types.float64

    def a(dtype, ndim):
        return types.Array(dtype, ndim, "C")

    sweep = (a(i8, 1), a(f8, 2), a(types.int32, 2), a(i8, 1), a(i8, 1), i8, a(f8, 3), a(f8, 4),
             a(i8, 1), a(i8, 1), a(f8, 1), a(i8, 1), a(f8, 2), a(i8, 1), a(i8, 1), a(i8, 1),
             a(f8, 2), a(f8, 2), a(f8, 2), a(f8, 1), a(i8, 1), a(i8, 1), a(i8, 1), a(f8, 3))
    metrics = (a(i8, 1), a(f8, 1), i8, a(f8, 1), a(i8, 1), a(i8, 1), a(f8, 1))
    return {sweep_kernel: sweep, _metrics_for_query: metrics}


def compile_all() -> None:
    """Compile every entry point for the types the engine uses, into numba's on-disk cache
    (``__pycache__`` beside this file). ``make`` runs it once after installing, so the first
    sweep of a fresh clone (and each of the test processes that would otherwise start at the
    same time) does not spend ~14 s of CPU compiling; it is only a cache: a kernel whose cache is
    missing or stale is compiled at its first call, as before."""
    for kernel, sig in _signatures().items():
        kernel.compile(sig)


if __name__ == "__main__":
    import sys

    if sys.argv[1:]:
        print(f"error: python -m rrfbench.fusion.kernels takes no arguments; got "
              f"{' '.join(sys.argv[1:])}", file=sys.stderr)
        sys.exit(2)
    compile_all()
