"""PandaLM test set v1 (Wang et al. 2023): 999 instruction/response pairs, three human annotators.

Source: ``testset-v1.json``, a JSON list of ``{"idx", "motivation_app", "cmp_key", "instruction",
"input", "response1", "response2", "annotator1", "annotator2", "annotator3"}``; each annotator
label is 0 (tie), 1 (response1 better) or 2 (response2 better).

Mapping: ``response1`` -> ``response_a``; question = instruction, followed by the input when there is
one; gold label = the majority of the three annotators (1 -> "A", 2 -> "B", 0 -> "tie": ties are
kept as ties).  With no majority (e.g. 0, 1, 2) the label is ``None`` and ``meta["no_majority"]`` is
set (rule ``majority-or-none`` of :func:`verdictlab.core.vocab.gold_label`; the three votes are the
item's ``votes``).  ``tie_policy="drop"`` drops tie-majority pairs and lists them in ``dropped``; the PandaLM
papers' usual "valid pairs" count is the one left after that.
"""

from __future__ import annotations

from typing import Any

from ..core.items import PairItem, make_pair_item, text_id
from ..core.vocab import gold_label
from ._common import (
    as_int_choice,
    check_no_options,
    check_tie_policy,
    check_unique,
    finish,
    get_field,
    get_str,
    read_records,
    require_path,
)
from .registry import DatasetLoad

ANNOTATORS = ("annotator1", "annotator2", "annotator3")
VOTE_LABELS = {0: "tie", 1: "A", 2: "B"}
#: the gold rule of the PandaLM test set: a strict majority of the three annotators, no label without one
GOLD_RULE = "majority-or-none"


def load_pandalm(path: str | None, *, dataset: str | None = None, tie_policy: str = "keep",
                 limit: int | None = None, **options: Any) -> DatasetLoad:
    check_no_options("pandalm", options)
    check_tie_policy(tie_policy)
    p = require_path(path, "pandalm")
    src = str(p)
    name = dataset or "pandalm"
    items: list[PairItem] = []
    rows_kept: list[int] = []
    dropped: list[dict[str, Any]] = []
    n_no_majority = 0
    n_coerced = 0
    for row, rec in read_records(p):
        idx = get_field(rec, "idx", path=src, row=row)
        item_id = text_id(idx, path=src, row=row, field="idx")      # never "None" / "True" / "[1, 2]"
        instruction = get_str(rec, "instruction", path=src, row=row)
        extra = get_str(rec, "input", path=src, row=row, default="")
        question = f"{instruction}\n\n{extra}" if extra.strip() else instruction
        coerced = []
        for f in ("response1", "response2"):
            # testset-v1 stores six one-word answers "True" as JSON booleans; read them back as the
            # text they were (recorded in meta and the notes, never silently)
            if isinstance(rec.get(f), bool):
                rec = {**rec, f: str(rec[f])}
                coerced.append(f)
        a = get_str(rec, "response1", path=src, row=row)
        b = get_str(rec, "response2", path=src, row=row)
        votes = [as_int_choice(get_field(rec, f, path=src, row=row), VOTE_LABELS, path=src, row=row,
                               field=f) for f in ANNOTATORS]
        label = gold_label([VOTE_LABELS[v] for v in votes], GOLD_RULE)
        if label == "tie" and tie_policy == "drop":
            dropped.append({"row": row, "item_id": item_id, "reason": "tie majority"})
            continue
        meta: dict[str, Any] = {"source": "pandalm", "idx": idx, "votes": votes,
                                "cmp_key": rec.get("cmp_key")}
        if coerced:
            meta["coerced_bool_to_text"] = coerced
            n_coerced += 1
        if label is None:
            meta["no_majority"] = True
            n_no_majority += 1
        items.append(make_pair_item(
            {"item_id": item_id, "dataset": name, "question": question, "response_a": a,
             "response_b": b, "label": label, "category": rec.get("motivation_app") or None,
             "votes": [{"annotator": f, "vote": VOTE_LABELS[v]} for f, v in zip(ANNOTATORS, votes, strict=True)],
             "label_rule": GOLD_RULE, "meta": meta}, path=src, row=row))
        rows_kept.append(row)
    check_unique(items, path=src, rows=rows_kept)
    notes = [f"gold = majority of 3 annotators (rule {GOLD_RULE}); tie_policy={tie_policy}",
             f"{n_no_majority} pair(s) without a majority (label null)"]
    if n_coerced:
        notes.append(f"{n_coerced} pair(s) had a JSON boolean response, read as its text 'True'/'False'")
    return finish(name, list(items), source=src, dropped=dropped, notes=notes, limit=limit)
