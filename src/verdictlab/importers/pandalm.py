"""Import PandaLM verdict files (Wang et al. 2023): one judge's verdicts on the PandaLM test set.

Format: a JSON list (or JSON Lines) of records ``{"idx": 0, "<judge>_result": "1", "<judge>_reason":
"..."}`` -- e.g. ``gpt-3.5-turbo_result`` / ``pandalm-7b_result``.  ``<judge>`` is the prefix of
the ``*_result`` key (one judge per file; ``judge=`` / ``--judge`` picks one when a file holds
several, and renames it otherwise).  Values of ``<judge>_result``:

* ``"1"`` / ``1`` -> ``A`` (``response1`` is ``response_a``, as in the ``pandalm`` loader);
* ``"2"`` / ``2`` -> ``B``;
* ``"Tie"`` / ``"tie"`` / ``0`` / ``"0"`` -> ``tie``;
* ``"garbage"`` (PandaLM's mark for an output its parser could not read) -> the recorded verdict
  rule ``garbage=``:

  - ``"tie"`` (default, **PandaLM's own evaluation rule**): verdict ``tie`` with parse_status
    ``fallback`` and fallback_rule ``pandalm: garbage counted as tie (PandaLM's evaluation rule)``
    -- so PandaLM's accuracy and F1 are reproduced, and the audit trail counts every such row;
  - ``"unparsed"``: verdict NULL, parse_status ``failed`` (verdictlab's usual rule).

  Any other value is an error naming the row and field (never a guess).

Join: ``items_path=`` / ``--items-path`` is PandaLM's ``testset-v1.json``; it is read with the
``pandalm`` loader (tie majorities KEPT as labels: PandaLM's accuracy and F1 are three-class), every
verdict's ``idx`` must be in it, and the rows get its question, responses, majority label and category.
All test-set pairs are kept as items.  A and T stay on non-tie labels as everywhere; ``A_3class`` and
``macro_f1`` (stats/classes.py) are PandaLM's accuracy and macro-F1.

PandaLM judged each pair once with ``response1`` shown first: order ``AB``, rep 0, temperature 0 (a
recorded assumption; ``--temperature`` overrides).  Protocol ``pandalm`` (their prompt), dataset
``pandalm``.  A single-order run: phi and position bias need both orders and are not defined.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..core.items import ItemError, PairItem, PointItem, Problems, text_id
from ..core.vocab import Order
from ..datasets._common import read_records
from ._batch import ImportBatch, judgment_row

GARBAGE_RULES = ("tie", "unparsed")
RULE_TIE = "pandalm: garbage counted as tie (PandaLM's evaluation rule)"
_VALUES = {"1": "A", "2": "B", "0": "tie", "tie": "tie"}


def verdict_rule(garbage: str) -> str:
    g = ("'garbage' -> tie, recorded as fallback (PandaLM's evaluation rule)" if garbage == "tie"
         else "'garbage' -> unparsed (verdict NULL, parse_status failed)")
    return f"pandalm: '1' -> A (response1), '2' -> B, 'Tie'/0 -> tie; {g}"


def _judge_keys(rec: dict[str, Any], judge: str | None, *, path: str, row: int) -> tuple[str, str]:
    """(judge name, result key) of a record."""
    keys = sorted(k for k in rec if isinstance(k, str) and k.endswith("_result"))
    if not keys:
        raise ItemError("no '<judge>_result' field", path=path, row=row, field="<judge>_result")
    if judge is not None and f"{judge}_result" in rec:
        return judge, f"{judge}_result"
    if len(keys) > 1:
        names = [k[: -len("_result")] for k in keys]
        raise ItemError(f"several judges in one record ({', '.join(names)}); pass --judge with one of them",
                        path=path, row=row, field=keys[0])
    return judge or keys[0][: -len("_result")], keys[0]


def _verdict(value: Any, garbage: str, *, path: str, row: int, field: str) -> tuple[str | None, str, str | None]:
    """(verdict, parse_status, fallback_rule)."""
    text = str(value).strip().lower() if isinstance(value, str | int) and not isinstance(value, bool) else None
    if text in _VALUES:
        return _VALUES[text], "ok", None
    if text == "garbage":
        return ("tie", "fallback", RULE_TIE) if garbage == "tie" else (None, "failed", None)
    raise ItemError(f"verdict must be '1', '2', 'Tie' (or 0) or 'garbage', got {value!r}", path=path,
                    row=row, field=field)


def _test_set(items_path: str | None) -> dict[str, PairItem]:
    if items_path is None:
        return {}
    from ..datasets.pandalm import load_pandalm

    out: dict[str, PairItem] = {}
    for it in load_pandalm(items_path).items:
        if isinstance(it, PairItem):
            out[it.item_id] = it
    return out


def import_pandalm(path: str | Path, *, items_path: str | None = None, judge: str | None = None,
                   protocol: str | None = None, dataset: str | None = None, garbage: str = "tie",
                   temperature: float = 0.0, rep: int = 0, **options: Any) -> ImportBatch:
    if options:
        raise ItemError(f"unknown option(s) for the pandalm importer: {', '.join(sorted(options))}")
    if garbage not in GARBAGE_RULES:
        raise ItemError(f"garbage must be one of {list(GARBAGE_RULES)}, got {garbage!r}", field="garbage")
    p = Path(path)
    src = str(p)
    name = dataset or "pandalm"
    proto = protocol or "pandalm"
    test_set = _test_set(items_path)
    rule = verdict_rule(garbage)
    judgments: list[dict[str, Any]] = []
    n_garbage = 0
    problems = Problems(src)             # every bad record at once
    for row, rec in read_records(p, problems=problems):
        try:
            r, is_garbage = _verdict_row(rec, row, src=src, judge=judge, garbage=garbage, test_set=test_set,
                                         items_path=items_path, dataset=name, protocol=proto,
                                         temperature=temperature, rep=rep, rule=rule)
        except ItemError as exc:
            problems.add(exc)
            continue
        n_garbage += is_garbage
        judgments.append(r)
    problems.raise_if_any()
    items: list[PairItem | PointItem] = [it.model_copy(update={"dataset": name}) for it in test_set.values()]
    notes = [f"verdict rule: {rule}", f"{len(judgments)} verdict(s) from {p.name}, {n_garbage} 'garbage'",
             "one order (response1 shown first: AB), rep 0; temperature "
             f"{temperature:g} assumed (PandaLM's files do not record it)"]
    if test_set:
        notes.append(f"joined to {items_path}: {len(test_set)} test-set pair(s) kept as items "
                     "(tie majorities are labels: A_3class / macro_f1 are PandaLM's accuracy / F1)")
    else:
        notes.append("no --items-path: rows carry no labels, questions or responses")
    return ImportBatch(format="pandalm", source=src, judgments=judgments, items=items, notes=notes)


def _verdict_row(rec: dict[str, Any], row: int, *, src: str, judge: str | None, garbage: str,
                 test_set: dict[str, PairItem], items_path: str | None, dataset: str, protocol: str,
                 temperature: float, rep: int, rule: str) -> tuple[dict[str, Any], bool]:
    """The judgment row of one PandaLM verdict record, and whether its verdict was 'garbage'."""
    if "idx" not in rec:
        raise ItemError("missing required field", path=src, row=row, field="idx")
    item_id = text_id(rec["idx"], path=src, row=row, field="idx")
    j, key = _judge_keys(rec, judge, path=src, row=row)
    verdict, status, fallback = _verdict(rec[key], garbage, path=src, row=row, field=key)
    item = test_set.get(item_id)
    if test_set and item is None:
        raise ItemError(f"idx {item_id!r} is not in the test set {items_path}", path=src, row=row, field="idx")
    reason = rec.get(f"{j}_reason", rec.get(key.replace("_result", "_reason")))
    r = judgment_row(judge=j, dataset=dataset, item_id=item_id, protocol=protocol, order=Order.AB.value,
                     temperature=temperature, rep=rep, verdict=verdict,
                     label=item.label if item else None, category=item.category if item else None,
                     raw_output=reason if isinstance(reason, str) else None, parse_status=status,
                     fallback_rule=fallback, parse_detail=f"PandaLM {key}={rec[key]!r}; rule {rule}")
    r["_row"], r["_file"] = row, src
    return r, str(rec[key]).strip().lower() == "garbage"
