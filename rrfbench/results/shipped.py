"""The suite's advice, shipped with the package: what ``judge`` needs on a team's own
collection, from any folder.

``judge`` (free fusion and ``-p SYSTEM``) reads the suite's result: the recommendation, the
leave-one-collection-out gains that make its prior and the transfer matrix its alternatives
come from (``results/transfer/<suite>/best.json``, ``presets/*/best.json``,
``engines/*/best.json``). Inside the checkout those files are found under the results root;
from a team's folder elsewhere they are not, and recomputing them needs the nine public
collections and hours of encoding. So the package carries a copy of every such file of each
suite in ``rrfbench/results/advice/<suite>.json.gz`` (one gzip of ``{relative path: result}``,
about 0.2 MB for suite en), written by ``python -m rrfbench.results.shipped`` from the committed
results (the Makefile's ``advice`` target; ``tests/results/test_shipped.py`` fails when the copy
and the committed results differ). A result under the results root always wins: the copy is
only read where there is none, and nothing is ever written into the package.

Called from: ``workflows.judge`` and the Makefile.
"""

from __future__ import annotations

import gzip
import json
import sys
from functools import lru_cache
from pathlib import Path

from ..core.errors import InputError
from ..core.store import results_dir, write_bytes
from .dataset import result_from_json

HERE = Path(__file__).resolve().parent / "advice"


def bundle_path(suite: str) -> Path:
    return HERE / f"{suite}.json.gz"


def collect(root: Path, suite: str) -> dict[str, dict]:
    """``{relative path: result JSON}`` of a suite's advice under the results root ``root``."""
    base = root / "transfer" / suite
    paths = [base / "best.json", *sorted(base.glob("presets/*/best.json")),
             *sorted(base.glob("engines/*/best.json"))]
    return {p.relative_to(base).as_posix(): json.loads(p.read_text()) for p in paths if p.is_file()}


def write_bundle(root: Path, suite: str, out: Path | None = None) -> Path:
    """The gzip of :func:`collect` (byte-stable: sorted keys, no time in the gzip header)."""
    blob = json.dumps(collect(root, suite), sort_keys=True, separators=(",", ":")).encode()
    data = gzip.compress(blob, compresslevel=9, mtime=0)
    return write_bytes(out or bundle_path(suite), data)


@lru_cache(maxsize=4)
def _bundle(suite: str) -> dict:
    path = bundle_path(suite)
    if not path.is_file():
        return {}
    return json.loads(gzip.decompress(path.read_bytes()))


def shipped(suite: str, relative: str):
    """The shipped copy of ``transfer/<suite>/<relative>`` as a result object, or ``None``."""
    d = _bundle(suite).get(relative)
    return None if d is None else result_from_json(d, f"{bundle_path(suite)}:{relative}")


def has_shipped(suite: str, relative: str) -> bool:
    return relative in _bundle(suite)


def main(argv: list[str]) -> int:
    """``python -m rrfbench.results.shipped [SUITE ...]``: rewrite the shipped copies from the
    committed results (default: suite en)."""
    for suite in argv or ["en"]:
        got = collect(results_dir(), suite)
        if not got:
            raise InputError(f"{results_dir() / 'transfer' / suite}: no suite result to ship")
        path = write_bundle(results_dir(), suite)
        print(f"{path}: {len(got)} results of suite {suite}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
