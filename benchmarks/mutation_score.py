"""Summarise a mutmut 3 run (`make mutate`): mutants killed / survived per module, and the score.

Usage: python benchmarks/mutation_score.py results/mutation.txt (the output of `mutmut results
--all true`). Score = killed / (killed + survived); timeouts count as killed (the test run
noticed), "no tests" mutants are reported separately (no selected test covers that code).
Verdicts that ``benchmarks/mutate_module.py`` rechecked (mutmut's "suspicious") count as what the
recheck found.
"""

import re
import sys
from collections import Counter, defaultdict


def main(path: str) -> None:
    per_module: dict[str, Counter] = defaultdict(Counter)
    for line in open(path, encoding="utf-8"):
        m = re.match(r"\s*([\w.]+?)\.x\w*__mutmut_\d+:\s*(.+?)\s*$", line)
        if not m:
            continue
        module = m.group(1)
        status = m.group(2).strip().lower().removesuffix(" (rechecked)")
        per_module[module][status] += 1
    total = Counter()
    for module, c in sorted(per_module.items()):
        total.update(c)
        killed = c["killed"] + c["timeout"]
        score = killed / max(killed + c["survived"], 1)
        odd = f"  suspicious {c['suspicious']:4d}" if c["suspicious"] else ""
        print(f"{module:40s} killed {killed:4d}  survived {c['survived']:4d}  "
              f"no tests {c['no tests']:4d}{odd}  score {score:.2f}")
    killed = total["killed"] + total["timeout"]
    print(f"mutation score: {killed / max(killed + total['survived'], 1):.3f} "
          f"({killed} killed, {total['survived']} survived, {total['no tests']} not covered)")


if __name__ == "__main__":
    main(sys.argv[1])
