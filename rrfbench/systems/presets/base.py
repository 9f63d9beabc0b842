"""What every studied system shares: knobs, fidelity notes, and the per-query run loop.

A :class:`Preset` is a production system's fusion reproduced on rrfbench runs: which
retriever plays each of its roles (``streams``), how many candidates it asks each for
(:meth:`Preset.depth`), how it fuses one query's lists in its own order, ties included
(:meth:`Preset.fuse_query`), the knobs it really exposes with their shipped values and ranges,
the configuration shapes it loads (``exports``), and a fidelity list saying what is modelled
exactly, what under a stated assumption, and what not at all.

:meth:`Preset.run` hands rrfbench a :class:`~rrfbench.core.runs.Run` whose scores keep the
system's order (:func:`rrfbench.fusion.functions.order_to_scores`), so rrfbench's docid tie rule never
reorders what the system would return.

Called from: ``systems.engines.base``, ``systems.presets``, ``systems.presets.aimemory``,
``systems.presets.nexusai``, ``systems.presets.titan``, ``systems.presets.zeus``,
``systems.registry``, ``workflows.dataset``.
"""

from __future__ import annotations

import itertools
import json
import weakref
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import NamedTuple

import pandas as pd

from ...core.errors import InputError
from ...core.runs import Run
from ...fusion.functions import order_to_scores

EXACT, ASSUMED, NOT_MODELLED = "exact", "assumption", "not modelled"


@dataclass(frozen=True)
class Knob:
    """A setting the system really exposes: shipped value, allowed range, tuning grid."""

    name: str
    default: object
    lo: float | None = None
    hi: float | None = None
    grid: tuple = ()
    fixed: bool = False
    integer: bool = False
    optional: bool = False   # None means "off", a setting distinct from any number
    note: str = ""

    @property
    def kind(self) -> str:
        if isinstance(self.default, bool):
            return "true or false"
        off = " or off" if self.optional else ""
        if self.integer:
            return f"a whole number in [{self.lo:g}, {self.hi:g}]{off}"
        if self.lo is not None:
            return f"a number in [{self.lo:g}, {self.hi:g}]{off}"
        return "a value"

    def parse(self, text: str):
        """A value from command-line text (``--set name=text``), checked."""
        t = text.strip()
        if self.optional and t.lower() in ("off", "none", "null"):
            return None
        if isinstance(self.default, bool):
            if t.lower() in ("true", "1", "yes", "on"):
                value = True
            elif t.lower() in ("false", "0", "no", "off"):
                value = False
            else:
                raise InputError(f"--set {self.name}: {text!r} is not {self.kind}")
        else:
            try:
                value = json.loads(t)
            except json.JSONDecodeError:
                raise InputError(f"--set {self.name}: {text!r} is not {self.kind}") from None
        self.check(value)
        return value

    def check(self, value) -> None:
        if value is None and self.optional:
            return
        if isinstance(self.default, bool):
            if not isinstance(value, bool):
                raise InputError(f"knob {self.name}: {value!r} is not {self.kind}")
        elif self.lo is not None or self.integer:
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise InputError(f"knob {self.name}: {value!r} is not {self.kind}")
            if self.integer and float(value) != int(value):
                raise InputError(f"knob {self.name}: {value!r} is not {self.kind}")
        if self.fixed and value != self.default:
            raise InputError(f"knob {self.name} is fixed at {self.default} in this system"
                             + (f" ({self.note})" if self.note else ""))
        if self.lo is not None and not (self.lo <= value <= self.hi):
            raise InputError(f"knob {self.name}: {value} is outside the system's range "
                             f"[{self.lo:g}, {self.hi:g}]")

    def to_json(self) -> dict:
        return {"default": self.default, "range": [self.lo, self.hi], "fixed": self.fixed,
                "grid": list(self.grid), "note": self.note}


@dataclass(frozen=True)
class Fidelity:
    """One behaviour of the system and how faithfully rrfbench reproduces it."""

    item: str
    status: str   # EXACT, ASSUMED or NOT_MODELLED
    note: str = ""

    def to_json(self) -> dict:
        return {"item": self.item, "status": self.status, "note": self.note}


class Hit(NamedTuple):
    """One retrieved document of one stream: its id and the retriever's score."""

    docid: str
    score: float


@dataclass
class Preset:
    """A studied system (subclass it in one module per system; see the package docstring).

    The per-query pipeline is split in two hooks so that :meth:`explain_query` can show every
    step: :meth:`contributions` (each stream's contribution to each candidate, in the order the
    system first sees them) and :meth:`finish` (sorting, filters, cuts, multipliers: what the
    system does to the fused list).
    """

    name: str
    system: str
    streams: dict[str, str]             # role -> rrfbench retriever spec
    knobs: tuple[Knob, ...]
    fidelity: tuple[Fidelity, ...] = ()
    default_limit: int = 10
    exports: dict[str, Callable] = field(default_factory=dict)  # format -> render(params, prov)
    extra_defaults: dict = field(default_factory=dict)  # settings that are not tuning knobs
    full_streams: dict[str, str] = field(default_factory=dict)  # every stream, when modelled

    # -- the system's behaviour (override) --------------------------------------------------
    def depth(self, role: str, params: dict, limit: int) -> int:
        """Candidates the system asks the ``role`` retriever for."""
        return limit

    def filter_hits(self, role: str, hits: list[Hit], params: dict) -> list[Hit]:
        """A stream's own filter before fusion (e.g. a similarity threshold); ranks follow the
        filtered list."""
        return hits

    def contributions(self, lists: dict[str, list[Hit]], params: dict, limit: int
                      ) -> dict[str, dict[str, float]]:
        """docid -> {role: contribution}, in the order the system first sees each document."""
        raise NotImplementedError

    def finish(self, scores: dict[str, float], params: dict, limit: int,
               prior: dict | None = None) -> tuple[list[tuple[str, float]], dict[str, str]]:
        """The fused list after the system's sort, filters and cuts, and for each candidate
        the stage that cut it (``"kept"`` for the survivors)."""
        out = ranked(scores, "stable")
        stage = {d: "kept" for d, _ in out[:limit]} | {d: "cut: limit" for d, _ in out[limit:]}
        return out[:limit], stage

    def valid(self, params: dict) -> bool:
        """Whether a grid point is a configuration the system can have."""
        return True

    def limit_for(self, params: dict, limit: int | None) -> int:
        """The result limit: the one asked for, else the system's."""
        return int(limit or self.default_limit)

    def roles_available(self) -> dict[str, str]:
        """The streams rrfbench can provide now (a system may fall back without one)."""
        return dict(self.streams)

    def skips_query(self, text: str | None) -> bool:
        """Whether the system returns nothing for this query text without searching."""
        return False

    # -- shared -----------------------------------------------------------------------------
    def fuse_query(self, lists: dict[str, list], params: dict, limit: int,
                   prior: dict | None = None) -> list[tuple[str, float]]:
        """One query: the streams' lists by role -> the system's ranked (docid, score)."""
        lists = {role: [h if isinstance(h, Hit) else Hit(h, 0.0) for h in hits]
                 for role, hits in lists.items()}
        contribs = self.contributions(lists, params, limit)
        scores = {d: sum(c.values()) for d, c in contribs.items()}
        return self.finish(scores, params, limit, prior)[0]

    def explain_query(self, lists: dict[str, list[Hit]], params: dict, limit: int,
                      prior: dict | None = None) -> list[dict]:
        """Every candidate of one query: per-stream rank and contribution, the fused score,
        the final rank (``None`` when cut) and the stage that kept or cut it."""
        contribs = self.contributions(lists, params, limit)
        scores = {d: sum(c.values()) for d, c in contribs.items()}
        final, stage = self.finish(scores, params, limit, prior)
        final_rank = {d: i + 1 for i, (d, _) in enumerate(final)}
        final_score = dict(final)
        pos = {role: {h.docid: (i + 1, h.score) for i, h in enumerate(hits)}
               for role, hits in lists.items()}
        rows = []
        for d, c in contribs.items():
            row = {"docid": d, "final_rank": final_rank.get(d), "stage": stage.get(d, "kept"),
                   "fused_score": scores[d], "final_score": final_score.get(d)}
            for role in lists:
                rank, raw = pos[role].get(d, (None, None))
                row[f"{role}_rank"] = rank
                row[f"{role}_score"] = raw
                row[f"{role}_contrib"] = c.get(role, 0.0)
            rows.append(row)
        rows.sort(key=lambda r: (r["final_rank"] is None, r["final_rank"] or 0))
        return rows

    def query_lists(self, runs: dict[str, Run], qid: str, params: dict, limit: int
                    ) -> dict[str, list[Hit]]:
        """One query's lists by role, cut at the system's depth and filtered per stream."""
        return {role: self.filter_hits(role, hits_by_query(run, self.depth(role, params, limit))
                                       .get(qid, []), params)
                for role, run in runs.items()}

    def defaults(self) -> dict:
        return {k.name: k.default for k in self.knobs} | dict(self.extra_defaults)

    def knob(self, name: str) -> Knob:
        for k in self.knobs:
            if k.name == name:
                return k
        raise InputError(f"preset {self.name!r} has no knob {name!r}; knobs: "
                         f"{', '.join(k.name for k in self.knobs)}")

    def knob_table(self) -> dict:
        return {k.name: k.to_json() for k in self.knobs}

    def check(self, params: dict) -> None:
        known = {k.name: k for k in self.knobs}
        for name, v in params.items():
            if name in known:
                known[name].check(v)
            elif name not in self.extra_defaults:
                raise InputError(f"preset {self.name!r} has no knob {name!r}; "
                                 f"knobs: {', '.join(known)}")

    def parse_settings(self, items: list[str]) -> dict:
        """``["k=20", "fts_weight=0.5"]`` -> checked knob values (for ``--set``)."""
        out = {}
        for item in items:
            name, eq, text = item.partition("=")
            if not eq or not name.strip():
                raise InputError(f"--set: expected knob=value, got {item!r}")
            out[name.strip()] = self.knob(name.strip()).parse(text)
        return out

    def grid(self) -> list[dict]:
        """Every combination of the tunable knobs' grids that the system can have."""
        tunable = [k for k in self.knobs if not k.fixed and k.grid]
        out = []
        for combo in itertools.product(*[k.grid for k in tunable]):
            p = self.defaults() | dict(zip([k.name for k in tunable], combo, strict=True))
            if self.valid(p):
                out.append(p)
        return out

    def run(self, runs: dict[str, Run], params: dict | None = None, limit: int | None = None,
            prior: dict[str, float] | None = None, name: str | None = None,
            queries: dict[str, str] | None = None) -> Run:
        """The system's ranking for every query of ``runs`` (by role), as a Run.

        ``queries`` (qid -> text) lets a system refuse a query the way it would (titan returns
        nothing for an empty or whitespace query).
        """
        rows_q, rows_d, rows_s = [], [], []
        for q, ranked_q in self.ranked_lists(runs, params, limit, prior, queries).items():
            rows_q += [q] * len(ranked_q)
            rows_d += [d for d, _ in ranked_q]
            rows_s += list(order_to_scores([s for _, s in ranked_q]))
        df = pd.DataFrame({"qid": rows_q, "docid": rows_d, "score": rows_s})
        return Run(df, name or f"preset:{self.name}")

    def ranked_lists(self, runs: dict[str, Run], params: dict | None = None,
                     limit: int | None = None, prior: dict[str, float] | None = None,
                     queries: dict[str, str] | None = None) -> dict[str, list[tuple[str, float]]]:
        """qid -> the system's ranked (docid, score) list, for every query of ``runs`` that
        gets one (sorted qids): what :meth:`run` tabulates, without the table (a grid scores
        these lists directly, :class:`rrfbench.fusion.sweep.JudgedLists`)."""
        params = self.defaults() | (params or {})
        self.check(params)
        limit = self.limit_for(params, limit)
        lists: dict[str, dict[str, list[Hit]]] = {}
        for role, run in runs.items():
            per_q = hits_by_query(run, self.depth(role, params, limit))
            lists[role] = {q: self.filter_hits(role, hits, params) for q, hits in per_q.items()}
        qids = sorted(set().union(*[set(v) for v in lists.values()])) if lists else []
        out = {}
        for q in qids:
            if queries is not None and self.skips_query(queries.get(q)):
                continue
            ranked_q = self.fuse_query({role: lists[role].get(q, []) for role in lists}, params,
                                       limit, prior)
            if ranked_q:
                out[q] = ranked_q
        return out

    def fidelity_lines(self) -> list[str]:
        return [f"{f.status}: {f.item}" + (f" ({f.note})" if f.note else "")
                for f in self.fidelity]


_HITS: dict[int, tuple] = {}


def hits_by_query(run: Run, depth: int | None) -> dict[str, list[Hit]]:
    """qid -> the run's top ``depth`` as :class:`Hit` lists (the run's order; queries by first
    appearance). Memoised per run table and depth while the table lives: tuning runs the same
    runs through every grid point, and building the lists was most of a preset's run time.
    Callers must not mutate the lists (filters build new ones)."""
    key = id(run.df)
    entry = _HITS.get(key)
    if entry is None or entry[0]() is not run.df:
        entry = (weakref.ref(run.df), {})
        _HITS[key] = entry
        weakref.finalize(run.df, _HITS.pop, key, None)
    memo = entry[1]
    if depth not in memo:
        df = run.df if depth is None else run.df[run.df["rank"] <= depth]
        per_q: dict[str, list[Hit]] = {}
        for q, d, s in zip(df["qid"].tolist(), df["docid"].tolist(), df["score"].tolist(),
                           strict=True):
            per_q.setdefault(q, []).append(Hit(d, s))
        memo[depth] = per_q
    return memo[depth]


def ranked(scores: dict[str, float], ties: str = "stable") -> list[tuple[str, float]]:
    """Sort (docid, score) by score descending; ``ties``: ``stable`` keeps insertion order
    (JavaScript's and Python's stable sorts), ``docid`` breaks ties by docid ascending."""
    if ties == "docid":
        return sorted(scores.items(), key=lambda x: (-x[1], x[0]))
    return sorted(scores.items(), key=lambda x: -x[1])
