"""The verdict on a change across collections: tests per collection (Holm), over queries and over
collections, and how the stability check weakens a verdict.

* **LOCO**: for each collection C, select on the others, evaluate on C's evaluation split
  against the default, the best single retriever (chosen on the others; fusion only) and
  in-domain tuning on C (holdout on C's splits, or cross-validation when C has one split: the
  optimistic upper bound). Paired randomisation p-values and bootstrap CIs on C, and the
  p-values adjusted for testing every collection: Holm's step-down over the C per-collection
  tests (family-wise alpha 0.05). A collection wins or loses significantly only when its
  Holm-adjusted p-value is below 0.05 (one of six at raw p = 0.03 is not a loss; the raw
  outcome stays in the row as ``outcome_unadjusted``).
* **Verdict**: *transfers* when the LOCO gain over the default is significant over queries (a
  randomisation test of the macro mean, sign flips within each collection) **and** over
  collections (a hierarchical bootstrap: collections, then queries) and no collection loses
  significantly (after Holm); *likely transfers, weak evidence* when the gain is positive and
  significant over queries only, with no significant loss; otherwise *no evidence that it
  transfers*, and the recommended default stays the default.

The stability figure itself is computed in :mod:`rrfbench.tuning.stability`; :func:`_stable_verdict`
applies it.
"""

from __future__ import annotations

import numpy as np

from ..core.stats import holm

VERDICTS = ("transfers", "likely transfers, weak evidence", "no evidence that it transfers",
            "unstable")
ALPHA = 0.05
STABILITY_MIN = 0.80           # below this share of replicates agreeing: "unstable"


def _sig(p: float, delta: float) -> str:
    if p < ALPHA and delta > 0:
        return "win"
    if p < ALPHA and delta < 0:
        return "loss"
    return "tie"


def verdict_code(gain, p_queries, p_collections, loss):
    """The verdict rule as an index into :data:`VERDICTS` (arrays broadcast): 0 *transfers*
    (gain > 0, p_queries and p_collections < ALPHA, no loss), 1 *likely transfers, weak
    evidence* (the same without p_collections), 2 *no evidence that it transfers*. ``loss``:
    some collection loses significantly after Holm's adjustment."""
    ok = (np.asarray(gain) > 0) & (np.asarray(p_queries) < ALPHA) & ~np.asarray(loss, dtype=bool)
    return np.where(ok & (np.asarray(p_collections) < ALPHA), 0, np.where(ok, 1, 2))


def collection_outcomes(deltas, p_values) -> tuple[np.ndarray, list[str]]:
    """(Holm-adjusted p-values, win/tie/loss per collection at family-wise ALPHA)."""
    adj = holm(np.asarray(p_values, dtype=np.float64))
    return adj, [_sig(float(a), float(d)) for a, d in zip(adj, deltas, strict=True)]


def _stable_verdict(code: int, why: str, stab: dict) -> tuple[str, str]:
    """The verdict the stability figure supports (see :func:`stability`'s ``rule``) and its
    reason; records ``verdict_before`` (the data's verdict) in ``stab``."""
    stab["verdict_before"] = VERDICTS[code]
    sup = stab["share_supporting"]
    if sup[VERDICTS[code]] >= STABILITY_MIN:
        return VERDICTS[code], why
    held = " and ".join(f"{stab['schemes'][k]['share_supporting'][VERDICTS[code]]:.0%} of the "
                        f"{stab['B']} {what}" for k, what in (("bootstrap", "query bootstraps"),
                                                              ("noise", "noise perturbations")))
    why += (f". Stability: '{VERDICTS[code]}' holds in {held}; the smaller is below "
            f"{STABILITY_MIN:.0%}")
    if code == 0 and sup[VERDICTS[1]] >= STABILITY_MIN:
        return VERDICTS[1], why + (f", '{VERDICTS[0]}' or '{VERDICTS[1]}' in at least "
                                   f"{sup[VERDICTS[1]]:.0%} of both: reported as "
                                   f"'{VERDICTS[1]}'")
    return VERDICTS[3], why + ": unstable, keep the default"
