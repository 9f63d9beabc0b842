"""The portable policy code (rrfbench/portable): Python and JavaScript give the same numbers.

On 200 real cranfield queries (bm25, fts5, dense test runs): the features of
``adaptive_policy.py`` and ``adaptive_policy.js`` agree with each other and with
:func:`rrfbench.adaptive.features.query_features` to 1e-9; utilities agree to 1e-9 and the chosen
candidate exactly, for hand-made linear (gains and logits), tree and constant policies whose
coefficients are random (seed 0) and whose tree thresholds are drawn from the real standardised
features (so every branch is taken, some exactly at a threshold). node runs once on all of it;
without node the round trip cannot be checked and the tests fail (they do not skip).
"""

import copy
import json
import re
import shutil
import subprocess

import numpy as np
import pytest

from rrfbench.adaptive.features import feature_names, query_features
from rrfbench.adaptive.portable import adaptive_policy as ap
from rrfbench.results.policy import Policy
from rrfbench.workflows.dataset import load_runs
from tests.conftest import ROOT

JS = ROOT / "rrfbench" / "adaptive" / "portable" / "adaptive_policy.js"
DTS = ROOT / "rrfbench" / "adaptive" / "portable" / "adaptive_policy.d.ts"
RUNS = ("bm25", "fts5", "dense")
FUNCTIONS = ("tokens", "features", "utilities", "choose", "weights")
PLACEHOLDER = "const POLICY = null; // filled in by the exporter"
N_QUERIES = 200
LIST_DEPTH = 120     # longer than the policy's depth (100): both sides must cut the lists
TOL = 1e-9
CANDIDATES = [
    {"label": "rrf60 equal", "method": "rrf", "k": [60.0] * 3, "weights": [1.0, 1.0, 1.0]},
    {"label": "rrf20 dense-heavy", "method": "rrf", "k": [20.0] * 3, "weights": [0.2, 0.2, 0.6]},
    {"label": "rrf10 lexical", "method": "rrf", "k": [10.0] * 3, "weights": [0.5, 0.4, 0.1]},
]

DRIVER = r"""
const fs = require("fs");
const ap = require(process.argv[2]);
const input = JSON.parse(fs.readFileSync(process.argv[3], "utf8"));
const out = {exports: Object.keys(ap).filter((k) => typeof ap[k] === "function").sort(),
             policies: {}, tokens: input.texts.map((t) => ap.tokens(t))};
for (const [name, pol] of Object.entries(input.policies)) {
  const r = {features: [], utilities: [], choices: [], weights: []};
  for (const q of input.queries) {
    const x = ap.features(q.text, q.lists, pol);
    r.features.push(x);
    r.utilities.push(ap.utilities(x, pol));
    r.choices.push(ap.choose(q.text, q.lists, pol));
    r.weights.push(ap.weights(q.text, q.lists, pol).label);
  }
  out.policies[name] = r;
}
// the exporter's form: POLICY substituted in the source, no policy argument
const embedded = require(process.argv[4]);
out.embedded = input.queries.map((q) => embedded.choose(q.text, q.lists));
fs.writeFileSync(process.argv[5], JSON.stringify(out));
"""


# --------------------------------------------------------------------------- data
@pytest.fixture(scope="module")
def data(cranfield):
    runs = load_runs(cranfield, list(RUNS), "test")
    seen = set()
    for r in runs:
        seen |= set(r.df.qid.astype(str))
    qids = sorted(seen)[:N_QUERIES]
    keep = set(qids)
    lists = {q: {} for q in qids}
    for r in runs:
        df = r.df[r.df.qid.astype(str).isin(keep) & (r.df["rank"] <= LIST_DEPTH)]
        df = df.sort_values(["qid", "rank"], kind="stable")
        for q, g in df.groupby(df.qid.astype(str), sort=False):
            lists[q][r.name] = [[str(d), float(s)] for d, s in zip(g.docid, g.score, strict=True)]
    text = dict(zip(cranfield.queries.qid.astype(str), cranfield.queries.text, strict=True))
    queries = [{"qid": q, "text": text[q], "lists": lists[q]} for q in qids]
    names = feature_names(list(RUNS))
    vec = query_features(runs, {q: text[q] for q in qids}, qids)[names].to_numpy()
    return {"queries": queries, "names": names, "vec": vec}


def _tau_between(best_u: np.ndarray, share: float) -> float:
    """A threshold with about ``share`` of the queries' best utilities below it, half way
    between two of them (never equal to one, so a last-bit difference cannot flip a choice)."""
    s = np.unique(best_u)
    i = min(max(int(share * len(s)), 0), len(s) - 2)
    return float((s[i] + s[i + 1]) / 2)


def _random_tree(rng, Z, depth=3):
    """A complete tree of ``depth`` built top-down: each inner node splits the real queries
    that reach it at one of their own float32 values (exactly at it, or half way to the next),
    so both branches are taken and some queries sit exactly on a threshold."""
    n_inner = 2 ** depth - 1
    n_nodes = 2 ** (depth + 1) - 1
    feat, thr = [0] * n_nodes, [-2.0] * n_nodes
    left, right = [-1] * n_nodes, [-1] * n_nodes
    value = rng.normal(0.0, 1.0, n_nodes).tolist()
    reach = {0: np.arange(len(Z))}
    for node in range(n_inner):
        rows = reach.pop(node)
        f = int(rng.integers(Z.shape[1]))
        col = Z[rows if len(rows) else slice(None), f].astype(np.float32)
        vals = np.unique(col)
        pick = int(rng.integers(len(vals)))
        t = float(vals[pick])
        if rng.random() < 0.5 and pick + 1 < len(vals):
            t = (t + float(vals[pick + 1])) / 2   # scikit-learn's own thresholds: midpoints
        feat[node], thr[node] = f, t
        left[node], right[node] = 2 * node + 1, 2 * node + 2
        go = Z[rows, f].astype(np.float32) <= t
        reach[2 * node + 1], reach[2 * node + 2] = rows[go], rows[~go]
    return {"feature": feat, "threshold": thr, "left": left, "right": right, "value": value}


def trees_model(rng, Z, mean, scale, n_out=2, n_trees=5, depth=3):
    return {"type": "trees", "target": "gains", "mean": mean, "scale": scale,
            "ensembles": [{"init": float(rng.normal(0.0, 0.05)), "rate": 0.1,
                           "trees": [_random_tree(rng, Z, depth) for _ in range(n_trees)]}
                          for _ in range(n_out)]}


def linear_model(rng, n_features, mean, scale, target="gains", n_candidates=3):
    rows = n_candidates - 1 if target == "gains" else n_candidates
    return {"type": "linear", "target": target, "mean": mean, "scale": scale,
            "coef": rng.normal(0.0, 0.1, (rows, n_features)).tolist(),
            "intercept": rng.normal(0.0, 0.05, rows).tolist()}


@pytest.fixture(scope="module")
def policies(data):
    X = data["vec"]
    mean = X.mean(axis=0)
    scale = X.std(axis=0)
    scale = np.where(scale > 0, scale, 1.0)
    Z = (X - mean) / scale
    rng = np.random.default_rng(0)
    base = {"runs": list(RUNS), "depth": 100, "rbo_p": 0.9, "features": data["names"],
            "candidates": CANDIDATES, "tau": 0.0}
    models = {"linear": linear_model(rng, X.shape[1], mean.tolist(), scale.tolist()),
              "trees": trees_model(rng, Z, mean.tolist(), scale.tolist()),
              "logits": linear_model(rng, X.shape[1], mean.tolist(), scale.tolist(), "logits"),
              "constant": {"type": "constant"}}
    points = [c["weights"] for c in CANDIDATES]     # the weight kinds: one point per candidate
    w_lin = linear_model(rng, X.shape[1], mean.tolist(), scale.tolist(), "logits")
    w_lin["intercept"] = [0.5, 0.4, 0.5]
    models["weights_linear"] = {**w_lin, "target": "weights", "points": points}
    w_trees = trees_model(rng, Z, mean.tolist(), scale.tolist(), n_out=3)
    for e, c in zip(w_trees["ensembles"], (0.5, 0.4, 0.5), strict=True):
        e["init"] = c
    models["weights_trees"] = {**w_trees, "target": "weights", "points": points}
    out = {}
    for name, model in models.items():
        pol = {**base, "model": model}
        if model["type"] != "constant":
            best = np.array([max(ap.utilities(ap.features(q["text"], q["lists"], pol), pol))
                             for q in data["queries"]])
            pol["tau"] = _tau_between(best, 0.3)
        out[name] = pol
    wrong = copy.deepcopy(out["linear"])            # a deliberately wrong linear policy
    wrong["model"]["coef"] = [[-c for c in row] for row in wrong["model"]["coef"]]
    out["linear_flipped"] = wrong
    wrong = copy.deepcopy(out["trees"])             # and a tree policy with mirrored branches
    for e in wrong["model"]["ensembles"]:
        for t in e["trees"]:
            t["left"], t["right"] = t["right"], t["left"]
    out["trees_swapped"] = wrong
    ties = copy.deepcopy(out["linear"])             # candidates 1 and 2 always tie: 1 wins
    m = ties["model"]
    m["coef"][1], m["intercept"][1] = list(m["coef"][0]), m["intercept"][0]
    out["ties"] = ties
    at_tau = copy.deepcopy(out["linear"])           # the best utility is exactly tau: 0 wins
    m = at_tau["model"]
    m["coef"] = [[0.0] * len(row) for row in m["coef"]]
    m["intercept"] = [0.25, -0.5]
    at_tau["tau"] = 0.25
    out["at_tau"] = at_tau
    return out


EDGE = [  # JS vs Python only (qfeatures reads well-formed runs)
    {"qid": "e-empty", "text": "", "lists": {}},
    {"qid": "e-one", "text": "Ünïcödé 東京 x²_y 42% naïve—façade", "lists": {
        "bm25": [["d1", 3.5]], "dense": [["d1", -0.2], ["d2", -0.3]]}},
    {"qid": "e-dups", "text": "dup ids", "lists": {   # a repeated id: its last position
        "bm25": [["2", 2.0], ["1", 2.0], [1, 1.5], [3, 1.0]],
        "fts5": [["1", 5.0], ["2", 4.0], ["3", 3.0], ["2", 2.0]],
        "dense": [["3", 0.5], ["3", 0.4], ["1", 0.5], ["2", 0.5]]}},
    {"qid": "e-zero", "text": "zero scores", "lists": {
        "bm25": [[f"d{i}", 0.0] for i in range(12)], "fts5": [], "dense": [["d3", 0.0]]}},
]
TEXTS = ["", "Hello, World!", "ÉCOLE naïve_ façade 42x", "東京タワー と Straße", "x² ½ ٣ İstanbul ΣΑΣ",
         "tab\tnew\nline", "a-b_c.d"]


def _python(queries, pol):
    r = {"features": [], "utilities": [], "choices": [], "weights": []}
    for q in queries:
        x = ap.features(q["text"], q["lists"], pol)
        r["features"].append(x)
        r["utilities"].append(ap.utilities(x, pol))
        r["choices"].append(ap.choose(q["text"], q["lists"], pol))
        r["weights"].append(ap.weights(q["text"], q["lists"], pol)["label"])
    return r


@pytest.fixture(scope="module")
def both(data, policies, tmp_path_factory):
    """Python's and node's results for every policy on the real queries and the edge cases."""
    node = shutil.which("node")
    if node is None:
        pytest.fail("node is not installed: the JavaScript policy (rrfbench/adaptive/portable/"
                    "adaptive_policy.js) must be checked against the Python one; install "
                    "Node.js >= 16 (e.g. apt-get install nodejs)", pytrace=False)
    tmp = tmp_path_factory.mktemp("portable")
    queries = data["queries"] + EDGE
    src = JS.read_text(encoding="utf-8")
    embedded = tmp / "embedded_policy.js"
    embedded.write_text(src.replace(PLACEHOLDER, f"const POLICY = {json.dumps(policies['trees'])};"),
                        encoding="utf-8")
    (tmp / "driver.js").write_text(DRIVER)
    (tmp / "input.json").write_text(json.dumps({"policies": policies, "queries": queries,
                                                "texts": TEXTS}), encoding="utf-8")
    proc = subprocess.run([node, str(tmp / "driver.js"), str(JS), str(tmp / "input.json"),
                           str(embedded), str(tmp / "out.json")], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    js = json.loads((tmp / "out.json").read_text(encoding="utf-8"))
    py = {name: _python(queries, pol) for name, pol in policies.items()}
    return {"js": js, "py": py, "n": len(data["queries"])}


# --------------------------------------------------------------------------- tests
def test_node_is_installed():
    assert shutil.which("node"), ("node is not installed: `make test` checks the JavaScript "
                                  "policy against the Python one and needs Node.js >= 16")


def test_features_agree_with_python_and_qfeatures(data, both):
    n = both["n"]
    want = data["vec"]
    for name in ("linear", "trees", "logits", "constant"):
        js = np.array(both["js"]["policies"][name]["features"], dtype=float)
        py = np.array(both["py"][name]["features"], dtype=float)
        assert js.shape == py.shape == (n + len(EDGE), len(data["names"]))
        assert np.abs(js - py).max() <= TOL, name
        worst = np.abs(py[:n] - want).max(axis=0)
        assert worst.max() <= TOL, dict(zip(data["names"], worst.tolist(), strict=True))
        assert np.abs(js[:n] - want).max() <= TOL
    assert both["js"]["tokens"] == [ap.tokens(t) for t in TEXTS]
    # not degenerate: every score and pair feature varies over the queries
    scored = (".top1", ".gap10", ".sd10", ".sd100", ".ov10", ".ov100", ".rbo", ".rho")
    cols = [i for i, f in enumerate(data["names"]) if f.endswith(scored)]
    assert len(cols) == 3 * 4 + 3 * 4 and (want[:, cols].std(axis=0) > 0).all()


def test_utilities_and_choices_agree(both):
    for name in both["py"]:
        js, py = both["js"]["policies"][name], both["py"][name]
        u_js, u_py = np.array(js["utilities"]), np.array(py["utilities"])
        assert u_js.shape == u_py.shape and u_py.shape[1] == len(CANDIDATES), name
        assert np.abs(u_js - u_py).max() <= TOL, name
        assert js["choices"] == py["choices"], name
        assert js["weights"] == py["weights"] == [CANDIDATES[c]["label"] for c in py["choices"]]
        assert (u_py[:, 0] == 0).all()
    assert both["js"]["embedded"] == both["py"]["trees"]["choices"]   # the exporter's form


def test_choices_vary_so_the_comparison_can_fail(both):
    n = both["n"]
    for name in ("linear", "trees", "logits", "weights_linear", "weights_trees"):
        choices = both["py"][name]["choices"][:n]
        assert len(set(choices)) == 3, (name, np.bincount(choices))   # 0 (hedge), 1 and 2
    assert set(both["py"]["constant"]["choices"]) == set(both["py"]["at_tau"]["choices"]) == {0}
    ties = both["py"]["ties"]
    assert set(ties["choices"][:n]) == {0, 1} and all(u[1] == u[2] for u in ties["utilities"])
    # a wrong policy on the JS side would have been caught: its choices differ
    for good, bad in (("linear", "linear_flipped"), ("trees", "trees_swapped")):
        differ = np.array(both["js"]["policies"][bad]["choices"]) != both["py"][good]["choices"]
        assert differ.sum() >= 10, (good, bad, differ.sum())


def test_tree_inputs_are_compared_as_float32(data, policies):
    """Some queries sit exactly on a float32 threshold: comparing the float64 value instead
    sends them the other way, so the float32 rule is actually exercised."""
    pol = policies["trees"]
    m = pol["model"]
    Z = (data["vec"] - np.array(m["mean"])) / np.array(m["scale"])

    def leaf(t, z, f32):
        node = 0
        while t["left"][node] != -1:
            v = z[t["feature"][node]]
            v = float(np.float32(v)) if f32 else v
            node = t["left"][node] if v <= t["threshold"][node] else t["right"][node]
        return node

    trees = [t for e in m["ensembles"] for t in e["trees"]]
    moved = sum(leaf(t, z, True) != leaf(t, z, False) for t in trees for z in Z)
    assert moved > 0
    assert ap._tree(trees[0], Z[0].tolist()) == trees[0]["value"][leaf(trees[0], Z[0], True)]


def test_python_portable_agrees_with_the_policy_class(data, policies, both):
    n = both["n"]
    X = np.array(both["py"]["linear"]["features"][:n])
    kinds = {"linear": "ridge", "trees": "gbm", "logits": "select", "constant": "constant",
             "weights_linear": "wridge", "weights_trees": "wgbm"}
    for name, kind in kinds.items():
        pol = policies[name]
        cls = Policy(kind=kind, runs=pol["runs"], features=pol["features"],
                     candidates=pol["candidates"], model=pol["model"], tau=pol["tau"])
        assert np.abs(cls.utilities(X) - np.array(both["py"][name]["utilities"][:n])).max() <= TOL
        assert cls.choose(X).tolist() == both["py"][name]["choices"][:n], name


def test_js_source_and_type_declarations():
    src = JS.read_text(encoding="utf-8")
    dts = DTS.read_text(encoding="utf-8")
    assert src.count(PLACEHOLDER) == 1                         # the exporter's substitution
    assert "typeof module" in src and "module.exports" in src   # CommonJS, guarded
    for name in FUNCTIONS:
        assert re.search(rf"^function {name}\(", src, re.M), name
        assert re.search(rf"^export function {name}\(", dts, re.M), f"{name} not in .d.ts"
    assert re.search(r"^export const POLICY: Policy \| null;", dts, re.M)


def test_node_exports_match_the_declarations(both):
    assert both["js"]["exports"] == sorted(FUNCTIONS)
