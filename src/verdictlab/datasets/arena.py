"""Chatbot Arena conversations (Zheng et al., NeurIPS 2023): crowd votes between two anonymous models.

Source: the hub dataset ``lmsys/chatbot_arena_conversations`` (split ``train``, ~33k battles) or a
JSON / JSON Lines / Parquet copy.  Records hold ``question_id, model_a, model_b, winner ("model_a" |
"model_b" | "tie" | "tie (bothbad)"), judge, conversation_a, conversation_b, turn, anony, language,
tstamp``.

Mapping: ``conversation_a`` -> ``response_a`` (the arena already randomised which model sat left);
winner ``model_a`` -> "A", ``model_b`` -> "B", both ties -> "tie" (``meta["winner"]`` keeps the raw
value).  A multi-turn battle becomes one item whose question holds all user turns and whose
responses hold all assistant turns, labelled.  ``sample=N`` draws N battles without replacement
with ``numpy.random.default_rng(seed)`` (default seed 42) BEFORE validity checks; battles whose
responses are empty or whose two sides disagree on the user turns are dropped and listed in
``dropped``.  ``tie_policy="drop"`` drops ties as well.
"""

from __future__ import annotations

from typing import Any

from ..core.items import ItemError, PairItem, make_pair_item
from ._common import (
    check_no_options,
    check_tie_policy,
    check_unique,
    finish,
    format_turns,
    get_field,
    get_str,
    seeded_sample,
    split_conversation,
)
from .hub import source_rows
from .registry import DatasetLoad

HUB_ID = "lmsys/chatbot_arena_conversations"
WINNERS = {"model_a": "A", "model_b": "B", "tie": "tie", "tie (bothbad)": "tie"}


def load_arena(path: str | None = None, *, hub: str | None = None, split: str = "train",
               sample: int | None = None, seed: int = 42, tie_policy: str = "keep",
               dataset: str | None = None, limit: int | None = None, **options: Any) -> DatasetLoad:
    check_no_options("arena", options)
    check_tie_policy(tie_policy)
    src, rows = source_rows(path, hub, loader="arena", split=split)
    name = dataset or "arena"
    chosen = seeded_sample(len(rows), sample, seed)
    items: list[PairItem] = []
    kept_rows: list[int] = []
    dropped: list[dict[str, Any]] = []
    for k in chosen:
        row, rec = rows[k]
        qid = get_field(rec, "question_id", path=src, row=row)
        winner = get_field(rec, "winner", path=src, row=row)
        if winner not in WINNERS:
            raise ItemError(f"must be one of {sorted(WINNERS)}, got {winner!r}", path=src, row=row,
                            field="winner")
        users_a, answers_a = split_conversation(get_field(rec, "conversation_a", path=src, row=row),
                                                path=src, row=row, field="conversation_a")
        users_b, answers_b = split_conversation(get_field(rec, "conversation_b", path=src, row=row),
                                                path=src, row=row, field="conversation_b")
        if users_a != users_b:
            dropped.append({"row": row, "item_id": str(qid), "reason": "user turns differ between sides"})
            continue
        n_turns = min(len(users_a), len(answers_a), len(answers_b))
        if n_turns == 0 or not all(t.strip() for t in answers_a[:n_turns] + answers_b[:n_turns]):
            dropped.append({"row": row, "item_id": str(qid), "reason": "empty response"})
            continue
        label = WINNERS[winner]
        if label == "tie" and tie_policy == "drop":
            dropped.append({"row": row, "item_id": str(qid), "reason": "tie label"})
            continue
        model_a = get_str(rec, "model_a", path=src, row=row, default=None)
        model_b = get_str(rec, "model_b", path=src, row=row, default=None)
        items.append(make_pair_item(
            {"item_id": qid, "dataset": name,
             "question": format_turns(users_a, n_turns, speaker="User"),
             "response_a": format_turns(answers_a, n_turns, speaker="Assistant"),
             "response_b": format_turns(answers_b, n_turns, speaker="Assistant"),
             "label": label, "category": rec.get("language") or None, "system_a": model_a, "system_b": model_b,
             "meta": {"source": "chatbot_arena_conversations", "question_id": qid, "winner": winner,
                      "model_a": model_a, "model_b": model_b, "turns": n_turns, "row": row}},
            path=src, row=row))
        kept_rows.append(row)
    check_unique(items, path=src, rows=kept_rows)
    notes = [f"sample={sample} of {len(rows)} with seed {seed}" if sample is not None
             else f"all {len(rows)} battles", f"tie_policy={tie_policy}"]
    return finish(name, list(items), source=src, dropped=dropped, notes=notes,
                  seed=seed if sample is not None else None, limit=limit)
