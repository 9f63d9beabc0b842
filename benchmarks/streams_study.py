"""The other streams the studied systems fuse, and the Chinese path, measured.

Writes ``results/streams/report.md`` and prints the same tables:

* scifact (test) and cranfield (test): FTS over spans vs whole documents, entity match alone,
  graph expansion seeded by BM25 (dense kNN corpus graph, 1 hop), bi-encoder reranking of the
  fused top 100 (RRF k=60 of bm25 + fts5 + dense), titan with all its streams vs its two-stream
  form, ai-memory with four streams vs three (no vector) vs its default two;
* cmrc2018-zh (trial): bm25 and fts5 with each tokenizer, rank-bm25 with jieba, dense with the
  packaged English model and with the multilingual one, and the Zeus preset shipped vs tuned
  (tuned on dev).

Usage: ``python benchmarks/streams_study.py [english|chinese]``.
"""

import sys

from _common import ROOT

from rrfbench import evaluate, load_dataset
from rrfbench.core.evaluation import coverage
from rrfbench.core.store import write_text
from rrfbench.fusion.functions import rrf
from rrfbench.retrievers.stages.rerank import BiEncoderReranker, rerank
from rrfbench.systems.presets import get_preset
from rrfbench.workflows.dataset import preset_runs, retrieve, tune_preset_on

M = ["nDCG@10", "R@100"]


def row(label, run, qrels):
    m = evaluate(run, qrels, M)
    cov = coverage(run, qrels)
    return f"| {label} | {m['nDCG@10']:.4f} | {m['R@100']:.4f} | {cov.answered}/{cov.judged} |"


def english() -> list[str]:
    out = []
    for name in ("scifact", "cranfield"):
        ds = load_dataset(name)
        q = ds.qrels("test")
        runs = {s: retrieve(ds, s, "test") for s in ("bm25", "fts5", "dense")}
        out += [f"### {name} (test)", "", "| system | nDCG@10 | R@100 | answered |",
                "|---|---|---|---|"]
        out.append(row("FTS5 or_tokens, whole documents", runs["fts5"], q))
        out.append(row("FTS5 or_tokens, spans (sentences; best span per doc)",
                       retrieve(ds, "fts5;granularity=span", "test"), q))
        out.append(row("FTS5 titan builder, whole documents", retrieve(ds, "fts5:titan", "test"), q))
        out.append(row("entity match alone", retrieve(ds, "entity", "test"), q))
        out.append(row("graph expansion seeded by BM25 (dense kNN graph, 1 hop)",
                       retrieve(ds, "graph;seed=bm25;hops=1", "test"), q))
        out.append(row("graph expansion seeded by BM25 (BM25 kNN graph, 1 hop)",
                       retrieve(ds, "graph;seed=bm25;hops=1;graph=bm25", "test"), q))
        fused = rrf(list(runs.values()), k=60)
        out.append(row("RRF k=60, bm25 + fts5 + dense", fused, q))
        rr = rerank(fused, ds, BiEncoderReranker(), top=100)
        out.append(row(f"... top 100 reranked by the bi-encoder (all-MiniLM-L6-v2); "
                       f"{len(rr.degraded)} degraded", rr.run, q))
        for pname, streams in (("titan", "default"), ("titan", "full")):
            p = get_preset(pname)
            pr = preset_runs(p, ds, "test", streams=streams)
            out.append(row(f"titan shipped, {streams} streams ({', '.join(r.name for r in pr.values())})",
                           p.run(pr), q))
        from rrfbench.retrievers.stages.failopen import degradation_study

        titan = get_preset("titan")
        t = degradation_study(titan, preset_runs(titan, ds, "test"), q, "vector",
                              fractions=(0.0, 0.1, 0.25, 0.5, 1.0))
        out.append("| titan shipped, vector stream down for a fraction of queries (fail-open): "
                   + ", ".join(f"{f:.0%} -> {v:.4f}" for f, v in zip(t.fraction, t["nDCG@10"],
                                                                       strict=True))
                   + " | | | |")
        p = get_preset("ai-memory")
        full = preset_runs(p, ds, "test", streams="full")
        out.append(row("ai-memory, four streams (fts5, entity, graph, vector)", p.run(full), q))
        out.append(row("ai-memory, three streams (no embedder)",
                       p.run(full, {"vector": False}), q))
        out.append(row("ai-memory, default two streams (fts5, vector)",
                       p.run(preset_runs(p, ds, "test")), q))
        out.append("")
    return out


def chinese() -> list[str]:
    ds = load_dataset("cmrc2018-zh")
    q = ds.qrels("trial")
    out = ["### cmrc2018-zh (trial, 1,000 queries)", "", "| system | nDCG@10 | R@100 | answered |",
           "|---|---|---|---|"]
    for spec, label in (("bm25", "bm25 (English tokenizer)"), ("bm25:jieba", "bm25 + jieba"),
                        ("fts5", "fts5 unicode61 (or_tokens)"), ("fts5:jieba", "fts5 + jieba"),
                        ("fts5:trigram", "fts5 trigram tokenizer"),
                        ("rank_bm25:jieba", "rank-bm25 BM25Okapi + jieba (Zeus's keyword side)"),
                        ("dense", "dense all-MiniLM-L6-v2 (English)"),
                        ("dense;model=use-multilingual-v3", "dense USE multilingual v3")):
        out.append(row(label, retrieve(ds, spec, "trial"), q))
    r = tune_preset_on(ds, "zeus", tune_split="dev", eval_split="trial", progress=False)
    out += ["", f"Zeus preset on cmrc2018-zh ({r.protocol.describe()}): shipped nDCG@10 "
            f"{r.shipped['metrics']['nDCG@10']:.4f} -> tuned {r.tuned.value:.4f} (95% CI "
            f"{r.tuned.ci95[0]:.4f}-{r.tuned.ci95[1]:.4f}, p vs shipped "
            f"{r.vs_shipped.p_value:.4g}); tuned knobs {r.tuned_knobs()}; R@100 "
            f"{r.shipped['metrics']['R@100']:.4f} -> {r.tuned_metrics['R@100']:.4f} "
            "(bounded by top_k).", ""]
    return out


if __name__ == "__main__":
    what = sys.argv[1] if len(sys.argv) > 1 else "both"
    lines = ["# The studied systems' other streams, and the Chinese path", "",
             "Made by `python benchmarks/streams_study.py`.", ""]
    if what in ("english", "both"):
        lines += english()
    if what in ("chinese", "both"):
        lines += chinese()
    text = "\n".join(lines) + "\n"
    path = ROOT / "results" / "streams" / f"report{'' if what == 'both' else '-' + what}.md"
    write_text(path, text)
    print(text)
