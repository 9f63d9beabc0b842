"""Graph expansion: a corpus graph walked from another retriever's top results.

**The corpus graph** (edges ``src, dst, relation, weight``; cached under
``results/index/<dataset>/``) links each document to its ``neighbours`` nearest documents:

* ``graph=dense``: by cosine of the dense embeddings (relation ``knn-dense``; the corpus graph of
  MacAvaney, Tonellotto & Macdonald, CIKM 2022, "Adaptive re-ranking with a corpus graph");
* ``graph=bm25``: by BM25, each document's first 64 tokens used as the query (``knn-bm25``).

**The walk** (titan's ``expandGraph`` / ``graphRetriever``, ai-memory's graph neighbours): the
seeds are the top ``seed_limit`` documents of the ``seed`` retriever (``a+b`` joins several
seeds, in that order); from them, ``hops`` breadth-first steps along edges in both directions
(or only ``out``, src to dst), optionally only along ``relations``; the seeds themselves and
documents already reached are skipped; neighbours rank by hop, then discovery order. A
neighbour's score is ``1 / rank``.
"""

from __future__ import annotations

from collections import defaultdict

import numpy as np
import pandas as pd

from ..core.errors import InputError, choice
from ..core.runs import Run
from ..core.store import results_dir, write_parquet
from .bm25 import BM25Retriever
from .dense import DenseRetriever
from .vectors import topk_cosine


class GraphRetriever:
    score_floor = 0.0

    def __init__(self, seed: str = "bm25", hops: int | str = 1, graph: str = "dense",
                 neighbours: int | str = 8, seed_limit: int | str = 5, direction: str = "both",
                 relations: tuple | None = None, make_seed=None):
        """``make_seed(spec)`` builds a seed retriever (:func:`rrfbench.retrievers.make_retriever`
        passes itself: the graph stream does not reach up to the registry that builds it)."""
        if make_seed is None:
            raise InputError("graph: build it with make_retriever('graph;seed=...') (it needs "
                             "make_seed to build its seed retrievers)")
        self.make_seed = make_seed
        try:
            self.hops, self.neighbours = int(hops), int(neighbours)
            self.seed_limit = int(seed_limit)
        except (TypeError, ValueError):
            raise InputError("graph: hops, neighbours and seed_limit must be whole numbers") from None
        if self.hops < 1 or self.neighbours < 1 or self.seed_limit < 1:
            raise InputError("graph: hops, neighbours and seed_limit must be >= 1")
        if graph not in ("dense", "bm25"):
            raise choice("graph: graph", graph, ("dense", "bm25"))
        if direction not in ("both", "out"):
            raise choice("graph: direction", direction, ("both", "out"))
        self.seeds = seed.split("+")
        for s in self.seeds:
            if s.split(";")[0].split(":")[0] == "graph":
                raise InputError("graph: a graph retriever cannot seed another")
        self.graph, self.direction = graph, direction
        self.relations = tuple(relations) if relations else None
        seed_slug = "+".join(s.replace(":", "-") for s in self.seeds)
        self.name = f"graph-{graph}-{seed_slug}-h{self.hops}"
        self.last_stats: dict = {}

    def params(self) -> dict:
        return {"seed": self.seeds, "hops": self.hops, "graph": self.graph,
                "neighbours": self.neighbours, "seed_limit": self.seed_limit,
                "direction": self.direction, "relations": self.relations}

    def versions(self) -> dict:
        return {}

    # -- the corpus graph -------------------------------------------------------------------
    def edges(self, dataset) -> pd.DataFrame:
        """The corpus graph (src, dst, relation, weight), built once per dataset content."""
        path = (results_dir() / "index" / dataset.name /
                f"graph-{self.graph}-{self.neighbours}-{dataset.fingerprint}.parquet")
        if path.exists():
            return pd.read_parquet(path)
        docids = np.asarray(dataset.corpus.docid, dtype=object)
        if self.graph == "dense":
            emb = DenseRetriever(show_progress=False).corpus_embeddings(dataset)
            idx, sim = topk_cosine(np.asarray(emb, dtype=np.float32), emb, self.neighbours + 1)
            rel = "knn-dense"
        else:
            r = BM25Retriever()
            model, _ = r.index(dataset)
            toks = [t[:64] or ["_"] for t in r.tokenize(dataset.doc_texts())]
            vocab = model.vocab_dict
            toks = [[t for t in q if t in vocab] or [next(iter(vocab))] for q in toks]
            k = min(self.neighbours + 1, len(docids))
            idx, sim = model.retrieve(toks, k=k, show_progress=False, n_threads=1)
            rel = "knn-bm25"
        src, dst, w = [], [], []
        for i in range(len(docids)):
            kept = 0
            for j, s in zip(idx[i], sim[i], strict=True):
                if j == i or s <= 0 and rel == "knn-bm25":
                    continue
                src.append(docids[i])
                dst.append(docids[j])
                w.append(float(s))
                kept += 1
                if kept >= self.neighbours:
                    break
        df = pd.DataFrame({"src": src, "dst": dst, "relation": rel, "weight": w})
        write_parquet(path, df)
        return df

    def adjacency(self, dataset):
        e = self.edges(dataset)
        if self.relations:
            e = e[e.relation.isin(self.relations)]
        nbrs: dict[str, list[str]] = defaultdict(list)
        for s, d in zip(e.src, e.dst, strict=True):
            nbrs[s].append(d)
            if self.direction == "both":
                nbrs[d].append(s)
        return nbrs

    def walk(self, nbrs, seeds: list[str]) -> list[tuple[str, int]]:
        """(docid, hop) of the documents reached from ``seeds``, in rank order."""
        seen = set(seeds)
        frontier = list(seeds)
        hits = []
        for hop in range(1, self.hops + 1):
            nxt = []
            for d in frontier:
                for n in nbrs.get(d, ()):
                    if n in seen:
                        continue
                    seen.add(n)
                    nxt.append(n)
                    hits.append((n, hop))
            frontier = nxt
            if not frontier:
                break
        return hits

    def retrieve(self, dataset, queries: pd.DataFrame, depth: int) -> Run:
        nbrs = self.adjacency(dataset)
        seed_lists = []
        for spec in self.seeds:
            kw = {"show_progress": False} if spec.startswith("dense") else {}
            run = self.make_seed(spec, **kw).retrieve(dataset, queries, self.seed_limit)
            seed_lists.append({q: g.docid.tolist() for q, g in run.df.groupby("qid", sort=False)})
        rows = []
        for qid in queries.qid:
            seeds = list(dict.fromkeys(d for s in seed_lists for d in s.get(qid, [])))
            for rank, (d, _hop) in enumerate(self.walk(nbrs, seeds)[:depth], 1):
                rows.append((qid, d, 1.0 / rank))
        return Run(pd.DataFrame(rows, columns=["qid", "docid", "score"]), self.name)
