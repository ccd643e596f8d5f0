"""Import JudgeBench output files (Tan et al., ICLR 2025): a judge's two games on every pair.

Format: JSON Lines, one pair per line -- the dataset record (``pair_id, original_id, source,
question, response_model, response_A, response_B, label`` with label ``"A>B"`` | ``"B>A"``) plus
``judgments``: a list of two games, each ``{"judgment": ..., "decision": "A>B" | "B>A" | "A=B" |
null, ...}``.  The repository names its files
``dataset=judgebench,response_model=<m>,judge_name=<name>,judge_model=<model>.jsonl``.

Recorded verdict rule (``judgebench`` rule, in every row's ``parse_detail`` and the import notes):

* game 1 showed ``response_A`` first: order ``AB``; its decision is canonical as it stands;
* game 2 showed ``response_B`` first: order ``BA``; its decision is in **position terms of the
  swapped presentation** ("A>B" = the response shown first won = ``response_B``), so it is mapped
  back: ``A>B`` -> ``B``, ``B>A`` -> ``A``;
* ``A>B`` / ``A>>B`` -> A (shown terms), ``B>A`` / ``B>>A`` -> B, ``A=B`` / ``B=A`` -> tie (the
  strength mark ``>>`` of Arena-Hard-style judges is kept in parse_detail, not in the verdict);
  ``null`` / missing decision -> unparsed (verdict NULL, parse_status failed).  Anything else is an
  error naming the row.

JudgeBench's own score combines the two games with its vote rule -- the remedy ``both-orders-vote``
(analyses/remedy_vote.py): its accuracy ``A`` on ``<protocol>+both-orders-vote`` is JudgeBench's
accuracy; the stored per-order rows also give C, phi and position bias.

judge = ``judge_model`` (record, else file name), protocol = ``judge_name`` (record, else file name,
else ``judgebench``); ``--judge`` / ``--protocol`` override.  The response model (record, else file
name) goes into each item's ``meta["response_model"]``.  Items and ids are those of the
``judgebench`` loader (dataset ``judgebench``, item ``pair_id``, category ``source``).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from ..core.items import ItemError, PairItem, Problems, make_pair_item, text_id
from ..core.vocab import ORDERS, swap
from ..datasets._common import get_field, get_str, read_records
from ..datasets.judgebench import LABELS
from ._batch import ImportBatch, judgment_row

RULE = ("judgebench: game 1 = order AB, decision canonical; game 2 = order BA, decision in shown terms "
        "mapped back (A>B -> B, B>A -> A); A=B -> tie; '>>' read as '>'; null -> unparsed")
_DECISION = re.compile(r"^\s*([AB])\s*(>>?|=|<<?)\s*([AB])\s*$")


def file_info(path: Path) -> dict[str, str]:
    """``key=value`` pairs of a JudgeBench file name (``judge_name``, ``judge_model``, ...)."""
    out: dict[str, str] = {}
    for part in path.stem.split(","):
        k, sep, v = part.partition("=")
        if sep and k.strip() and v.strip():
            out[k.strip()] = v.strip()
    return out


def shown_verdict(decision: Any, *, path: str, row: int, field: str) -> str | None:
    """A decision string in shown terms -> ``A`` / ``B`` / ``tie`` (None for no decision)."""
    if decision is None:
        return None
    m = _DECISION.match(decision) if isinstance(decision, str) else None
    if m is None or m.group(1) == m.group(3):
        raise ItemError(f"decision must be 'A>B', 'B>A', 'A=B' (or '>>') or null, got {decision!r}",
                        path=path, row=row, field=field)
    left, op, right = m.groups()
    if op == "=":
        return "tie"
    return left if op.startswith(">") else right


def _raw(game: dict[str, Any]) -> str | None:
    j = game.get("judgment")
    if j is None or isinstance(j, str):
        return j
    return json.dumps(j, ensure_ascii=False)


def _item(rec: dict[str, Any], name: str, *, src: str, row: int, response_model: str | None = None) -> PairItem:
    raw_label = get_field(rec, "label", path=src, row=row)
    if raw_label not in LABELS:
        raise ItemError(f"label must be one of {sorted(LABELS)}, got {raw_label!r}", path=src, row=row,
                        field="label")
    pair_id = get_field(rec, "pair_id", path=src, row=row)
    return make_pair_item(
        {"item_id": pair_id, "dataset": name, "question": get_str(rec, "question", path=src, row=row),
         "response_a": get_str(rec, "response_A", path=src, row=row),
         "response_b": get_str(rec, "response_B", path=src, row=row),
         "label": LABELS[raw_label], "category": rec.get("source") or None,
         "meta": {"source": "judgebench", "pair_id": pair_id, "original_id": rec.get("original_id"),
                  "response_model": rec.get("response_model") or response_model}}, path=src, row=row)


def _games(rec: dict[str, Any], *, src: str, row: int) -> list[dict[str, Any]]:
    games = get_field(rec, "judgments", path=src, row=row)
    if not isinstance(games, list) or len(games) != 2 or not all(isinstance(g, dict) for g in games):
        raise ItemError("must be a list of two games (both presentation orders)", path=src, row=row,
                        field="judgments")
    return games


def import_judgebench(path: str | Path, *, judge: str | None = None, protocol: str | None = None,
                      dataset: str | None = None, temperature: float = 0.0, rep: int = 0,
                      **options: Any) -> ImportBatch:
    if options:
        raise ItemError(f"unknown option(s) for the judgebench importer: {', '.join(sorted(options))}")
    p = Path(path)
    src = str(p)
    info = file_info(p)
    name = dataset or "judgebench"
    judgments: list[dict[str, Any]] = []
    items: list[PairItem] = []
    problems = Problems(src)             # every bad record at once
    for row, rec in read_records(p, problems=problems):
        try:
            item, rows = _record(rec, row, src=src, info=info, judge=judge, protocol=protocol, dataset=name,
                                 temperature=temperature, rep=rep)
        except ItemError as exc:
            problems.add(exc)
            continue
        items.append(item)
        judgments += rows
    problems.raise_if_any()
    n_unparsed = sum(r["verdict"] is None for r in judgments)
    notes = [f"verdict rule: {RULE}",
             f"{len(items)} pair(s), {len(judgments)} judgment(s), {n_unparsed} unparsed decision(s)",
             "JudgeBench's score is A of <protocol>+both-orders-vote (remedies table)"]
    return ImportBatch(format="judgebench", source=src, judgments=judgments, items=list(items), notes=notes)


def _record(rec: dict[str, Any], row: int, *, src: str, info: dict[str, str], judge: str | None,
            protocol: str | None, dataset: str, temperature: float, rep: int) -> tuple[PairItem, list[dict[str, Any]]]:
    """The item and the two judgment rows (games) of one JudgeBench record."""
    j = judge or rec.get("judge_model") or info.get("judge_model")
    proto = protocol or rec.get("judge_name") or info.get("judge_name") or "judgebench"
    if not j:
        raise ItemError("no judge_model in the record or the file name; pass --judge", path=src, row=row,
                        field="judge_model")
    j = text_id(j, path=src, row=row, field="judge_model")           # never str() of an object
    proto = text_id(proto, path=src, row=row, field="judge_name")
    item = _item(rec, dataset, src=src, row=row, response_model=info.get("response_model"))
    rows = []
    for k, (game, order) in enumerate(zip(_games(rec, src=src, row=row), ORDERS, strict=True)):
        field = f"judgments[{k}].decision"
        decision = game.get("decision")
        verdict = swap(shown_verdict(decision, path=src, row=row, field=field), order)
        r = judgment_row(judge=j, dataset=dataset, item_id=item.item_id, protocol=proto,
                         order=order, temperature=temperature, rep=rep, verdict=verdict,
                         label=item.label, category=item.category, raw_output=_raw(game),
                         parse_detail=f"JudgeBench game {k + 1} decision {decision!r} (shown {order}) "
                                      f"-> canonical {verdict!r}; rule {RULE}")
        r["_row"], r["_file"] = row, src
        rows.append(r)
    return item, rows
