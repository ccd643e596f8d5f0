"""MT-Bench human judgments (Zheng et al., NeurIPS 2023): expert pairwise votes on 80 MT-Bench
questions answered by six models, per turn.

Source: the hub dataset ``lmsys/mt_bench_human_judgments`` (split ``human``; ``gpt4_pair`` holds GPT-4's
votes in the same format) or a JSON / JSON Lines / Parquet export of it.  Records hold
``question_id, model_a, model_b, winner ("model_a" | "model_b" | "tie" | "tie (bothbad)"), judge,
turn, conversation_a, conversation_b`` (conversations are ``[{role, content}, ...]``).

Mapping: one item per (question, model pair, turn).  The canonical order is the two model names in
sorted order (``response_a`` = the answer of the alphabetically first model) so that several
experts' votes, given in either order, land on one item; ``item_id`` =
``"<question_id>-<model A>-vs-<model B>-t<turn>"``.  For turn 2 the question holds both user turns
and each response both assistant turns, labelled, the way MT-Bench shows a second turn.
Votes are aggregated with ``vote_rule`` (:func:`verdictlab.core.vocab.gold_label`): ``"majority"`` (a
strict majority of the votes; a tie when there is none), ``"mean-sign"`` or ``"unanimous"`` (the label
only when all experts agree; ``None`` otherwise).  The experts' votes are the item's ``votes``
(annotator = the expert id) and the rule its ``label_rule``.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from ..core.items import ItemError, PairItem, make_pair_item
from ..core.vocab import gold_label
from ._common import (
    check_no_options,
    check_tie_policy,
    finish,
    format_turns,
    get_field,
    get_str,
    majority,
    split_conversation,
)
from .hub import source_rows
from .registry import DatasetLoad

HUB_ID = "lmsys/mt_bench_human_judgments"
VOTE_RULES = ("majority", "mean-sign", "unanimous")
WINNERS = {"model_a": "model_a", "model_b": "model_b", "tie": "tie", "tie (bothbad)": "tie"}


def pair_item_id(question_id: Any, model_a: str, model_b: str, turn: int) -> str:
    """The item id shared by this loader and the FastChat importer (models in sorted order)."""
    a, b = sorted((model_a, model_b))
    return f"{question_id}-{a}-vs-{b}-t{int(turn)}"


def _group_rows(rows: list[tuple[int, dict[str, Any]]], *, src: str
                ) -> dict[str, list[tuple[int, dict[str, Any]]]]:
    """Validate each vote row and group the rows by the pair they vote on."""
    groups: dict[str, list[tuple[int, dict[str, Any]]]] = defaultdict(list)
    for row, rec in rows:
        qid = get_field(rec, "question_id", path=src, row=row)
        ma = get_str(rec, "model_a", path=src, row=row, allow_empty=False)
        mb = get_str(rec, "model_b", path=src, row=row, allow_empty=False)
        if ma == mb:
            raise ItemError("model_a and model_b are the same model", path=src, row=row, field="model_b")
        turn = get_field(rec, "turn", path=src, row=row)
        if isinstance(turn, bool) or not isinstance(turn, int) or turn < 1:
            raise ItemError(f"must be a positive integer, got {turn!r}", path=src, row=row, field="turn")
        winner = get_field(rec, "winner", path=src, row=row)
        if winner not in WINNERS:
            raise ItemError(f"must be one of {sorted(WINNERS)}, got {winner!r}", path=src, row=row,
                            field="winner")
        groups[pair_item_id(qid, ma, mb, turn)].append((row, rec))
    return groups


def _member_votes(members: list[tuple[int, dict[str, Any]]], model_a: str) -> tuple[list[str], list[Any]]:
    """Each member row's vote in canonical terms ('A' = the sorted-first model) and its judge."""
    votes: list[str] = []
    judges: list[Any] = []
    for _, rec in members:
        w = WINNERS[rec["winner"]]
        if w == "tie":
            votes.append("tie")
        else:
            winner_model = rec[w]
            votes.append("A" if winner_model == model_a else "B")
        judges.append(rec.get("judge"))
    return votes, judges


def _vote_label(votes: list[str], vote_rule: str) -> tuple[str | None, bool]:
    """The item label under ``vote_rule`` and whether the votes were split (no strict majority / not
    unanimous / a mean of zero)."""
    label = gold_label(votes, vote_rule)
    if vote_rule == "majority":
        return label, majority(votes) is None
    return label, label is None or (vote_rule == "mean-sign" and label == "tie" and any(v != "tie" for v in votes))


def load_mtbench_human(path: str | None = None, *, hub: str | None = None, split: str = "human",
                       vote_rule: str = "majority", tie_policy: str = "keep",
                       dataset: str | None = None, limit: int | None = None,
                       **options: Any) -> DatasetLoad:
    check_no_options("mtbench-human", options)
    check_tie_policy(tie_policy)
    if vote_rule not in VOTE_RULES:
        raise ItemError(f"vote_rule must be one of {list(VOTE_RULES)}, got {vote_rule!r}",
                        field="vote_rule")
    src, rows = source_rows(path, hub, loader="mtbench-human", split=split)
    name = dataset or "mtbench-human"
    groups = _group_rows(rows, src=src)

    items: list[PairItem] = []
    dropped: list[dict[str, Any]] = []
    n_split = 0
    for item_id, members in groups.items():
        row, first = members[0]
        qid, turn = first["question_id"], int(first["turn"])
        model_a, model_b = sorted((first["model_a"], first["model_b"]))
        flipped = first["model_a"] != model_a
        conv_a = first["conversation_b" if flipped else "conversation_a"]
        conv_b = first["conversation_a" if flipped else "conversation_b"]
        fa = "conversation_b" if flipped else "conversation_a"
        fb = "conversation_a" if flipped else "conversation_b"
        users, answers_a = split_conversation(conv_a, path=src, row=row, field=fa)
        _, answers_b = split_conversation(conv_b, path=src, row=row, field=fb)
        for field, seq in ((fa, users), (fa, answers_a), (fb, answers_b)):
            if len(seq) < turn:
                raise ItemError(f"has fewer than {turn} turn(s) for turn {turn}", path=src, row=row,
                                field=field)
        votes, judges = _member_votes(members, model_a)
        label, was_split = _vote_label(votes, vote_rule)
        n_split += was_split
        if label == "tie" and tie_policy == "drop":
            dropped.append({"row": row, "item_id": item_id, "reason": "tie label"})
            continue
        items.append(make_pair_item(
            {"item_id": item_id, "dataset": name,
             "question": format_turns(users, turn, speaker="User"),
             "response_a": format_turns(answers_a, turn, speaker="Assistant"),
             "response_b": format_turns(answers_b, turn, speaker="Assistant"),
             "label": label, "category": f"turn-{turn}", "system_a": model_a, "system_b": model_b,
             "votes": [{"annotator": str(j), "vote": v} for v, j in zip(votes, judges, strict=True)],
             "label_rule": vote_rule,
             "meta": {"source": "mt_bench_human_judgments", "question_id": qid, "turn": turn,
                      "model_a": model_a, "model_b": model_b, "votes": votes, "judges": judges,
                      "rows": [r for r, _ in members]}},
            path=src, row=row))
    what = {"majority": "no strict majority (labelled tie)", "mean-sign": "split evenly (labelled tie)",
            "unanimous": "not unanimous (label null)"}[vote_rule]
    notes = [f"{len(rows)} vote(s) aggregated into {len(groups)} item(s) with vote_rule={vote_rule}",
             f"{n_split} item(s) {what}", f"tie_policy={tie_policy}"]
    return finish(name, list(items), source=src, dropped=dropped, notes=notes, limit=limit)
