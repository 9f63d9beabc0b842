"""How much the suite's advice depends on the embedder: the English suite with a second one.

The suite's advice (results/transfer/en/) was learned with all-MiniLM-L6-v2 as the dense stream.
This study puts another embedder in its place (default ``dense;model=use-multilingual-v3``)
and asks, per collection of suite en:

* does the suite select the same fusion (its recommendation, and each collection's
  leave-one-collection-out selection, made without that collection)?
* on the other embedder's streams, how much do MiniLM's selections lose against the other
  embedder's own (both out of sample: each collection's LOCO selection)?
* how does ``judge --simulate`` do when the prior comes from the MiniLM suite and the streams
  are the other embedder's (a team whose embedder is not rrfbench's)?

Needs, first (the encoding is the long part: about 37 min for the nine corpora on 2 cores here):

    rrfbench sweep --suite en -r bm25 -r fts5 -r 'dense;model=use-multilingual-v3' --out results/embedders/use-multilingual-v3
    rrfbench judge --simulate --all -r bm25 -r fts5 -r 'dense;model=use-multilingual-v3'

Then ``python benchmarks/embedder_study.py [SPEC]`` writes ``results/embedders/<name>/study.md``
and ``study.csv`` and prints the table.
"""

import sys

import pandas as pd
from _common import ROOT

from rrfbench import evaluate
from rrfbench.core.store import write_text
from rrfbench.fusion.config import Config
from rrfbench.results.dataset import load_result
from rrfbench.retrievers import retriever_name
from rrfbench.workflows.dataset import load_runs, sweep_grid
from rrfbench.workflows.judging_table import headline
from rrfbench.workflows.suite import suite_members

SPEC = sys.argv[1] if len(sys.argv) > 1 else "dense;model=use-multilingual-v3"
NAME = retriever_name(SPEC).removeprefix("dense-")
OUT = ROOT / "results" / "embedders" / NAME
STREAMS = ["bm25", "fts5", SPEC]
TOL = 0.005

mini = load_result(ROOT / "results" / "transfer" / "en" / "best.json")
other = load_result(OUT / "best.json")
grid = {c.label(["bm25", "fts5", "dense"]): c for c in sweep_grid(3)}
mini_loco = {r["collection"]: r["selected"] for r in mini.loco}
other_loco = {r["collection"]: r["selected"] for r in other.loco}
default = Config.from_json(mini.default["config"])   # RRF k=60, equal weights

rows = []
for ds, pr in suite_members("en"):
    qrels = ds.qrels(pr.eval_split)
    runs = load_runs(ds, STREAMS, pr.eval_split)

    def value(label, runs=runs, qrels=qrels):
        cfg = label if isinstance(label, Config) else grid[label]
        return evaluate(cfg.fuse(runs), qrels, ["nDCG@10"])["nDCG@10"]

    c = ds.name
    v = {"default": value(default), "mini_rec": value(mini.label),
         "mini_loco": value(mini_loco[c]), "other_loco": value(other_loco[c])}
    rows.append({"collection": c, "minilm_loco_selection": mini_loco[c],
                 "other_loco_selection": other_loco[c],
                 "same_selection": mini_loco[c] == other_loco[c],
                 "ndcg10_rrf60": round(v["default"], 4),
                 "ndcg10_minilm_recommendation": round(v["mini_rec"], 4),
                 "ndcg10_minilm_loco": round(v["mini_loco"], 4),
                 "ndcg10_other_loco": round(v["other_loco"], 4),
                 "minilm_loco_minus_other_loco": round(v["mini_loco"] - v["other_loco"], 4),
                 "minilm_rec_minus_other_loco": round(v["mini_rec"] - v["other_loco"], 4)})
t = pd.DataFrame(rows)
OUT.mkdir(parents=True, exist_ok=True)
write_text(OUT / "study.csv", t.to_csv(index=False))

sim = ROOT / "results" / "judging" / "en" / "streams" / "+".join(retriever_name(s) for s in STREAMS)
summary = pd.read_json(sim / "summary.json") if (sim / "summary.json").exists() else None
lose = (t.minilm_loco_minus_other_loco < -TOL).sum()
lines = [f"# The suite's advice with another embedder: {SPEC}", "",
         "Streams bm25, fts5 and the other embedder's dense run; suite en's nine collections, "
         "each collection's evaluation split (rrfbench's protocol). `python "
         "benchmarks/embedder_study.py` (see its docstring for the two commands before it).", "",
         f"* The suite's recommendation with MiniLM: `{mini.label}`; with {NAME}: "
         f"`{other.label}` ({'the same' if mini.label == other.label else 'a different one'}).",
         f"* Each collection's leave-one-collection-out selection is the same on "
         f"{int(t.same_selection.sum())} of {len(t)} collections.",
         f"* On the other embedder's streams, MiniLM's LOCO selection loses more than {TOL} "
         f"nDCG@10 against the other embedder's own LOCO selection on {int(lose)} of {len(t)} "
         f"collections (mean difference {t.minilm_loco_minus_other_loco.mean():+.4f}; "
         f"MiniLM's single recommendation: {t.minilm_rec_minus_other_loco.mean():+.4f}).", ""]
if summary is not None:
    s = summary[summary.judge == "qrels"].set_index(["method", "budget"])
    a, z = s.loc[("sample", 200)], s.loc[("sample", 0)]
    lines += [f"* `judge --simulate` with the MiniLM suite's prior and candidates on the other "
              f"embedder's streams: the suite's advice alone was right on {int(z.right)} of "
              f"{int(z['of'])}; with 200 judgments on the team's streams, {int(a.right)} of "
              f"{int(a['of'])} ({headline(summary)}; `{sim.relative_to(ROOT)}/`).", ""]
cols = ["collection", "same_selection", "ndcg10_rrf60", "ndcg10_minilm_loco", "ndcg10_other_loco",
        "minilm_loco_minus_other_loco", "ndcg10_minilm_recommendation"]
lines += ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
lines += ["| " + " | ".join(str(r[c]) for c in cols) + " |" for r in t.to_dict("records")]
lines += ["", "Selections (MiniLM LOCO -> other LOCO): " + "; ".join(
    f"{r['collection']}: `{r['minilm_loco_selection']}` -> `{r['other_loco_selection']}`"
    for r in rows), ""]
write_text(OUT / "study.md", "\n".join(lines) + "\n")
print("\n".join(lines))
