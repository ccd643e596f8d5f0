"""One model's public AlpacaEval annotation file (``results/<model>/<annotator>/annotations.json`` of the
AlpacaEval repository): a JSON list, one record per instruction.

Record: ``instruction``, ``output_1`` / ``generator_1`` (the baseline's output and name),
``output_2`` / ``generator_2`` (the model's), ``annotator`` (the judge configuration, e.g.
``weighted_alpaca_eval_gpt4_turbo``), ``preference`` -- 1 = output_1 is better, 2 = output_2 is better,
1.5 a draw, and in between a soft preference (the weighted annotators' probability: ``preference - 1``
is P(output_2 wins)); optionally ``dataset`` (the instruction's source), ``index``, ``raw_completion``
(text or an object), ``is_switched_outputs``.

Mapping: one item per instruction and pair of generators, ``<index>-<A>-vs-<B>`` (A the generator whose
name sorts first; ``index`` the record's own, else its position in the file, 0-based, as AlpacaEval
numbers its 805 instructions), with the systems and both outputs.  ``p_a`` = P(response_a wins) from the
preference; the verdict is the side with P > 1/2, a tie at exactly 1/2 (the rule is in the notes and
every row's ``parse_detail``).  A missing or out-of-range preference (null, NaN, -1) is a failed parse:
no verdict.  The shown order is output_1 first (``is_switched_outputs`` true: output_2 first).
The record's ``preference`` and the instruction index stay in the item's ``meta`` and the row's
``scores``: the leaderboard's win rate, its standard error and the length-controlled win rate are
computed from them (:mod:`verdictlab.stats.alpaca_eval`).
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from ..core.items import ItemError, PairItem, PointItem, Problems, make_pair_item, text_id
from ..datasets._common import read_text
from ._batch import ImportBatch, check_batch, judgment_row
from ._keys import pair_item_id

RULE = ("alpaca-eval: P(output_2 wins) = preference - 1 (1 = output_1, 2 = output_2, soft in between); "
        "the verdict is the side with P > 1/2, a tie at 1/2; a missing preference is no verdict")


def _preference(value: Any, *, path: str, row: int) -> float | None:
    if value is None or isinstance(value, bool):
        return None
    if not isinstance(value, int | float):
        raise ItemError(f"must be a number in [1, 2] or null, got {value!r}"[:200], path=path, row=row,
                        field="preference")
    v = float(value)
    if math.isnan(v) or v < 0:
        return None          # AlpacaEval writes -1 / NaN for an annotation it could not make
    if not 1.0 <= v <= 2.0:
        raise ItemError(f"must be in [1, 2] (or null), got {value!r}", path=path, row=row, field="preference")
    return v


def _text(rec: dict[str, Any], name: str, *, path: str, row: int) -> str:
    v = rec.get(name)
    if not isinstance(v, str):
        raise ItemError("must be text", path=path, row=row, field=name)
    return v


def _row(rec: dict[str, Any], row: int, index: int, path: str, dataset: str,
         protocol: str) -> tuple[dict[str, Any], PairItem]:
    g1 = text_id(rec.get("generator_1"), path=path, row=row, field="generator_1")
    g2 = text_id(rec.get("generator_2"), path=path, row=row, field="generator_2")
    if g1 == g2:
        raise ItemError("generator_1 and generator_2 are the same system", path=path, row=row, field="generator_2")
    o1, o2 = _text(rec, "output_1", path=path, row=row), _text(rec, "output_2", path=path, row=row)
    instruction = _text(rec, "instruction", path=path, row=row)
    judge = text_id(rec.get("annotator"), path=path, row=row, field="annotator")
    pref = _preference(rec.get("preference"), path=path, row=row)
    idx = rec.get("index", index)
    one_is_a = g1 < g2
    item = make_pair_item({"item_id": pair_item_id(idx, g1, g2), "dataset": dataset, "question": instruction,
                           "response_a": o1 if one_is_a else o2, "response_b": o2 if one_is_a else o1,
                           "system_a": g1 if one_is_a else g2, "system_b": g2 if one_is_a else g1,
                           "category": rec.get("dataset") if isinstance(rec.get("dataset"), str) else None,
                           "meta": {"instruction_index": idx, "baseline": g1}}, path=path, row=row)
    switched = rec.get("is_switched_outputs") is True
    order = ("BA" if one_is_a else "AB") if switched else ("AB" if one_is_a else "BA")
    p_a = None if pref is None else (2.0 - pref if one_is_a else pref - 1.0)
    verdict = None if p_a is None else "A" if p_a > 0.5 else "B" if p_a < 0.5 else "tie"
    raw = rec.get("raw_completion")
    detail = (f"record {row}: preference {rec.get('preference')!r} -> P(response_a) {p_a!r} -> {verdict}"
              if p_a is not None else f"record {row}: no preference ({rec.get('preference')!r}): no verdict")
    r = judgment_row(judge=judge, dataset=dataset, item_id=item.item_id, protocol=protocol, order=order,
                     temperature=0.0, rep=0, verdict=verdict, label=None, category=item.category,
                     raw_output=raw if isinstance(raw, str) or raw is None else json.dumps(raw, ensure_ascii=False),
                     parse_detail=detail, p_a=p_a, scores=None if pref is None else {"preference": pref},
                     system_a=item.system_a, system_b=item.system_b)
    r["_row"], r["_file"] = row, path
    return r, item


def import_alpaca_eval(path: str | Path, *, dataset: str | None = None, protocol: str | None = None) -> ImportBatch:
    """Read one AlpacaEval annotation file (module docstring)."""
    p = Path(path)
    if not p.is_file():
        raise ItemError("file not found", path=str(p))
    try:
        records = json.loads(read_text(p))
    except json.JSONDecodeError as exc:
        raise ItemError(f"not JSON: {exc.msg} at line {exc.lineno}", path=str(p)) from None
    if not isinstance(records, list) or not records:
        raise ItemError("expected a non-empty JSON list of annotation records", path=str(p))
    name, proto = dataset or "alpaca-eval", protocol or "alpaca-eval"
    problems = Problems(str(p))
    rows: list[dict[str, Any]] = []
    items: list[PairItem | PointItem] = []
    for index, rec in enumerate(records):
        try:
            if not isinstance(rec, dict):
                raise ItemError("must be an annotation object", path=str(p), row=index + 1)
            r, it = _row(rec, index + 1, index, str(p), name, proto)
        except ItemError as exc:
            problems.add(exc)
            continue
        rows.append(r)
        items.append(it)
    n_none = sum(r["verdict"] is None for r in rows)
    batch = ImportBatch(format="alpaca-eval", source=str(p), judgments=rows, items=items,
                        notes=[f"verdict rule: {RULE}", f"{len(rows)} annotation(s), {n_none} without a preference",
                               "temperature 0 assumed (the file does not say)"])
    if not problems:
        check_batch(batch, problems)
    problems.raise_if_any()
    batch.checked = True
    return batch
