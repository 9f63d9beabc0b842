/**
 * A learned fusion policy at query time: the system's own result lists in, fusion weights out.
 *
 * The JavaScript twin of adaptive_policy.py (ES2020, no dependencies): the same features, the
 * same model, the same numbers (tested against the Python to 1e-9, choices exactly). POLICY is
 * the JSON a saved adaptive result holds ("policy" object of an adaptive best.json); the
 * exporter fills it in. choose() returns the index of the candidate configuration for one
 * query and weights() that configuration.
 *
 * `lists` maps each run name of POLICY.runs to that run's results for the query, best first:
 * an array of [docId, score] pairs (a plain object or a Map). Only the first POLICY.depth
 * entries are read; doc ids are compared as strings.
 *
 * Usable with require() (CommonJS), from TypeScript (adaptive_policy.d.ts) and as a plain
 * <script> (the functions are then on globalThis.adaptivePolicy).
 */
"use strict";

const POLICY = null; // filled in by the exporter

const TOKEN = /[\p{L}\p{N}_]+/gu;  // Python's \w+ on str
const EPS = 1e-9;

/** Lower-cased word tokens (Unicode letters, digits, underscore). */
function tokens(text) {
  return String(text).toLowerCase().match(TOKEN) || [];
}

// Plain left-to-right sums, as Python's sum() of floats up to 3.11 (3.12 compensates its
// float sums, which moves the last bits at most).
function sum(values) {
  let acc = 0;
  for (let i = 0; i < values.length; i++) acc += values[i];
  return acc;
}

function std(values) {
  const n = values.length;
  if (n === 0) return 0.0;
  const mean = sum(values) / n;
  let acc = 0;
  for (let i = 0; i < n; i++) acc += (values[i] - mean) ** 2;
  return Math.sqrt(acc / n);
}

const SUFFIXES = new Map();

/** S[m - 1] = sum over d = m..depth of p**(d - 1) / d, summed from depth down (cached). */
function suffixes(depth, p) {
  const key = depth + "|" + p;
  let s = SUFFIXES.get(key);
  if (s === undefined) {
    s = new Array(depth).fill(0.0);
    let acc = 0.0;
    for (let d = depth; d >= 1; d--) {
      acc += Math.pow(p, d - 1) / d;
      s[d - 1] = acc;
    }
    SUFFIXES.set(key, s);
  }
  return s;
}

// Doc ids are numbered once per query (the `ids` map of features()), so that the pair features
// index typed arrays rather than hash strings: positions(b)[id] is an id's position in b.

/** The last position of each numbered doc id in `b` (-1 where absent), as Python's
 * {d: i for i, d in enumerate(b)}. */
function positions(b, size) {
  const pos = new Int32Array(size).fill(-1);
  for (let j = 0; j < b.length; j++) pos[b[j]] = j;
  return pos;
}

/** Truncated rank-biased overlap at `depth` of two numbered doc-id lists (`posB`: the
 * positions of b's first `depth` ids). */
function rbo(a, posB, depth, p) {
  const suffix = suffixes(depth, p);
  const n = Math.min(a.length, depth);
  let total = 0.0;
  for (let i = 0; i < n; i++) {
    const j = posB[a[i]];
    if (j < 0) continue;
    total += suffix[Math.max(i, j)];  // both lists hold d from depth max(i, j) + 1 on
  }
  return (1.0 - p) * total;
}

/** Spearman's rho of the positions of the documents both lists hold (0 when < 2). */
function spearman(a, posB) {
  const js = [];  // b's position of each shared doc, in a's order (a's positions ascend)
  for (let i = 0; i < a.length; i++) {
    const j = posB[a[i]];
    if (j >= 0) js.push(j);
  }
  const m = js.length;
  if (m < 2) return 0.0;
  const sorted = Int32Array.from(js).sort();
  const rb = new Int32Array(sorted[m - 1] + 1);
  for (let r = 0; r < m; r++) rb[sorted[r]] = r;  // a repeated position: its last rank
  let d2 = 0;
  for (let k = 0; k < m; k++) d2 += (k - rb[js[k]]) ** 2;  // the k-th shared doc's rank in a: k
  return 1.0 - (6.0 * d2) / (m * (m * m - 1));
}

/** |set(a[:n]) & set(b[:n])| of two numbered doc-id lists. */
function overlap(a, b, n, size) {
  const mark = new Uint8Array(size);
  const na = Math.min(n, a.length);
  const nb = Math.min(n, b.length);
  for (let i = 0; i < na; i++) mark[a[i]] = 1;
  let count = 0;
  for (let j = 0; j < nb; j++) {
    if (mark[b[j]] === 1) {
      mark[b[j]] = 2;
      count++;
    }
  }
  return count;
}

/** Whether numbered id `d` is among the first `n` of `b`. */
function within(d, b, n) {
  const nb = Math.min(n, b.length);
  for (let j = 0; j < nb; j++) if (b[j] === d) return true;
  return false;
}

function runList(lists, r) {
  if (lists == null) return [];
  if (typeof Map !== "undefined" && lists instanceof Map) return lists.get(r) || [];
  return Object.prototype.hasOwnProperty.call(lists, r) ? lists[r] || [] : [];
}

function need(policy) {
  const p = policy || POLICY;
  if (!p) throw new Error("adaptive_policy: no policy (POLICY is not filled in and none was given)");
  return p;
}

/** The feature vector of one query, in policy.features order. */
function features(queryText, lists, policy) {
  policy = need(policy);
  const depth = policy.depth;
  const p = policy.rbo_p;
  const names = policy.runs;
  const out = new Map();
  out.set("q.len", tokens(queryText).length);
  const ids = new Map();  // doc id (a string) -> its number in this query
  const docs = {};
  for (const r of names) {
    const top = Array.from(runList(lists, r)).slice(0, depth);
    const n = top.length;
    const d = new Int32Array(n);
    const s = new Array(n);
    for (let i = 0; i < n; i++) {
      const id = String(top[i][0]);
      let k = ids.get(id);
      if (k === undefined) {
        k = ids.size;
        ids.set(id, k);
      }
      d[i] = k;
      s[i] = Number(top[i][1]);
    }
    docs[r] = d;
    const s1 = n ? s[0] : 0.0;
    const denom = Math.abs(s1) + EPS;
    out.set(r + ".n", n / depth);
    out.set(r + ".top1", s1);
    out.set(r + ".gap10", n ? (s1 - s[Math.min(10, n) - 1]) / denom : 0.0);
    out.set(r + ".sd10", std(s.slice(0, 10)) / denom);
    out.set(r + ".sd100", std(s.slice(0, 100)) / denom);
  }
  const size = ids.size;
  for (let i = 0; i < names.length; i++) {
    for (let k = i + 1; k < names.length; k++) {
      const a = names[i];
      const b = names[k];
      const da = docs[a];
      const db = docs[b];
      const posB = positions(db, size);  // db holds at most depth ids
      const pre = a + "~" + b;
      out.set(pre + ".ov10", overlap(da, db, 10, size) / 10.0);
      out.set(pre + ".ov100", overlap(da, db, 100, size) / 100.0);
      out.set(pre + ".rbo", rbo(da, posB, depth, p));
      out.set(pre + ".rho", spearman(da, posB));
    }
  }
  for (const a of names) {
    for (const b of names) {
      if (a !== b) {
        const hit = docs[a].length > 0 && within(docs[a][0], docs[b], 10);
        out.set(a + ".top1_in." + b, hit ? 1.0 : 0.0);
      }
    }
  }
  return policy.features.map((f) => {
    if (!out.has(f)) throw new Error("adaptive_policy: unknown feature " + JSON.stringify(f));
    return out.get(f);
  });
}

/** One regression tree; inputs rounded to float32 as scikit-learn compares them. */
function tree(t, x) {
  let node = 0;
  while (t.left[node] !== -1) {
    const f = t.feature[node];
    node = Math.fround(x[f]) <= t.threshold[node] ? t.left[node] : t.right[node];
  }
  return t.value[node];
}

/** Per candidate, how much better than candidate 0 the model expects it to be (0 for
 * candidate 0 itself). */
function utilities(x, policy) {
  policy = need(policy);
  const m = policy.model;
  if (m.type === "constant") return policy.candidates.map(() => 0.0);
  const nz = Math.min(x.length, m.mean.length, m.scale.length);
  const z = new Array(nz);
  for (let i = 0; i < nz; i++) z[i] = (x[i] - m.mean[i]) / m.scale[i];
  let raw;
  if (m.type === "linear") {
    const rows = Math.min(m.coef.length, m.intercept.length);
    raw = new Array(rows);
    for (let k = 0; k < rows; k++) {
      const row = m.coef[k];
      const nc = Math.min(row.length, nz);
      let acc = 0;
      for (let i = 0; i < nc; i++) acc += row[i] * z[i];
      raw[k] = m.intercept[k] + acc;
    }
  } else {  // "trees": one boosted ensemble per output
    raw = m.ensembles.map((e) => {
      let acc = 0;
      for (const t of e.trees) acc += tree(t, z);
      return e.init + e.rate * acc;
    });
  }
  let u;
  if (m.target === "logits") u = raw.map((r) => r - raw[0]);  // differences to candidate 0
  else if (m.target === "weights") {  // predicted weight vector: how much nearer (L1) than point 0
    const dist = m.points.map((pt) => {
      let acc = 0;
      for (let i = 0; i < pt.length; i++) acc += Math.abs(raw[i] - pt[i]);
      return acc;
    });
    u = dist.map((d) => dist[0] - d);
  } else u = [0.0].concat(raw);  // "gains": predicted gain of candidates 1.. over 0
  // rounded to 1e-6, half to even, as rrfbench.results.policy.quantize: ties stay ties
  return u.map((v) => rint(v * 1e6) / 1e6);
}

/** Round to the nearest integer, halves to even (numpy's rint, Python's round). */
function rint(v) {
  const r = Math.round(v);  // halves up
  return r - v === 0.5 && r % 2 !== 0 ? r - 1 : r;
}

/** Index of the candidate configuration to fuse this query with: the highest utility when it
 * exceeds the policy's threshold tau, else 0 (the static default). */
function choose(queryText, lists, policy) {
  policy = need(policy);
  const u = utilities(features(queryText, lists, policy), policy);
  let best = 0;
  for (let k = 1; k < u.length; k++) if (u[k] > u[best]) best = k;  // ties: the lowest index
  return u[best] > policy.tau ? best : 0;
}

/** The fusion configuration (method, k, weights, norm, missing) for this query. */
function weights(queryText, lists, policy) {
  policy = need(policy);
  return policy.candidates[choose(queryText, lists, policy)];
}

const adaptivePolicy = { POLICY, EPS, tokens, features, utilities, choose, weights };

if (typeof module !== "undefined" && module && module.exports) {
  module.exports = adaptivePolicy;
} else if (typeof globalThis !== "undefined") {
  globalThis.adaptivePolicy = adaptivePolicy;
}
