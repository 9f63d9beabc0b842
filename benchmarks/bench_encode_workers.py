"""Two processes encoding at once, as the two test workers (``pytest -n 2``) and the README
test's subprocesses do: torch's default threads (the baseline: as many as cores, so two
processes oversubscribe a 2-core machine) against one thread each.

Each process encodes the same cranfield documents, cut to 300 characters, with the default
``torch`` backend; the script prints the wall time of both set-ups, their ratio, and whether the
embeddings are the same bits (the thread count must not change them: docs/portability.md).

    python benchmarks/bench_encode_workers.py [N_DOCS]

Last line: ``one_thread_speedup: <float>``.
"""

import hashlib
import os
import subprocess
import sys
import time

from _common import ROOT

CODE = """
import hashlib, sys, torch
from rrfbench import load_dataset
from rrfbench.retrievers.dense import DenseRetriever
threads = int(sys.argv[1])
if threads:
    torch.set_num_threads(threads)
texts = [t[:300] for t in load_dataset('cranfield').doc_texts()[:int(sys.argv[2])]]
r = DenseRetriever(backend='torch', show_progress=False)
r.encode(texts[:8], 'document')  # model loaded and warm before the clock
print('ready', flush=True)
sys.stdin.readline()
e = r.encode(texts, 'document')
print(hashlib.sha256(e.tobytes()).hexdigest(), torch.get_num_threads(), flush=True)
"""


def pair(threads: int, n_docs: int) -> tuple[float, set[str], int]:
    """Two processes started and loaded, then released together: the wall time until both are
    done, their embedding digests and the threads each used."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    procs = [subprocess.Popen([sys.executable, "-c", CODE, str(threads), str(n_docs)],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env,
                              cwd=ROOT) for _ in range(2)]
    for p in procs:
        if p.stdout.readline().strip() != "ready":
            sys.exit(f"bench_encode_workers: a worker failed to start (exit {p.wait()})")
    t0 = time.perf_counter()
    for p in procs:
        p.stdin.write("go\n")
        p.stdin.flush()
    outs = [p.communicate()[0].split() for p in procs]
    wall = time.perf_counter() - t0
    return wall, {o[0] for o in outs}, int(outs[0][1])


def main(n_docs: int = 160):
    base_wall, base_bits, base_threads = pair(0, n_docs)
    one_wall, one_bits, _ = pair(1, n_docs)
    print(f"two processes x {n_docs} documents, torch default ({base_threads} threads each): "
          f"{base_wall:6.1f} s   <- baseline")
    print(f"two processes x {n_docs} documents, 1 thread each:{' ' * 19}{one_wall:6.1f} s")
    same = base_bits == one_bits and len(base_bits) == 1
    print(f"same embedding bits: {same} ({hashlib.sha256(''.join(sorted(base_bits | one_bits)).encode()).hexdigest()[:12]})")
    print(f"one_thread_speedup: {base_wall / one_wall:.2f}")


if __name__ == "__main__":
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("n_docs", nargs="?", type=int, default=160,
                        help="documents each process encodes (default 160)")
    args = parser.parse_args()
    if not 8 <= args.n_docs <= 1400:
        parser.error(f"n_docs: {args.n_docs} is not between 8 and 1400 (cranfield's documents)")
    main(args.n_docs)
