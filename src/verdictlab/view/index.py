"""The viewer's in-memory index of a run: one row per pair per cell with its outcomes, the item texts
to search, and where each pair's judgments sit in the store.

Built once at start-up from the read-only store (:meth:`PairIndex.from_store`): the outcome columns of
every judgment (no texts), :func:`~verdictlab.view.outcomes.pair_outcomes` over them, and the items --
or read from the index cache beside the store (:mod:`verdictlab.view.index_cache`).  After that a list page is a few boolean masks over arrays and a slice, whatever the page number, and a
pair's page reads only that pair's rows by rowid.  The index is the store as it was at start-up;
judgments written later (a run still going) appear after a restart.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ..core.policy import DEFAULT_POLICY, FigurePolicy
from ..core.vocab import CELL_KEY, VERDICTS
from ..errors import UsageError
from ..store import RunStore
from .index_cache import CachedIndex, index_key, read_index, write_index
from .outcomes import OUTCOMES, PAIR_KEY, pair_outcomes

__all__ = ["CELL_FILTERS", "Filters", "Page", "PairIndex", "PairRow", "ViewError"]

#: the cell fields a list can be narrowed by (query parameters of the same names)
CELL_FILTERS: tuple[str, ...] = CELL_KEY
PER_PAGE = 50
SNIPPET_CHARS = 160


class ViewError(UsageError):
    """A request the viewer cannot answer as asked (a bad filter value); the message says which."""


@dataclass(frozen=True)
class Filters:
    """What a list page shows: cell fields (None = any), a system that wrote one of the pair's two
    responses (None = any), one outcome (None = any), a text that the pair's id, question, responses or
    category must contain (case-insensitive), and the page."""

    judge: str | None = None
    protocol: str | None = None
    dataset: str | None = None
    temperature: float | None = None
    decoding: str | None = None
    system: str | None = None
    outcome: str | None = None
    text: str = ""
    page: int = 1

    @classmethod
    def from_query(cls, query: Mapping[str, str]) -> Filters:
        """From a page's query parameters; a bad value raises :class:`ViewError` naming it."""
        def text(name: str) -> str | None:
            v = query.get(name, "")
            return v if v != "" else None

        outcome = text("outcome")
        if outcome is not None and outcome not in OUTCOMES:
            raise ViewError(f"outcome: unknown value {outcome!r}; one of {', '.join(OUTCOMES)}")
        temperature = None
        if text("temperature") is not None:
            try:
                temperature = float(query["temperature"])
            except ValueError:
                raise ViewError(f"temperature: not a number: {query['temperature']!r}") from None
            if not math.isfinite(temperature):
                raise ViewError(f"temperature: not a finite number: {query['temperature']!r}")
        page = 1
        if text("page") is not None:
            try:
                page = int(query["page"])
            except ValueError:
                raise ViewError(f"page: not a whole number: {query['page']!r}") from None
            if page < 1:
                raise ViewError(f"page: must be 1 or more, got {page}")
        return cls(judge=text("judge"), protocol=text("protocol"), dataset=text("dataset"),
                   temperature=temperature, decoding=text("decoding"), system=text("system"), outcome=outcome,
                   text=(query.get("q") or "").strip(), page=page)

    def query(self, **change: Any) -> dict[str, str]:
        """The query parameters of these filters (with ``change`` applied), empty ones left out."""
        values: dict[str, Any] = {"judge": self.judge, "protocol": self.protocol, "dataset": self.dataset,
                                  "temperature": self.temperature, "decoding": self.decoding,
                                  "system": self.system, "outcome": self.outcome, "q": self.text, "page": self.page}
        values.update(change)
        if values.get("page") == 1:
            values.pop("page")
        return {k: str(v) for k, v in values.items()
                if v is not None and v != ""}


@dataclass(frozen=True)
class PairRow:
    """One row of the list: a pair judged in one cell, its modal verdicts and outcomes."""

    judge: str
    protocol: str
    dataset: str
    temperature: float
    decoding: str
    step: str
    item_id: str
    label: str | None
    n_judgments: int
    n_unparsed: int
    modal_AB: str | None
    modal_BA: str | None
    outcomes: tuple[str, ...]
    question: str


@dataclass(frozen=True)
class Page:
    """One page of the list: its rows, how many rows match in all, and per outcome how many rows
    match the cell and text filters (whatever the outcome filter)."""

    filters: Filters
    rows: list[PairRow]
    n_matching: int
    n_pages: int
    per_page: int
    outcome_counts: dict[str, int]


@dataclass
class PairIndex:
    """See the module docstring.  ``pairs`` holds :func:`pair_outcomes`'s rows in key order."""

    pairs: pd.DataFrame
    items: dict[tuple[str, str], dict[str, Any]]
    policy: FigurePolicy
    n_judgments: int
    build_seconds: float
    #: rowids of the judgments, grouped by pair (dataset, item_id): ``rowids[offsets[k]:offsets[k + 1]]``
    rowids: np.ndarray = field(repr=False)
    offsets: np.ndarray = field(repr=False)
    pair_keys: dict[tuple[str, str], int] = field(repr=False)
    retries: dict[str, list[dict[str, Any]]] = field(repr=False)
    #: True when the outcomes and locations were read from the index cache instead of built
    from_cache: bool = False
    choices: dict[str, list[Any]] = field(init=False)
    _item_code: np.ndarray = field(init=False, repr=False)
    _haystack: list[str] = field(init=False, repr=False)
    _columns: dict[str, np.ndarray] = field(init=False, repr=False)
    _text_mask: Any = field(init=False, repr=False)
    _systems: tuple[np.ndarray, np.ndarray] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        p = self.pairs
        self.choices = {c: sorted({_plain(v) for v in p[c].unique()}, key=_sort_key) for c in CELL_FILTERS}
        self._columns = {c: p[c].astype("object").to_numpy() for c in (*PAIR_KEY, "label")}
        self._columns["temperature"] = p["temperature"].to_numpy(dtype=float)
        for o in OUTCOMES:
            self._columns[o] = p[o].to_numpy(dtype=bool)
        for col in ("n_judgments", "n_unparsed"):
            self._columns[col] = p[col].to_numpy(dtype=np.int64)
        for col in ("modal_AB", "modal_BA"):
            self._columns[col] = p[col].astype("object").to_numpy()
        keys = list(zip(self._columns["dataset"], self._columns["item_id"], strict=True))
        self._item_code = np.array([self.pair_keys.get((str(d), str(i)), -1) for d, i in keys], dtype=np.int64)
        order = sorted(self.pair_keys, key=self.pair_keys.__getitem__)
        self._haystack = [_haystack(k, self.items.get(k)) for k in order]
        # the two systems of each item (one extra entry for pairs without a stored item: none)
        systems = [_systems(self.items.get(k)) for k in order] + [(None, None)]
        self._systems = (np.array([a for a, _ in systems], dtype=object), np.array([b for _, b in systems], dtype=object))
        self.choices["system"] = sorted({str(v) for pair in systems for v in pair if v is not None})
        self._text_mask = lru_cache(maxsize=64)(self._text_mask_uncached)

    # -- building ------------------------------------------------------------------------------
    @classmethod
    def from_store(cls, store: RunStore, *, policy: FigurePolicy = DEFAULT_POLICY,
                   cache: Path | None = None) -> PairIndex:
        """Read the store once (outcome columns, items, failed attempts) and build the index.  With
        ``cache`` (a folder, e.g. :func:`~verdictlab.view.index_cache.cache_root`), an index cached there
        for the store as it is now is read instead of built, and a built one is written there."""
        start = time.perf_counter()
        items = _items(store)
        key = index_key(store, policy=policy) if cache is not None else None
        hit = read_index(key, cache) if key is not None else None
        index = hit if hit is not None else _build(store, items, policy)
        if hit is None and key is not None:
            write_index(key, index, cache)
        return cls(pairs=index.pairs, items=items, policy=policy, n_judgments=len(index.rowids),
                   build_seconds=time.perf_counter() - start, rowids=index.rowids, offsets=index.offsets,
                   pair_keys=index.pair_keys, retries=_retries(store), from_cache=hit is not None)

    # -- the list ------------------------------------------------------------------------------
    def page(self, filters: Filters, *, per_page: int = PER_PAGE) -> Page:
        """The rows of ``filters``' page (the last page when it asks for one past the end)."""
        mask = np.ones(len(self.pairs), dtype=bool)
        for name in CELL_FILTERS:
            value = getattr(filters, name)
            if value is not None:
                mask &= self._columns[name] == value
        if filters.system is not None:
            a, b = self._systems
            mask &= ((a == filters.system) | (b == filters.system))[self._item_code]
        if filters.text:
            mask &= self._text_mask(filters.text.casefold())[self._item_code]
        counts = {o: int(np.count_nonzero(mask & self._columns[o])) for o in OUTCOMES}
        if filters.outcome is not None:
            mask &= self._columns[filters.outcome]
        hits = np.flatnonzero(mask)
        n_pages = max(1, -(-len(hits) // per_page))
        page = min(filters.page, n_pages)
        rows = [self._row(int(k)) for k in hits[(page - 1) * per_page: page * per_page]]
        return Page(filters=filters if page == filters.page else _with_page(filters, page), rows=rows,
                    n_matching=len(hits), n_pages=n_pages, per_page=per_page, outcome_counts=counts)

    def _row(self, k: int) -> PairRow:
        c = self._columns
        item = self.items.get((str(c["dataset"][k]), str(c["item_id"][k]))) or {}
        question = str(item.get("question") or item.get("response") or "")
        return PairRow(judge=str(c["judge"][k]), protocol=str(c["protocol"][k]), dataset=str(c["dataset"][k]),
                       temperature=float(c["temperature"][k]), decoding=str(c["decoding"][k]),
                       step=str(c["step"][k]), item_id=str(c["item_id"][k]), label=_opt(c["label"][k]),
                       n_judgments=int(c["n_judgments"][k]), n_unparsed=int(c["n_unparsed"][k]),
                       modal_AB=_opt(c["modal_AB"][k]), modal_BA=_opt(c["modal_BA"][k]),
                       outcomes=tuple(o for o in OUTCOMES if c[o][k]),
                       question=question[:SNIPPET_CHARS] + ("…" if len(question) > SNIPPET_CHARS else ""))

    def _text_mask_uncached(self, needle: str) -> np.ndarray:
        """Per item: does its text contain ``needle`` (already case-folded)?  One extra False at the
        end for pairs without a stored item, so ``mask[-1]`` is their answer."""
        found = [needle in h for h in self._haystack]
        return np.array([*found, False], dtype=bool)

    # -- one pair ------------------------------------------------------------------------------
    def datasets_of(self, item_id: str) -> list[str]:
        """The datasets holding a pair with this id (ids are unique only within a dataset)."""
        return sorted(d for d, i in self.pair_keys if i == item_id)

    def rowids_of(self, dataset: str, item_id: str) -> list[int]:
        """Store rowids of every judgment of the pair (all cells, orders, repetitions, decodings)."""
        k = self.pair_keys.get((dataset, item_id))
        return [] if k is None else self.rowids[self.offsets[k]:self.offsets[k + 1]].tolist()

    def rows_of(self, dataset: str, item_id: str) -> list[PairRow]:
        """The list rows of this pair: its outcomes in each cell."""
        k = self.pair_keys.get((dataset, item_id))
        hits = np.zeros(0, dtype=np.int64) if k is None else np.flatnonzero(self._item_code == k)
        return [self._row(int(k)) for k in hits]

    def item(self, dataset: str, item_id: str) -> dict[str, Any] | None:
        return self.items.get((dataset, item_id))


def _build(store: RunStore, items: Mapping[tuple[str, str], Mapping[str, Any]], policy: FigurePolicy) -> CachedIndex:
    """The outcome rows and the pairs' judgment locations, from the store's outcome columns."""
    keys = store.judgment_keys()
    codes, pair_keys = _pair_codes(keys)
    sort = np.argsort(codes, kind="stable")
    return CachedIndex(pairs=pair_outcomes(keys[_pairwise(keys, codes, pair_keys, items)], policy=policy),
                       rowids=keys["rowid"].to_numpy(dtype=np.int64)[sort],
                       offsets=np.searchsorted(codes[sort], np.arange(len(pair_keys) + 1)), pair_keys=pair_keys)


def _pair_codes(keys: pd.DataFrame) -> tuple[np.ndarray, dict[tuple[str, str], int]]:
    """Per judgment, the code of its pair (dataset, item_id), and the codes by pair."""
    ds = keys["dataset"].cat.codes.to_numpy(dtype=np.int64)
    iid = keys["item_id"].cat.codes.to_numpy(dtype=np.int64)
    uniq, codes = np.unique(ds * (len(keys["item_id"].cat.categories) + 1) + iid, return_inverse=True)
    first = np.zeros(len(uniq), dtype=np.int64)
    first[codes[::-1]] = np.arange(len(keys))[::-1]             # one row of each pair
    ds_names = keys["dataset"].astype("object").to_numpy()[first]
    iid_names = keys["item_id"].astype("object").to_numpy()[first]
    return codes.ravel(), {(str(d), str(i)): k for k, (d, i) in enumerate(zip(ds_names, iid_names, strict=True))}


def _pairwise(keys: pd.DataFrame, codes: np.ndarray, pair_keys: Mapping[tuple[str, str], int],
              items: Mapping[tuple[str, str], Mapping[str, Any]]) -> np.ndarray:
    """The judgments the list's outcomes are about: those of pairs, as in the report's figures --
    not those of pointwise items (a stored point item, or a verdict outside A / B / tie / none, such as
    PASS or a grade), which have no order to flip.  Their pages still show every judgment."""
    point = np.zeros(len(pair_keys), dtype=bool)
    for key, k in pair_keys.items():
        rec = items.get(key)
        point[k] = rec is not None and "response" in rec and "response_a" not in rec
    verdict = keys["verdict"]
    return ~point[codes] & (verdict.isna() | verdict.isin(VERDICTS)).to_numpy(dtype=bool)


def _retries(store: RunStore) -> dict[str, list[dict[str, Any]]]:
    """The failed attempts by trial id."""
    out: dict[str, list[dict[str, Any]]] = {}
    for rec in store.retried_attempts():
        out.setdefault(str(rec["trial_id"]), []).append(rec)
    return out


def _items(store: RunStore) -> dict[tuple[str, str], dict[str, Any]]:
    """Every stored item as a plain dict (JSON, no model validation: it was validated when written)."""
    out: dict[tuple[str, str], dict[str, Any]] = {}
    for dataset, item_id, data in store.stored_item_data():
        rec = json.loads(data)
        out[(str(dataset), str(item_id))] = rec if isinstance(rec, dict) else {}
    return out


def _systems(item: Mapping[str, Any] | None) -> tuple[str | None, str | None]:
    """The item's ``system_a`` / ``system_b`` (``model_a`` / ``model_b`` in items of an earlier verdictlab)."""
    if not item:
        return None, None
    a, b = item.get("system_a", item.get("model_a")), item.get("system_b", item.get("model_b"))
    return (None if a is None else str(a)), (None if b is None else str(b))


def _haystack(key: tuple[str, str], item: Mapping[str, Any] | None) -> str:
    parts = [key[1]]
    if item:
        parts += [str(item.get(f) or "") for f in ("question", "response_a", "response_b", "response", "category")]
    return "\x1f".join(parts).casefold()


def _with_page(filters: Filters, page: int) -> Filters:
    from dataclasses import replace

    return replace(filters, page=page)


def _plain(v: Any) -> Any:
    return float(v) if isinstance(v, float | np.floating) else str(v)


def _sort_key(v: Any) -> tuple[int, Any]:
    return (0, v) if isinstance(v, float) else (1, str(v))


def _opt(v: Any) -> str | None:
    return None if v is None or (isinstance(v, float) and math.isnan(v)) or v is pd.NA else str(v)
