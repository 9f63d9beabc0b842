"""Plumbing with one home: where outputs and caches live, atomic writes, timestamps, provenance.

**Roots.** Outputs (runs, indexes, sweeps, reports) go under :func:`results_dir`:
``$RRFBENCH_RESULTS`` if set, else ``<project>/results`` where ``<project>`` is the nearest
folder at or above the working folder that holds ``pyproject.toml`` (so a notebook kernel
started in ``notebooks/`` and the CLI started at the top share one cache), else
``./results``. Per-machine caches (embeddings, exported ONNX models) go under
:func:`cache_dir`: ``$RRFBENCH_CACHE`` or ``~/.cache/rrfbench``. Nothing is written beside the
data.

**One writer per cache entry.** :func:`exclusive` holds an advisory lock on a file, so two
processes that need the same expensive entry (two notebooks, two test workers, the CLI and a
notebook encoding one corpus) do not both compute it: the second waits, then finds it done.

**Atomic writes.** Every file rrfbench writes goes through one of the ``write_*`` functions:
a temporary file in the same folder, then ``os.replace``, so a killed process never leaves a
half-written file where a finished one is expected.
"""

from __future__ import annotations

import gzip
import io
import json
import os
import sqlite3
import subprocess
import tempfile
import time
from contextlib import contextmanager
from functools import lru_cache
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows: no advisory locks (see exclusive)
    fcntl = None

from .._version import __version__


# --------------------------------------------------------------------------- roots
def project_root(start: str | Path | None = None) -> Path | None:
    """The nearest folder at or above ``start`` (default: the working folder) holding
    ``pyproject.toml``; ``None`` if there is none."""
    here = Path(start or os.getcwd()).resolve()
    for folder in (here, *here.parents):
        if (folder / "pyproject.toml").is_file():
            return folder
    return None


def results_dir() -> Path:
    """Root of all outputs: ``$RRFBENCH_RESULTS``, else ``<project>/results``, else ``./results``."""
    env = os.environ.get("RRFBENCH_RESULTS")
    if env:
        return Path(env)
    root = project_root()
    return (root / "results") if root is not None else Path("results")


def cache_dir() -> Path:
    """Per-machine cache: ``$RRFBENCH_CACHE`` or ``~/.cache/rrfbench``."""
    return Path(os.environ.get("RRFBENCH_CACHE") or Path.home() / ".cache" / "rrfbench")


# --------------------------------------------------------------------------- atomic writes
def _tmp_for(path: Path, suffix: str = ".tmp") -> tuple[int, str]:
    path.parent.mkdir(parents=True, exist_ok=True)
    return tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=suffix)


def write_with(writer, path: str | Path, suffix: str = ".tmp") -> Path:
    """Call ``writer(tmp_path)`` (any library's own save function), then move the temporary
    file onto ``path``: the one atomic-write primitive every ``write_*`` uses."""
    path = Path(path)
    fd, tmp = _tmp_for(path, suffix)
    os.close(fd)
    try:
        writer(tmp)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    return path


def write_bytes(path: str | Path, data: bytes) -> Path:
    """Write ``data`` to ``path`` atomically."""
    def w(tmp):
        with open(tmp, "wb") as fh:
            fh.write(data)
    return write_with(w, path)


def write_text(path: str | Path, text: str) -> Path:
    """Write UTF-8 ``text`` atomically; a ``.gz`` path is gzip-compressed (mtime 0, so the same
    text always gives the same bytes) at level 1: on a 12.6 MB TREC run it is 6x faster than
    gzip's level 9 (0.20 s vs 1.23 s) for a file 7% larger (4.85 vs 4.51 MB)."""
    data = text.encode("utf-8")
    if str(path).endswith(".gz"):
        buf = io.BytesIO()
        with gzip.GzipFile(fileobj=buf, mode="wb", mtime=0, compresslevel=1) as gz:
            gz.write(data)
        data = buf.getvalue()
    return write_bytes(path, data)


def write_json(path: str | Path, obj) -> Path:
    """Indented JSON (non-JSON values via ``str``), atomically."""
    return write_text(path, json.dumps(obj, indent=2, default=str) + "\n")


def write_parquet(path: str | Path, df) -> Path:
    """A pandas or polars DataFrame (or a pyarrow Table) as parquet, atomically."""
    def w(tmp):
        if hasattr(df, "write_parquet"):
            df.write_parquet(tmp)
        elif hasattr(df, "to_parquet"):
            df.to_parquet(tmp, index=False)
        else:
            pq.write_table(df, tmp)
    return write_with(w, path, ".parquet")


def write_npy(path: str | Path, array) -> Path:
    """A NumPy array as ``.npy``, atomically."""
    def w(tmp):
        with open(tmp, "wb") as fh:
            np.save(fh, array)
    return write_with(w, path, ".npy")


def write_figure(path: str | Path, fig, dpi: int = 110) -> Path:
    """A matplotlib figure as PNG, atomically."""
    return write_with(lambda tmp: fig.savefig(tmp, dpi=dpi, bbox_inches="tight",
                                                  format="png"), path, ".png")


def write_sqlite(path: str | Path, build) -> Path:
    """Build an SQLite database with ``build(connection)`` and move it onto ``path`` when done."""
    def w(tmp):
        os.unlink(tmp)  # sqlite3 creates the file itself
        con = sqlite3.connect(tmp)
        try:
            build(con)
            con.commit()
        finally:
            con.close()
    return write_with(w, path, ".sqlite")


# --------------------------------------------------------------------------- locks
@contextmanager
def exclusive(path: str | Path):
    """Hold an exclusive advisory lock on ``path`` (created if missing) for the ``with`` block.

    Blocks while another process holds it. Locks are ``fcntl.flock`` locks, so the OS drops one
    when its process dies (a killed encoder never leaves a stale lock). Where ``fcntl`` does not
    exist (Windows) this only creates the file: writes stay atomic, and two processes may then
    both compute an entry, as before.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    if fcntl is None:  # pragma: no cover - not POSIX
        path.touch()
        yield path
        return
    with open(path, "a") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield path
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


# --------------------------------------------------------------------------- time, provenance
def utc_now() -> str:
    """The current UTC time as ``YYYY-MM-DDTHH:MM:SSZ``."""
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


@lru_cache(maxsize=1)
def git_commit() -> str:
    """The commit of the rrfbench checkout (``unknown`` outside a git checkout)."""
    try:
        out = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True,
                             cwd=Path(__file__).resolve().parent, timeout=5)
        return out.stdout.strip() or "unknown"
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def provenance(dataset=None, **extra) -> dict:
    """Who made these numbers: rrfbench version, git commit, time, and the dataset's
    name and content fingerprint when given."""
    out = {"rrfbench": __version__, "git_commit": git_commit(), "created": utc_now()}
    if dataset is not None:
        out = {"dataset": dataset.name, "fingerprint": dataset.fingerprint, **out}
    out.update(extra)
    return out
