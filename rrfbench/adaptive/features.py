"""Query features for query-adaptive fusion, computed without qrels.

From the query text, the runs (and optionally the corpus) alone, vectorised over all queries
(pandas group-bys and merges; no Python loop over a query's documents). Each run is read to
``depth`` (100) results, in run order (score descending, doc id ascending). With ``s_1 >= s_2
>= ...`` a run's scores for the query, ``n`` how many it returned (at most ``depth``) and
``eps = 1e-9``:

==========================  =====================================================================
``q.len``                   query length: word tokens (``\\w+`` of the lower-cased text)
``{r}.n``                   ``n / depth``: how full the run's list is (FTS5 matches fewer)
``{r}.top1``                ``s_1`` (0 when the run is empty): the raw top score (the cosine for
                            dense runs, which is already on its theoretical scale [-1, 1])
``{r}.gap10``               ``(s_1 - s_m) / (|s_1| + eps)``, ``m = min(10, n)``: how far the top
                            stands out from the 10th
``{r}.sd10``, ``{r}.sd100`` population standard deviation of ``s_1..s_10`` (``s_1..s_100``) over
                            ``|s_1| + eps``: the spread of the top scores, scale-free
``{a}~{b}.ov10``, ``.ov100`` ``|top10(a) & top10(b)| / 10`` (``/ 100`` at 100)
``{a}~{b}.rbo``             rank-biased overlap truncated at ``depth``, ``p = 0.9``:
                            ``(1 - p) sum_{d=1..depth} p^(d-1) |A_d & B_d| / d``
``{a}~{b}.rho``             Spearman's rho of the two runs' orders of the documents both return
                            in their top ``depth`` (``1 - 6 sum d^2 / (m (m^2 - 1))``; 0 when
                            ``m < 2``)
``{a}.top1_in.{b}``         1 when run a's top document is in run b's top 10
``q.idf_mean/max/min``      (corpus features) IDF ``ln(1 + (N - df + 0.5) / (df + 0.5))`` of the
                            query's tokens found in the corpus (0 when none is)
``q.oov``                   (corpus feature) share of the query's tokens not in the corpus
``{r}.top1_bound``          (corpus feature, BM25 runs only) ``s_1 / U`` (0 when ``U = 0``): the
                            top score over its theoretical bound, ``U = sum_t idf(t) * sup_tf
                            tfc`` over the query's tokens as the run's BM25 tokenises them
                            (:meth:`rrfbench.retrievers.bm25.BM25Retriever.score_bounds`; the
                            idf of the run's method over the corpus, ``sup tfc`` 1 for Lucene's
                            BM25). In [0, 1]; a run is BM25 when its manifest says so (retriever
                            ``bm25``/``bm25-jieba`` with its params)
==========================  =====================================================================

Pairs ``a~b`` follow run order (``a`` before ``b``). The *portable* features (query length,
per run, per pair) need only the query and the result lists, so a production system can compute
them at query time: ``rrfbench/adaptive/portable/adaptive_policy.py`` and ``.js`` compute the same numbers
one query at a time (tested to 1e-9). The corpus features need document frequencies, which a
system would have to ship; policies use them only when asked (``features="all"``). Dense
runs need no bound feature: their top-1 is a cosine, already on its theoretical [-1, 1] scale.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from ..core.errors import InputError
from ..core.runs import Run
from ..results.policy import DEPTH, RBO_P
from ..retrievers.bm25 import BM25Retriever

EPS = 1e-9
FEATURE_SETS = ("portable", "all")
_TOKEN = re.compile(r"\w+")


def tokens(text: str) -> list[str]:
    """Lower-cased word tokens (Unicode letters, digits, underscore): ``\\w+``."""
    return _TOKEN.findall(str(text).lower())


def feature_names(runs: Sequence[str], features: str = "portable",
                  bounded: Sequence[str] = ()) -> list[str]:
    """The feature columns for runs named ``runs`` (in run order); ``bounded``: the BM25 runs
    among them (:func:`bm25_runs`), which get ``top1_bound`` with ``features="all"``."""
    if features not in FEATURE_SETS:
        raise InputError(f"--features: {features!r} is not one of {', '.join(FEATURE_SETS)}")
    out = ["q.len"]
    for r in runs:
        out += [f"{r}.n", f"{r}.top1", f"{r}.gap10", f"{r}.sd10", f"{r}.sd100"]
    for i, a in enumerate(runs):
        for b in runs[i + 1:]:
            out += [f"{a}~{b}.ov10", f"{a}~{b}.ov100", f"{a}~{b}.rbo", f"{a}~{b}.rho"]
    out += [f"{a}.top1_in.{b}" for a in runs for b in runs if a != b]
    if features == "all":
        out += ["q.idf_mean", "q.idf_max", "q.idf_min", "q.oov"]
        out += [f"{r}.top1_bound" for r in runs if r in set(bounded)]
    return out


def bm25_params(run: Run) -> dict | None:
    """The BM25 parameters of a bm25s run (from its manifest), else ``None``."""
    meta = run.meta or {}
    params = meta.get("params") or {}
    if str(meta.get("retriever", "")) in ("bm25", "bm25-jieba") and {"k1", "b", "method"} <= set(params):
        return params
    return None


def bm25_runs(runs: Sequence[Run]) -> list[str]:
    """The names of the runs that are bm25s BM25 runs (see :func:`bm25_params`)."""
    return [r.name for r in runs if bm25_params(r) is not None]


def select_features(X: pd.DataFrame, names: Sequence[str], where: str = "the policy") -> pd.DataFrame:
    """``X``'s columns ``names``, in that order; a clear error when the runs lack one."""
    missing = [n for n in names if n not in X.columns]
    if missing:
        raise InputError(f"{where} reads features {', '.join(missing)}, which these runs do not "
                         "give (a top1_bound feature needs the BM25 run's manifest)")
    return X[list(names)]


def rbo_suffixes(depth: int = DEPTH, p: float = RBO_P) -> np.ndarray:
    """``S[m - 1] = sum_{d=m..depth} p^(d-1) / d``, summed from ``depth`` down (the order the
    portable code uses)."""
    s, acc = np.zeros(depth), 0.0
    for d in range(depth, 0, -1):
        acc += p ** (d - 1) / d
        s[d - 1] = acc
    return s


def _cut(run: Run, depth: int) -> pd.DataFrame:
    df = run.df
    df = df[df["rank"] <= depth]
    return pd.DataFrame({"qid": df.qid.astype(str).to_numpy(), "docid": df.docid.astype(str).to_numpy(),
                         "score": df.score.to_numpy(dtype=np.float64),
                         "rank": df["rank"].to_numpy(dtype=np.int64)})


def _run_features(df: pd.DataFrame, qids: pd.Index, depth: int) -> pd.DataFrame:
    g = df.groupby("qid", sort=False)
    n = g.size().reindex(qids, fill_value=0).to_numpy()
    s1 = df[df["rank"] == 1].set_index("qid").score.reindex(qids).fillna(0.0).to_numpy()
    m = np.minimum(10, n)
    last = df.merge(pd.DataFrame({"qid": qids, "rank": m}), on=["qid", "rank"])
    sm = last.set_index("qid").score.reindex(qids).fillna(0.0).to_numpy()
    denom = np.abs(s1) + EPS

    def sd(top):
        part = df[df["rank"] <= top]
        mean = part.groupby("qid").score.transform("mean")
        var = ((part.score - mean) ** 2).groupby(part.qid).mean()
        return np.sqrt(var.reindex(qids).fillna(0.0).to_numpy())

    return pd.DataFrame({"n": n / depth, "top1": s1, "gap10": np.where(n > 0, (s1 - sm) / denom, 0.0),
                         "sd10": sd(10) / denom, "sd100": sd(100) / denom}, index=qids)


def _pair_features(a: pd.DataFrame, b: pd.DataFrame, qids: pd.Index, suffix: np.ndarray,
                   p: float) -> pd.DataFrame:
    both = a[["qid", "docid", "rank"]].merge(b[["qid", "docid", "rank"]], on=["qid", "docid"],
                                             suffixes=("_a", "_b"))
    ra, rb = both.rank_a.to_numpy(), both.rank_b.to_numpy()
    top = np.maximum(ra, rb)
    grp = both.qid

    def per_query(values):
        return pd.Series(values).groupby(grp.to_numpy()).sum().reindex(qids, fill_value=0)

    ov10 = per_query((top <= 10).astype(float)).to_numpy() / 10.0
    ov100 = per_query((top <= 100).astype(float)).to_numpy() / 100.0
    rbo = (1.0 - p) * per_query(suffix[top - 1]).to_numpy()
    # Spearman on the shared documents: their positions re-ranked within the shared set
    pa = both.groupby("qid").rank_a.rank(method="first").to_numpy()
    pb = both.groupby("qid").rank_b.rank(method="first").to_numpy()
    d2 = per_query((pa - pb) ** 2).to_numpy()
    m = per_query(np.ones(len(both))).to_numpy()
    with np.errstate(divide="ignore", invalid="ignore"):
        rho = np.where(m >= 2, 1.0 - 6.0 * d2 / (m * (m * m - 1)), 0.0)
    return pd.DataFrame({"ov10": ov10, "ov100": ov100, "rbo": rbo, "rho": rho}, index=qids)


def _top1_in(a: pd.DataFrame, b: pd.DataFrame, qids: pd.Index) -> np.ndarray:
    first = a[a["rank"] == 1][["qid", "docid"]]
    hit = first.merge(b[b["rank"] <= 10][["qid", "docid"]], on=["qid", "docid"])
    return np.isin(qids.to_numpy(), hit.qid.to_numpy()).astype(float)


def corpus_stats(corpus: pd.DataFrame) -> dict:
    """``{"N": documents, "df": {token: document frequency}}`` over title and text, plus the
    documents' texts as the retrievers index them (``title + " " + text``) for the BM25 bounds
    (their idf tables are computed when first needed, kept under ``"bm25"``)."""
    raw = (corpus.title.fillna("").astype(str) + " " + corpus.text.fillna("").astype(str))
    df = raw.str.lower().str.findall(_TOKEN).map(set).explode().value_counts()
    return {"N": int(len(corpus)), "df": df.to_dict(), "texts": raw.str.strip().tolist(),
            "bm25": {}}


def _bound_feature(params: dict, texts: pd.Series, top1: np.ndarray, stats: dict) -> np.ndarray:
    """``top1 / U`` per query (:meth:`BM25Retriever.score_bounds`), 0 where ``U = 0``."""
    if "texts" not in stats:
        raise InputError("query features: the BM25 bound needs corpus_stats(corpus) of this version")
    key = repr(sorted(params.items()))
    cache = stats.setdefault("bm25", {})
    ret = BM25Retriever.from_params(params)
    if key not in cache:
        cache[key] = ret.idf_table(stats["texts"])
    bound = ret.score_bounds(cache[key], list(texts))
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(bound > 0, top1 / bound, 0.0)


def _corpus_features(texts: pd.Series, stats: Mapping) -> pd.DataFrame:
    toks = texts.map(tokens)
    long = toks.explode().dropna()
    n_docs = stats["N"]
    dfs = long.map(stats["df"]).astype(float)
    found = dfs.notna()
    idf = np.log1p((n_docs - dfs + 0.5) / (dfs + 0.5))
    g = idf[found].groupby(level=0)
    n_tok = toks.map(len).to_numpy()
    n_found = found.groupby(level=0).sum().reindex(texts.index, fill_value=0).to_numpy()
    return pd.DataFrame({
        "q.idf_mean": g.mean().reindex(texts.index).fillna(0.0).to_numpy(),
        "q.idf_max": g.max().reindex(texts.index).fillna(0.0).to_numpy(),
        "q.idf_min": g.min().reindex(texts.index).fillna(0.0).to_numpy(),
        "q.oov": np.where(n_tok > 0, 1.0 - n_found / np.maximum(n_tok, 1), 0.0)},
        index=texts.index)


def query_features(runs: Sequence[Run], queries: Mapping[str, str], qids: Sequence[str] | None = None,
                   features: str = "portable", stats: Mapping | None = None, depth: int = DEPTH,
                   p: float = RBO_P) -> pd.DataFrame:
    """One row per query (index: qid, in ``qids`` order, default the queries' order), one column
    per :func:`feature_names`. ``queries``: qid -> text; ``stats``: :func:`corpus_stats` (needed
    for ``features="all"``)."""
    names = [r.name for r in runs]
    bounded = bm25_runs(runs) if features == "all" else []
    cols = feature_names(names, features, bounded)
    qids = pd.Index([str(q) for q in (qids if qids is not None else queries)], name="qid")
    missing = [q for q in qids if q not in queries]
    if missing:
        raise InputError(f"query features: no text for {len(missing)} queries (e.g. {missing[0]!r})")
    texts = pd.Series([queries[q] for q in qids], index=qids)
    out = {"q.len": texts.map(lambda t: float(len(tokens(t)))).to_numpy()}
    cut = [_cut(r, depth) for r in runs]
    for name, df in zip(names, cut, strict=True):
        for col, v in _run_features(df, qids, depth).items():
            out[f"{name}.{col}"] = v.to_numpy()
    suffix = rbo_suffixes(depth, p)
    for i, a in enumerate(names):
        for j in range(i + 1, len(names)):
            b = names[j]
            for col, v in _pair_features(cut[i], cut[j], qids, suffix, p).items():
                out[f"{a}~{b}.{col}"] = v.to_numpy()
    for i, a in enumerate(names):
        for j, b in enumerate(names):
            if i != j:
                out[f"{a}.top1_in.{b}"] = _top1_in(cut[i], cut[j], qids)
    if features == "all":
        if stats is None:
            raise InputError("query features: the corpus features need corpus_stats(corpus)")
        for col, v in _corpus_features(texts, stats).items():
            out[col] = v.to_numpy()
        for r in runs:
            if r.name in bounded:
                out[f"{r.name}.top1_bound"] = _bound_feature(bm25_params(r), texts,
                                                             out[f"{r.name}.top1"], stats)
    return pd.DataFrame(out, index=qids)[cols]
