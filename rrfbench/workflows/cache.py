"""The one cache rule for results computed from runs: a saved result is reused only while the
content digests of the runs it read, its grid, protocol and the source of the code that computed
it are unchanged (:class:`Inputs`, :func:`reuse_or_compute`); otherwise it is recomputed, and
the log line says which and why."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from .._version import __version__
from ..core.errors import InputError
from ..results.dataset import load_result, save_result
from ..retrievers import retriever_name, run_path
from ..retrievers.base import run_content_digest


def _quiet(_msg: str) -> None:
    """The ``log`` that says nothing."""


def _source_digest(*modules) -> str:
    h = hashlib.sha256(__version__.encode())
    for m in modules:
        h.update(Path(m.__file__).read_bytes())
    return h.hexdigest()[:16]


# --------------------------------------------------------------------------- reuse
@dataclass(frozen=True)
class Inputs:
    """What a saved result was computed from: the content digest of every run it read
    (``dataset/split/run`` -> digest; ``None`` while a run is not cached yet) and a key over
    those digests, the grid, the protocol and the code."""

    runs: dict
    key: str

    def describe(self, n: int = 4) -> str:
        names = _short_names(self.runs)
        shown = [f"{names[k]} {d[:6]}.." for k, d in list(self.runs.items())[:n]]
        more = f" and {len(self.runs) - n} more" if len(self.runs) > n else ""
        return ", ".join(shown) + more


def _short_names(runs: dict) -> dict:
    """``ds/split/run`` keys without the dataset (one dataset) or as they are (a suite)."""
    sets = {k.split("/")[0] for k in runs}
    return {k: k.split("/", 1)[1] if len(sets) == 1 else k for k in runs}


def run_inputs(runs: Sequence[tuple], code: Sequence = (), **parts) -> Inputs:
    """:class:`Inputs` of the cached runs ``(dataset name, split, spec)`` and ``parts`` (grid,
    protocol, metric...); ``code``: the modules whose source changes the result."""
    digests = {}
    for name, split, spec in runs:
        run = retriever_name(spec)
        digests[f"{name}/{split}/{run}"] = run_content_digest(run_path(name, split, run))
    blob = json.dumps({"runs": digests, "code": _source_digest(*code), **parts}, sort_keys=True,
                      default=str)
    return Inputs(digests, hashlib.sha256(blob.encode()).hexdigest()[:16])


def reuse_or_compute(what: str, path: Path, inputs: Callable[[], Inputs], compute: Callable,
                     save: Callable | None = None, reuse: bool = True, write: bool = True,
                     log: Callable[[str], None] = _quiet, prepare: Callable | None = None):
    """The one cache rule for results computed from runs (preset tunings, suites): a saved
    result at ``path`` is reused only while the content digests of the runs it read, the grid
    and the code are unchanged (:class:`Inputs`); otherwise it is recomputed with ``compute()``
    and, with ``write``, saved with ``save(result)`` (default: best.json at ``path``). The log
    line says which and why. Returns ``(result, reused)``.

    ``prepare()`` retrieves the runs ``inputs`` names. It is called when a saved result exists
    but some of its runs are not cached yet (a fresh clone with the committed results): their
    content decides, so they are retrieved (``compute`` would retrieve them anyway) and
    compared, instead of recomputing a result that their content may well reproduce."""
    if reuse and path.exists():
        now = inputs()
        if prepare is not None and None in now.runs.values():
            prepare()
            now = inputs()
        try:
            old = load_result(path)
        except InputError as exc:
            old, why = None, f"the saved file is unreadable: {exc}"
        if old is not None:
            prov = old.provenance or {}
            if prov.get("cache_key") == now.key and None not in now.runs.values():
                log(f"{what}: reusing {path} (runs {now.describe()} unchanged)")
                return old, True
            before = prov.get("runs_read") or {}
            names = _short_names(now.runs)
            changed = [f"{names[k]} {str(before.get(k))[:6]}.. -> {str(d)[:6]}.."
                       for k, d in now.runs.items() if before.get(k) != d]
            why = ("run content changed: " + ", ".join(changed[:4]) if before and changed
                   else "saved before run digests were recorded" if not before
                   else "grid, protocol or code changed")
        log(f"{what}: recomputing {path} ({why})")
    result = compute()
    inp = inputs()  # runs retrieved just now are cached now
    stamp = {"provenance": {**result.provenance, "cache_key": inp.key, "runs_read": inp.runs}}
    if hasattr(result, "cache_key"):
        stamp["cache_key"] = inp.key
    result = replace(result, **stamp)
    if write:
        (save or (lambda r: save_result(r, path)))(result)
    return result, False
