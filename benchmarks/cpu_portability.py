"""Does a result depend on the CPU's vector units? Recompute the committed results' kinds in
fresh processes that run NumPy and OpenBLAS as other CPUs do, and compare them field by field.

Levels: this CPU's own kernels; NumPy's SIMD dispatch switched down to its x86-64 baseline
(``NPY_DISABLE_CPU_FEATURES``: every target above it) with OpenBLAS's Prescott kernels
(``OPENBLAS_CORETYPE``); the same with OpenBLAS's Haswell (AVX2) kernels where this CPU has AVX2.
Results (from the cached runs of ``make demo``; nothing is written): the scifact sweep, the four
studied systems tuned on scifact and across suite ``en``, the free-fusion suite ``en`` and the
adaptive suite ``en``. The runs themselves are read, not recomputed: the dense encoder (ONNX
Runtime) picks its kernels per CPU with no switch to emulate another.

    python benchmarks/cpu_portability.py            # after `make demo`

Prints one line per result and level: ``same`` or the number of differing fields and the first
few, and the largest relative difference of the differing numbers. Exit 1 if any differs.
"""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
from pathlib import Path

WORKER = r"""
import json, sys
from rrfbench.workflows.suite import adapt_suite, sweep_suite, tune_preset_suite
from rrfbench.workflows.dataset import sweep_dataset, tune_preset_on

def strip(o):
    if isinstance(o, dict):
        return {k: strip(v) for k, v in o.items() if k != "provenance"
                and not any(w in k for w in ("time", "created", "seconds", "wall", "latency"))}
    if isinstance(o, list):
        return [strip(v) for v in o]
    return o

out = {"sweep scifact": sweep_dataset("scifact", write=False, progress=False).result}
for p in ("ai-memory", "nexusai", "titan", "zeus"):
    out[f"{p} on scifact"] = tune_preset_on("scifact", p, write=False, reuse=False, progress=False)
    out[f"{p} on suite en"] = tune_preset_suite("en", p, write=False, reuse=False, progress=False).result
out["suite en"] = sweep_suite("en", write=False, progress=False).result
out["adaptive en"] = adapt_suite("en", write=False, progress=False).result
json.dump({k: strip(v.to_json()) for k, v in out.items()}, open(sys.argv[1], "w"), default=repr)
"""


def levels() -> dict[str, dict]:
    try:
        from numpy._core._multiarray_umath import __cpu_dispatch__, __cpu_features__
    except ImportError:
        from numpy.core._multiarray_umath import __cpu_dispatch__, __cpu_features__
    found = " ".join(t for t in __cpu_dispatch__ if __cpu_features__.get(t))
    out = {"own": {}}
    if platform.machine() in ("x86_64", "AMD64"):
        out["numpy baseline + openblas Prescott"] = {"NPY_DISABLE_CPU_FEATURES": found,
                                                     "OPENBLAS_CORETYPE": "Prescott"}
        if "avx2" in Path("/proc/cpuinfo").read_text().split():
            out["numpy baseline + openblas Haswell"] = {"NPY_DISABLE_CPU_FEATURES": found,
                                                        "OPENBLAS_CORETYPE": "Haswell"}
    return out


def diff(a, b, path=""):
    if isinstance(a, dict) and isinstance(b, dict):
        return [d for k in sorted(set(a) | set(b)) for d in diff(a.get(k), b.get(k), f"{path}/{k}")]
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        return [d for i, (x, y) in enumerate(zip(a, b, strict=True)) for d in diff(x, y, f"{path}[{i}]")]
    return [] if a == b else [(path, a, b)]


def rel(a, b) -> float:
    if isinstance(a, (int, float)) and isinstance(b, (int, float)) and not isinstance(a, bool):
        return abs(a - b) / max(abs(a), abs(b), 1e-300)
    return float("inf")


def main() -> int:
    tmp = Path(os.environ.get("TMPDIR", "/tmp"))
    got = {}
    for name, env in levels().items():
        path = tmp / f"rrfbench-cpu-{name.replace(' ', '_')}.json"
        subprocess.run([sys.executable, "-c", WORKER, str(path)], check=True,
                       env={**os.environ, **env})
        got[name] = json.loads(path.read_text())
    own = got.pop("own")
    bad = 0
    for name, res in got.items():
        for key in own:
            d = diff(own[key], res[key])
            if not d:
                print(f"{key:24s} {name}: same")
                continue
            bad += 1
            worst = max(rel(a, b) for _, a, b in d)
            print(f"{key:24s} {name}: {len(d)} fields differ (largest relative difference "
                  f"{worst:.1e}), e.g. " + "; ".join(p for p, _, _ in d[:3]))
    return 1 if bad else 0


if __name__ == "__main__":
    if len(sys.argv) > 1:
        print(f"error: cpu_portability.py takes no arguments (got {sys.argv[1]!r})", file=sys.stderr)
        sys.exit(2)
    sys.exit(main())
