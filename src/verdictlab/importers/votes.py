"""Human annotators' votes on the pairs of a run: `verdictlab import votes FILE --run-dir RUN`.

A vote file (CSV / TSV with a header, JSON Lines, or Parquet) names pairs the run already holds and how
annotators voted on them, in one of two layouts:

* one vote per row: ``item_id``, ``annotator``, ``vote`` and optionally ``dataset`` (``--map`` renames
  any of them: ``--map annotator=worker --map vote=choice``);
* one column per annotator (``annotators=["h1", "h2", "h3"]`` / ``--annotators h1,h2,h3``): ``item_id``
  (and ``dataset``) and each annotator's vote in its column; an empty cell is no vote.

A vote is ``A`` / ``B`` / ``tie`` in canonical terms (``A`` = the item's ``response_a``); numbers only
through a value map (``--map-values vote:1=A,2=B,3=tie``).  The votes become the items' ``votes`` and the
gold label is made from them by the stated rule (``gold_rule`` / ``--gold-rule``:
:func:`verdictlab.core.vocab.gold_label`, default ``majority``), the same rule everywhere the label is
used: the items' ``label`` and ``label_rule`` and every stored judgment's ``label`` of those items are
rewritten in one transaction.  A vote on a pair the run does not hold, an item id that names pairs of
several datasets (without a ``dataset`` column), a vote outside the words above: every problem is named
(file, row, field) before anything is written.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import Any

from ..core.items import ItemError, PairItem, Problems, Vote, text_id
from ..core.vocab import check_gold_rule, gold_label
from ..store import RunStore
from ._batch import ImportResult, record_import

DEFAULT_RULE = "majority"
_WORDS = {"A": "A", "B": "B", "a": "A", "b": "B", "tie": "tie", "Tie": "tie", "TIE": "tie"}


def _vote(value: Any, value_map: dict[str, str], *, path: str, row: int, field: str) -> str | None:
    from ..datasets.columns import value_key

    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    key = value_key(value)
    if key in value_map:
        return value_map[key] or None
    if isinstance(value, str) and value.strip() in _WORDS:
        return _WORDS[value.strip()]
    raise ItemError(f"a vote must be 'A', 'B' or 'tie' (numbers through --map-values vote:1=A,2=B,3=tie), "
                    f"got {value!r}"[:200], path=path, row=row, field=field)


def read_votes(path: str | Path, *, annotators: list[str] | None = None, field_map: dict[str, str] | None = None,
               value_map: dict[str, dict[str, str]] | None = None
               ) -> dict[tuple[str | None, str], list[tuple[str, str, int]]]:
    """``{(dataset or None, item_id): [(annotator, vote, row), ...]}`` of a vote file (module docstring)."""
    from .tabular import check_value_map, read_rows

    p = Path(path)
    value_map = check_value_map(value_map)
    if set(value_map) - {"vote"}:
        raise ItemError(f"--map-values applies to vote in a vote file, not {sorted(set(value_map) - {'vote'})}",
                        field="map-values")
    if not p.is_file():
        raise ItemError("file not found", path=str(p))
    fm = dict(field_map or {})
    src = {name: fm.get(name, name) for name in ("item_id", "dataset", "annotator", "vote")}
    vmap = {k: v for k, v in (value_map or {}).get("vote", {}).items()}
    out: dict[tuple[str | None, str], list[tuple[str, str, int]]] = defaultdict(list)
    problems = Problems(str(p))
    rows = read_rows(p, problems)      # a line that is not JSON: one problem among the rows'
    if not rows:
        problems.raise_if_any()
        raise ItemError("no records", path=str(p))
    for row, rec in rows:
        try:
            item = text_id(rec.get(src["item_id"]), path=str(p), row=row, field=src["item_id"])
            ds = rec.get(src["dataset"])
            key = (None if ds is None else text_id(ds, path=str(p), row=row, field=src["dataset"]), item)
            cells = ([(a, rec.get(a), a) for a in annotators] if annotators else
                     [(text_id(rec.get(src["annotator"]), path=str(p), row=row, field=src["annotator"]),
                       rec.get(src["vote"]), src["vote"])])
            for annotator, raw, field in cells:
                if annotators and annotator not in rec:
                    raise ItemError("no such column (--annotators names one column per annotator)", path=str(p),
                                    row=row, field=annotator)
                vote = _vote(raw, vmap, path=str(p), row=row, field=field)
                if vote is not None:
                    out[key].append((annotator, vote, row))
        except ItemError as exc:
            problems.add(exc)
    problems.raise_if_any()
    return dict(out)


def attach_votes(path: str | Path, *, run_dir: str | Path, gold_rule: str = DEFAULT_RULE,
                 annotators: list[str] | None = None, field_map: dict[str, str] | None = None,
                 value_map: dict[str, dict[str, str]] | None = None) -> ImportResult:
    """Attach the votes of ``path`` to the run's pair items and relabel them by ``gold_rule`` (module
    docstring)."""
    try:
        check_gold_rule(gold_rule)
    except ValueError as exc:
        raise ItemError(str(exc), field="gold-rule") from None
    votes = read_votes(path, annotators=annotators, field_map=field_map, value_map=value_map)
    with RunStore(run_dir, create=False) as store:
        stored = {(it.dataset, it.item_id): it for it in store.items() if isinstance(it, PairItem)}
        updated = _relabelled(votes, stored, gold_rule, str(path))
        n = store.relabel_items(list(updated.values()))
        n_votes = sum(len(v) for v in votes.values())
        notes = [f"{n_votes} vote(s) on {len(updated)} item(s); gold label by rule {gold_rule} "
                 "(verdictlab.core.vocab.gold_label)", f"{n} stored judgment(s) relabelled"]
        record_import(store, format="votes", source=str(path), n_rows=n_votes, inserted=0, replaced=n,
                      identical=0, notes=notes)
    return ImportResult(format="votes", source=str(path), run_dir=str(run_dir), n_rows=n_votes, n_inserted=0,
                        n_items=len(updated), n_unparsed=0, cells=(), notes=tuple(notes), n_replaced=n)


def _relabelled(votes: dict[tuple[str | None, str], list[tuple[str, str, int]]],
                stored: dict[tuple[str, str], PairItem], rule: str, path: str) -> dict[tuple[str, str], PairItem]:
    by_id: dict[str, list[str]] = defaultdict(list)
    for stored_ds, stored_id in stored:
        by_id[stored_id].append(stored_ds)
    problems = Problems(path)
    out: dict[tuple[str, str], PairItem] = {}
    for (ds, iid), vs in votes.items():
        row = vs[0][2]
        datasets: list[str] = [ds] if ds is not None else by_id.get(iid, [])
        if ds is not None and (ds, iid) not in stored or not datasets:
            problems.add(ItemError(f"no pair {iid!r}{'' if ds is None else f' of dataset {ds!r}'} in this run",
                                   path=path, row=row, field="item_id"))
            continue
        if len(datasets) > 1:
            problems.add(ItemError(f"item id {iid!r} names pairs of datasets {sorted(datasets)}: add a dataset column",
                                   path=path, row=row, field="item_id"))
            continue
        it = stored[(datasets[0], iid)]
        all_votes = [Vote.model_validate({"annotator": a, "vote": v}) for a, v, _ in vs]
        out[(it.dataset, iid)] = it.model_copy(update={"votes": tuple(all_votes), "label_rule": rule,
                                                       "label": gold_label([v.vote for v in all_votes], rule)})
    problems.raise_if_any()
    return out
