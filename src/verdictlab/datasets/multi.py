"""Multi-response items: one question, K >= 3 responses keyed by system name, expanded into pairs.

A :class:`MultiItem` is expanded by :func:`expand_pairs` into one :class:`~verdictlab.core.items.PairItem`
per unordered pair of systems (K (K - 1) / 2 pairs); the run judges each pair in both orders (AB and
BA), so every ordered pair is seen.  Which system is canonical ``A`` is drawn per pair with a seeded
RNG (default seed 42; recorded in the load notes), so gold labels are not all on one side.

Pair item ids are ``<item_id>::<system_a>::<system_b>``; every pair item records in ``meta``:
``multi_id`` (the multi-response item) and ``system_a`` / ``system_b``, which are also the pair's own
``system_a`` / ``system_b`` (they travel into every judgment row, for self-preference and the leaderboard).  When the source gives a gold score per system
(``scores``, higher is better) or a gold ranking (``ranking``, best first), the pair's label is the
better system (equal scores: ``tie``); otherwise the pair is unlabelled.

Loaders
-------
``multi-jsonl``      JSON Lines, one question per line::

        {"item_id": "q1", "question": "...", "responses": {"sysA": "...", "sysB": "...", "sysC": "..."},
         "scores": {"sysA": 8, "sysB": 6, "sysC": 7}, "reference": "...", "category": "..."}

``mtbench-answers``  an MT-Bench-style directory: ``question.jsonl`` (``question_id``, ``category``,
                     ``turns``) and ``model_answer/<model>.jsonl`` (``question_id``, ``model_id``,
                     ``choices[0].turns``); turn ``turn`` (default 1) of each answer is the response.
                     Questions answered by fewer than three models are dropped (and counted).
"""

from __future__ import annotations

from itertools import combinations
from typing import Any, Literal

import numpy as np
import pandas as pd
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from ..core.items import ItemError, PairItem
from .registry import DatasetLoad

__all__ = ["MultiItem", "expand_pairs", "load_multi_jsonl", "load_mtbench_answers", "pair_systems",
           "PAIR_ID_SEP"]

PAIR_ID_SEP = "::"


class MultiItem(BaseModel):
    """One question with K >= 3 responses keyed by system name, optional gold scores or ranking."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    item_id: str = Field(min_length=1)
    dataset: str = Field(min_length=1)
    question: str
    responses: dict[str, str]
    scores: dict[str, float] | None = None
    ranking: list[str] | None = None
    reference: str | None = None
    category: str | None = None
    meta: dict[str, Any] = Field(default_factory=dict)

    @field_validator("item_id", mode="before")
    @classmethod
    def _item_id(cls, v: Any) -> Any:
        return str(v) if isinstance(v, int) and not isinstance(v, bool) else v

    @model_validator(mode="after")
    def _check(self) -> MultiItem:
        if len(self.responses) < 3:
            raise ValueError(f"needs at least 3 responses keyed by system name, got {len(self.responses)}")
        bad = [s for s in self.responses if not s or PAIR_ID_SEP in s]
        if bad:
            raise ValueError(f"system name {bad[0]!r} is empty or contains {PAIR_ID_SEP!r}")
        for what, names in (("scores", self.scores or {}), ("ranking", self.ranking or [])):
            extra = [s for s in names if s not in self.responses]
            if extra:
                raise ValueError(f"{what} names system {extra[0]!r} that has no response")
        if self.scores is not None and self.ranking is not None:
            raise ValueError("give either scores or ranking, not both")
        return self

    def gold_scores(self) -> dict[str, float] | None:
        if self.scores is not None:
            return dict(self.scores)
        if self.ranking is not None:
            return {s: -float(i) for i, s in enumerate(self.ranking)}
        return None


def _label(scores: dict[str, float] | None, a: str, b: str) -> Literal["A", "B", "tie"] | None:
    if scores is None or a not in scores or b not in scores:
        return None
    if scores[a] == scores[b]:
        return "tie"
    return "A" if scores[a] > scores[b] else "B"


def expand_pairs(items: list[MultiItem], *, seed: int = 42) -> list[PairItem]:
    """Every unordered pair of systems of every item as a PairItem (module docstring)."""
    rng = np.random.default_rng(seed)
    out: list[PairItem] = []
    for it in items:
        scores = it.gold_scores()
        for x, y in combinations(sorted(it.responses), 2):
            a, b = (y, x) if rng.integers(0, 2) else (x, y)
            meta = {**it.meta, "multi_id": it.item_id, "system_a": a, "system_b": b}
            out.append(PairItem(item_id=f"{it.item_id}{PAIR_ID_SEP}{a}{PAIR_ID_SEP}{b}", dataset=it.dataset,
                                question=it.question, response_a=it.responses[a], response_b=it.responses[b],
                                label=_label(scores, a, b), reference=it.reference, category=it.category,
                                meta=meta, system_a=a, system_b=b))
    return out


def _make_multi(rec: dict[str, Any], path: str, row: int) -> MultiItem:
    try:
        return MultiItem(**rec)
    except ValidationError as exc:
        err = exc.errors()[0]
        field = ".".join(str(p) for p in err.get("loc", ())) or None
        raise ItemError(err.get("msg", str(exc)), path=path, row=row, field=field) from None


def _finish(name: str, multis: list[MultiItem], source: str, seed: int, dropped: list[dict[str, Any]],
            limit: int | None) -> DatasetLoad:
    if limit is not None:
        multis = multis[: int(limit)]
    pairs = expand_pairs(multis, seed=seed)
    ks = sorted({len(m.responses) for m in multis})
    return DatasetLoad(name=name, items=list(pairs), source=source, dropped=dropped, reordered=True, seed=seed,
                       notes=[f"multi-response: {len(multis)} items with K in {ks} responses expanded into "
                              f"{len(pairs)} pairs; canonical side drawn per pair (seed {seed})"])


def load_multi_jsonl(path: str | None, *, dataset: str | None = None, seed: int = 42, limit: int | None = None,
                     **options: Any) -> DatasetLoad:
    """``multi-jsonl`` loader (module docstring)."""
    from ._common import check_no_options, read_records, require_path

    check_no_options("multi-jsonl", options)
    p = require_path(path, "multi-jsonl")
    name = dataset or p.stem
    multis: list[MultiItem] = []
    seen: dict[str, int] = {}
    for row, rec in read_records(p):
        for f in ("item_id", "question", "responses"):
            if f not in rec:
                raise ItemError("missing required field", path=str(p), row=row, field=f)
        if not isinstance(rec["responses"], dict):
            raise ItemError("must be an object mapping system name to response text", path=str(p), row=row,
                            field="responses")
        known = {"item_id", "question", "responses", "scores", "ranking", "reference", "category", "meta"}
        extra = {k: rec[k] for k in rec if k not in known}
        m = _make_multi({**{k: v for k, v in rec.items() if k in known}, "dataset": name,
                         "meta": {**(rec.get("meta") or {}), **extra}}, str(p), row)
        if m.item_id in seen:
            raise ItemError(f"duplicate item_id {m.item_id!r} (first on row {seen[m.item_id]})", path=str(p),
                            row=row, field="item_id")
        seen[m.item_id] = row
        multis.append(m)
    if not multis:
        raise ItemError("no records", path=str(p))
    return _finish(name, multis, str(p), seed, [], limit)


def _answer_text(rec: dict[str, Any], turn: int, path: str, row: int) -> str:
    try:
        turns = rec["choices"][0]["turns"]
    except (KeyError, IndexError, TypeError):
        raise ItemError("expected choices[0].turns", path=path, row=row, field="choices") from None
    if not isinstance(turns, list) or len(turns) < turn or not isinstance(turns[turn - 1], str):
        raise ItemError(f"has no text for turn {turn}", path=path, row=row, field="choices.0.turns")
    return turns[turn - 1]


def load_mtbench_answers(path: str | None, *, dataset: str | None = None, turn: int = 1, seed: int = 42,
                         models: list[str] | None = None, limit: int | None = None, **options: Any) -> DatasetLoad:
    """``mtbench-answers`` loader (module docstring): ``path`` is the directory holding
    ``question.jsonl`` and ``model_answer/``."""
    from ._common import check_no_options, read_records, require_path

    check_no_options("mtbench-answers", options)
    root = require_path(path, "mtbench-answers")
    qfile, adir = root / "question.jsonl", root / "model_answer"
    if not qfile.is_file() or not adir.is_dir():
        raise ItemError("expected question.jsonl and a model_answer/ directory", path=str(root))
    questions: dict[str, tuple[str, str | None]] = {}
    for row, rec in read_records(qfile):
        if "question_id" not in rec or not isinstance(rec.get("turns"), list) or len(rec["turns"]) < turn:
            raise ItemError(f"needs question_id and turns with at least {turn} entries", path=str(qfile), row=row,
                            field="turns")
        questions[str(rec["question_id"])] = (str(rec["turns"][turn - 1]), rec.get("category"))
    answers: dict[str, dict[str, str]] = {}
    for f in sorted(adir.glob("*.jsonl")):
        model = f.stem
        if models is not None and model not in models:
            continue
        for row, rec in read_records(f):
            if "question_id" not in rec:
                raise ItemError("missing required field", path=str(f), row=row, field="question_id")
            answers.setdefault(str(rec["question_id"]), {})[str(rec.get("model_id") or model)] = \
                _answer_text(rec, turn, str(f), row)
    name = dataset or f"{root.name}-turn{turn}"
    multis, dropped = [], []
    for qid, (question, category) in questions.items():
        resp = answers.get(qid, {})
        if len(resp) < 3:
            dropped.append({"row": qid, "reason": f"fewer than 3 model answers ({len(resp)})"})
            continue
        multis.append(MultiItem(item_id=qid, dataset=name, question=question, responses=resp, category=category,
                                meta={"turn": turn}))
    if not multis:
        raise ItemError("no question has answers from at least 3 models", path=str(root))
    return _finish(name, multis, str(root), seed, dropped, limit)


def pair_systems(items: list[Any] | pd.DataFrame) -> pd.DataFrame:
    """``dataset, item_id, group, sys_a, sys_b`` for the pair items of multi-response sources (items
    whose meta has ``multi_id``); accepts ``RunStore.items()`` or ``RunStore.items_frame()``."""
    cols = ["dataset", "item_id", "group", "sys_a", "sys_b"]
    if isinstance(items, pd.DataFrame):
        recs = zip(items["dataset"], items["item_id"], items["meta"], strict=True) if len(items) else iter(())
    else:
        recs = ((it.dataset, it.item_id, it.meta) for it in items)
    rows = [(d, str(i), m["multi_id"], m.get("system_a"), m.get("system_b"))
            for d, i, m in recs if isinstance(m, dict) and m.get("multi_id") is not None]
    return pd.DataFrame(rows, columns=cols)

