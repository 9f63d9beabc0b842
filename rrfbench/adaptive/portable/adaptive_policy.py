"""A learned fusion policy at query time: the system's own result lists in, fusion weights out.

Standard library only, so a production system can vendor this file. ``POLICY`` is the JSON a
saved adaptive result holds (``rrfbench export results/adaptive/en/best.json --to python``
fills it in); :func:`choose` returns the index of the candidate configuration for one query and
:func:`weights` that configuration. The features are those of :mod:`rrfbench.adaptive.features`, one
query at a time; the JavaScript twin (``adaptive_policy.js``) computes the same numbers.

``lists`` maps each run name of ``POLICY["runs"]`` to that run's results for the query, best
first: a list of ``(doc_id, score)``. Only the first ``POLICY["depth"]`` entries are read.
"""

import math
import re
import struct

POLICY = None  # filled in by the exporter: the "policy" object of an adaptive best.json

_TOKEN = re.compile(r"\w+")
EPS = 1e-9


def tokens(text):
    """Lower-cased word tokens (Unicode letters, digits, underscore)."""
    return _TOKEN.findall(str(text).lower())


def _std(values):
    n = len(values)
    if n == 0:
        return 0.0
    mean = sum(values) / n
    return math.sqrt(sum([(v - mean) ** 2 for v in values]) / n)


def _rbo(a, pos_b, depth, p):
    """Truncated rank-biased overlap at ``depth`` of doc-id list ``a`` (cut at ``depth``) and
    the list whose positions ``pos_b`` holds (doc id -> 0-based position; a repeated id: its
    last position)."""
    suffix = _suffixes(depth, p)
    total = 0.0
    for i, d in enumerate(a):
        j = pos_b.get(d)
        if j is None:
            continue
        total += suffix[i if i > j else j]  # both lists hold d from depth max(i, j) + 1 on
    return (1.0 - p) * total


_SUFFIXES = {}


def _suffixes(depth, p):
    """S[m - 1] = sum over d = m..depth of p**(d - 1) / d (computed once per depth and p)."""
    key = (depth, p)
    if key not in _SUFFIXES:
        s, acc = [0.0] * depth, 0.0
        for d in range(depth, 0, -1):
            acc += p ** (d - 1) / d
            s[d - 1] = acc
        _SUFFIXES[key] = s
    return _SUFFIXES[key]


def _spearman(a, pos_b):
    """Spearman's rho of the positions of the documents both lists hold (0 when < 2)."""
    shared = [(i, pos_b[d]) for i, d in enumerate(a) if d in pos_b]
    m = len(shared)
    if m < 2:
        return 0.0
    ra = {i: r for r, i in enumerate(sorted(i for i, _ in shared))}
    rb = {j: r for r, j in enumerate(sorted(j for _, j in shared))}
    d2 = sum([(ra[i] - rb[j]) ** 2 for i, j in shared])
    return 1.0 - 6.0 * d2 / (m * (m * m - 1))


def features(query_text, lists, policy=None):
    """The feature vector of one query, in ``policy["features"]`` order."""
    policy = policy or POLICY
    depth, p = policy["depth"], policy["rbo_p"]
    names = policy["runs"]
    out = {"q.len": float(len(tokens(query_text)))}
    docs, scores = {}, {}
    for r in names:
        top = list(lists.get(r) or [])[:depth]
        docs[r] = [str(d) for d, _ in top]
        s = [float(x) for _, x in top]
        scores[r] = s
        n = len(s)
        s1 = s[0] if n else 0.0
        out[f"{r}.n"] = n / depth
        out[f"{r}.top1"] = s1
        out[f"{r}.gap10"] = (s1 - s[min(10, n) - 1]) / (abs(s1) + EPS) if n else 0.0
        out[f"{r}.sd10"] = _std(s[:10]) / (abs(s1) + EPS)
        out[f"{r}.sd100"] = _std(s[:100]) / (abs(s1) + EPS)
    pos = {r: {d: i for i, d in enumerate(docs[r])} for r in names}
    for i, a in enumerate(names):
        for b in names[i + 1:]:
            da, db = docs[a], docs[b]
            out[f"{a}~{b}.ov10"] = len(set(da[:10]) & set(db[:10])) / 10.0
            out[f"{a}~{b}.ov100"] = len(set(da[:100]) & set(db[:100])) / 100.0
            out[f"{a}~{b}.rbo"] = _rbo(da, pos[b], depth, p)
            out[f"{a}~{b}.rho"] = _spearman(da, pos[b])
    for a in names:
        for b in names:
            if a != b:
                out[f"{a}.top1_in.{b}"] = float(bool(docs[a]) and docs[a][0] in docs[b][:10])
    return [out[f] for f in policy["features"]]


def _f32(x):
    """x rounded to float32, as scikit-learn's trees compare their inputs (beyond float32's
    range: infinity, as numpy and JavaScript's Math.fround give)."""
    try:
        return struct.unpack("f", struct.pack("f", x))[0]
    except OverflowError:
        return math.copysign(math.inf, x)


def _tree(t, x):
    """One tree's value at inputs ``x`` (compared as float32)."""
    return _tree32(t, [_f32(v) for v in x])


def _tree32(t, x32):
    """One tree's value at inputs already rounded to float32."""
    left, right, feature, threshold = t["left"], t["right"], t["feature"], t["threshold"]
    node = 0
    while left[node] != -1:
        node = left[node] if x32[feature[node]] <= threshold[node] else right[node]
    return t["value"][node]


def utilities(x, policy=None):
    """Per candidate, how much better than candidate 0 the model expects it to be (0 for
    candidate 0 itself)."""
    policy = policy or POLICY
    m = policy["model"]
    if m["type"] == "constant":
        return [0.0] * len(policy["candidates"])
    z = [(v - mu) / sd for v, mu, sd in zip(x, m["mean"], m["scale"], strict=True)]
    if m["type"] == "linear":
        raw = [b + sum(c * v for c, v in zip(row, z, strict=True))
               for row, b in zip(m["coef"], m["intercept"], strict=True)]
    elif m["type"] == "trees":  # one boosted ensemble per output
        z32 = [_f32(v) for v in z]
        raw = [e["init"] + e["rate"] * sum(_tree32(t, z32) for t in e["trees"])
               for e in m["ensembles"]]
    else:
        raise ValueError(f"policy model type {m['type']!r} is not linear, trees or constant")
    if m["target"] == "logits":   # one logit per candidate: differences to candidate 0
        u = [r - raw[0] for r in raw]
    elif m["target"] == "weights":  # predicted weight vector: how much nearer (L1) than point 0
        dist = [sum(abs(r - p) for r, p in zip(raw, pt, strict=True)) for pt in m["points"]]
        u = [dist[0] - d for d in dist]
    else:
        u = [0.0] + raw            # "gains": predicted gain of candidates 1.. over 0
    # rounded to 1e-6, half to even, as rrfbench.results.policy.quantize: ties stay ties
    return [round(v * 1e6) / 1e6 for v in u]


def choose(query_text, lists, policy=None):
    """Index of the candidate configuration to fuse this query with: the highest utility when
    it exceeds the policy's threshold ``tau``, else 0 (the static default)."""
    policy = policy or POLICY
    u = utilities(features(query_text, lists, policy), policy)
    best = max(range(len(u)), key=lambda k: (u[k], -k))
    return best if u[best] > policy["tau"] else 0


def weights(query_text, lists, policy=None):
    """The fusion configuration (method, k, weights, norm, missing) for this query."""
    policy = policy or POLICY
    return policy["candidates"][choose(query_text, lists, policy)]
