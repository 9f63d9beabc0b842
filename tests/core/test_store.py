"""One home for paths and writes: the results root resolves from any folder in the project."""

import os
from pathlib import Path

import pytest

from rrfbench.core import store
from tests.conftest import ROOT


def test_results_root_is_the_project_from_any_subfolder(monkeypatch):
    monkeypatch.delenv("RRFBENCH_RESULTS", raising=False)
    for folder in (ROOT, ROOT / "notebooks", ROOT / "rrfbench" / "retrievers"):
        monkeypatch.chdir(folder)
        assert store.results_dir() == ROOT / "results"
    monkeypatch.setenv("RRFBENCH_RESULTS", "/tmp/elsewhere")
    assert store.results_dir() == Path("/tmp/elsewhere")


def test_outside_a_project_falls_back_to_cwd(tmp_path, monkeypatch):
    monkeypatch.delenv("RRFBENCH_RESULTS", raising=False)
    monkeypatch.chdir(tmp_path)
    assert store.project_root() is None and store.results_dir() == Path("results")


def test_atomic_writes_leave_nothing_half_written(tmp_path):
    p = store.write_text(tmp_path / "a" / "x.txt", "hello")
    assert p.read_text() == "hello"
    gz = store.write_text(tmp_path / "x.txt.gz", "same")
    assert gz.read_bytes() == store.write_text(tmp_path / "y.txt.gz", "same").read_bytes()

    def boom(tmp):
        Path(tmp).write_text("partial")
        raise RuntimeError("killed")

    with pytest.raises(RuntimeError):
        store.write_with(boom, tmp_path / "a" / "x.txt")
    assert (tmp_path / "a" / "x.txt").read_text() == "hello"  # the old file is intact
    assert os.listdir(tmp_path / "a") == ["x.txt"]  # no temporary left behind


def test_npy_parquet_json_sqlite(tmp_path):
    import sqlite3

    import numpy as np
    import pandas as pd

    store.write_npy(tmp_path / "e.npy", np.arange(3))
    assert np.load(tmp_path / "e.npy").tolist() == [0, 1, 2]
    store.write_parquet(tmp_path / "t.parquet", pd.DataFrame({"a": [1]}))
    assert pd.read_parquet(tmp_path / "t.parquet").a.tolist() == [1]
    store.write_json(tmp_path / "j.json", {"a": Path("x")})
    assert '"x"' in (tmp_path / "j.json").read_text()
    store.write_sqlite(tmp_path / "s.sqlite", lambda con: con.execute("CREATE TABLE t(x)"))
    assert sqlite3.connect(tmp_path / "s.sqlite").execute("SELECT count(*) FROM t").fetchone() == (0,)


def test_provenance():
    p = store.provenance()
    assert {"rrfbench", "git_commit", "created"} <= set(p) and p["created"].endswith("Z")


def test_exclusive_waits_for_another_process(tmp_path):
    """A second holder gets the lock only after the first (another process) lets go, and a
    killed holder's lock is gone with it."""
    import subprocess
    import sys
    import time

    lock, log = tmp_path / "x.lock", tmp_path / "log"
    holder = subprocess.Popen([sys.executable, "-c", f"""
import time
from rrfbench.core import store
with store.exclusive({str(lock)!r}):
    open({str(log)!r}, "a").write("held\\n")
    time.sleep(1.0)
    open({str(log)!r}, "a").write("released\\n")
"""])
    while not (log.exists() and "held" in log.read_text()):
        assert holder.poll() is None, "the holder died before taking the lock"
        time.sleep(0.02)
    with store.exclusive(lock):
        assert log.read_text() == "held\nreleased\n"  # it waited for the other process
    assert holder.wait(timeout=30) == 0
    killed = subprocess.Popen([sys.executable, "-c", f"""
import time
from rrfbench.core import store
with store.exclusive({str(lock)!r}):
    open({str(log)!r}, "w").write("held\\n")
    time.sleep(60)
"""])
    while log.read_text() != "held\n":
        assert killed.poll() is None, "the holder died before taking the lock"
        time.sleep(0.02)
    killed.kill()
    killed.wait(timeout=30)
    with store.exclusive(lock):  # would block forever if a dead process kept its lock
        pass
