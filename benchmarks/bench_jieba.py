"""jieba segmentation: rrfbench's block-memoised segmenter vs plain ``jieba.lcut``.

Baseline: ``jieba.lcut(text)`` for every document text, in this process. Candidate:
:class:`rrfbench.retrievers.rank_bm25.JiebaSegmenter` on the same texts (a fresh memo). Prints
the time ratio and whether every text got the same tokens.

    python benchmarks/bench_jieba.py [--dataset scifact] [--dataset cmrc2018-zh]
"""

from __future__ import annotations

import argparse
import time

import rrfbench
from rrfbench.retrievers.rank_bm25 import JiebaSegmenter, jieba_module


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dataset", action="append", help="default: scifact and cmrc2018-zh")
    args = ap.parse_args(argv)
    jieba = jieba_module()
    jieba.lcut("warm up")  # the dictionary loads once, outside the timings
    for name in args.dataset or ["scifact", "cmrc2018-zh"]:
        texts = rrfbench.load_dataset(name).doc_texts()
        seg = JiebaSegmenter()
        seg.lcut("warm up")
        t0 = time.perf_counter()
        plain = [jieba.lcut(t) for t in texts]
        t1 = time.perf_counter()
        memo = [seg.lcut(t) for t in texts]
        t2 = time.perf_counter()
        print(f"{name}: {len(texts)} texts; jieba.lcut {t1 - t0:.2f} s, JiebaSegmenter "
              f"{t2 - t1:.2f} s: {(t1 - t0) / (t2 - t1):.2f}x; same tokens: {plain == memo}")


if __name__ == "__main__":
    main()
