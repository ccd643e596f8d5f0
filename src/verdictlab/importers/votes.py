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

``PATH`` may be a folder: every table in it is read.  ``file_pattern`` / ``--file-pattern REGEX`` takes
keys from each file's name (:data:`VOTE_FIELDS`: ``item_id``, ``dataset``, ``annotator``, ``system_a`` /
``system_b`` or ``system_first`` / ``system_second``), e.g. a votes file per system pair: a row's item id
with the two systems names the pair of that question and those systems (stored as the item id itself or as
``<item_id>-<A>-vs-<B>``).  The file name fills a key the row leaves empty; a row with a different value is
an error naming the file, row and field; a file whose name does not match is an error naming the file.
The votes stay canonical (``A`` = ``response_a``) whichever order the name gives the systems in.
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


#: the keys a vote file's name may give (``file_pattern``): the systems find the pair of a question id
VOTE_FIELDS = frozenset({"item_id", "dataset", "annotator", "system_a", "system_b", "system_first", "system_second"})
#: ``(dataset or None, item_id, the two systems sorted or None)``
VoteKey = tuple[str | None, str, tuple[str, str] | None]


def _file_keys(rec: dict[str, Any], keys: dict[str, str], src: dict[str, str], *, path: str, row: int) -> None:
    """Fill the row's item_id, dataset, annotator and systems from its file name's ``keys`` where the row
    has none; a different value in the row is an :class:`ItemError` naming the file, row and field."""
    keys = dict(keys)
    for shown, canonical in (("system_first", "system_a"), ("system_second", "system_b")):
        if shown in keys:      # votes are canonical: the name's two systems only find the pair
            keys[canonical] = keys.pop(shown)
    from ._keys import fills

    for name, value in keys.items():
        if fills(rec.get(src[name]), value, name=name, what="the row", path=path, row=row, field=src[name]):
            rec[src[name]] = value


def _key(rec: dict[str, Any], src: dict[str, str], *, path: str, row: int) -> VoteKey:
    item = text_id(rec.get(src["item_id"]), path=path, row=row, field=src["item_id"])
    ds = rec.get(src["dataset"])
    sa, sb = rec.get(src["system_a"]), rec.get(src["system_b"])
    systems = None
    if sa is not None or sb is not None:
        a = text_id(sa, path=path, row=row, field=src["system_a"])
        b = text_id(sb, path=path, row=row, field=src["system_b"])
        systems = (min(a, b), max(a, b))
    return (None if ds is None else text_id(ds, path=path, row=row, field=src["dataset"]), item, systems)


def read_votes(path: str | Path, *, annotators: list[str] | None = None, field_map: dict[str, str] | None = None,
               value_map: dict[str, dict[str, str]] | None = None, file_pattern: str | None = None
               ) -> dict[VoteKey, list[tuple[str, str, int]]]:
    """``{(dataset or None, item_id, systems or None): [(annotator, vote, row), ...]}`` of a vote file, or
    of every table of a folder (module docstring)."""
    from ._keys import FilePattern, files_of
    from .tabular import SUFFIXES, check_value_map, read_rows

    p = Path(path)
    value_map = check_value_map(value_map)
    if set(value_map) - {"vote"}:
        raise ItemError(f"--map-values applies to vote in a vote file, not {sorted(set(value_map) - {'vote'})}",
                        field="map-values")
    pattern = FilePattern(file_pattern, VOTE_FIELDS, reader="a vote") if file_pattern else None
    if pattern is not None and annotators and "annotator" in pattern.regex.groupindex:
        raise ItemError("--annotators names the annotators' columns: the file name cannot name one too",
                        field="file-pattern")
    if not p.exists():
        raise ItemError("file not found", path=str(p))
    fm = dict(field_map or {})
    src = {name: fm.get(name, name) for name in ("item_id", "dataset", "annotator", "vote", "system_a", "system_b")}
    vmap = {k: v for k, v in (value_map or {}).get("vote", {}).items()}
    out: dict[VoteKey, list[tuple[str, str, int]]] = defaultdict(list)
    problems = Problems(str(p))
    for f in files_of(p, SUFFIXES["table"]):
        try:
            keys = pattern.keys(f) if pattern is not None else {}
        except ItemError as exc:
            problems.add(exc)
            continue
        rows = read_rows(f, problems)      # a line that is not JSON: one problem among the rows'
        if not rows:
            problems.add(ItemError("no records", path=str(f)))
        for row, rec in rows:
            try:
                _file_keys(rec, keys, src, path=str(f), row=row)
                _row_votes(rec, _key(rec, src, path=str(f), row=row), out, annotators, src, vmap,
                           path=str(f), row=row)
            except ItemError as exc:
                problems.add(exc)
    problems.raise_if_any()
    return dict(out)


def _row_votes(rec: dict[str, Any], key: VoteKey, out: dict[VoteKey, list[tuple[str, str, int]]],
               annotators: list[str] | None, src: dict[str, str], vmap: dict[str, str], *, path: str,
               row: int) -> None:
    cells = ([(a, rec.get(a), a) for a in annotators] if annotators else
             [(text_id(rec.get(src["annotator"]), path=path, row=row, field=src["annotator"]),
               rec.get(src["vote"]), src["vote"])])
    for annotator, raw, field in cells:
        if annotators and annotator not in rec:
            raise ItemError("no such column (--annotators names one column per annotator)", path=path,
                            row=row, field=annotator)
        vote = _vote(raw, vmap, path=path, row=row, field=field)
        if vote is not None:
            out[key].append((annotator, vote, row))


def attach_votes(path: str | Path, *, run_dir: str | Path, gold_rule: str = DEFAULT_RULE,
                 annotators: list[str] | None = None, field_map: dict[str, str] | None = None,
                 value_map: dict[str, dict[str, str]] | None = None, file_pattern: str | None = None
                 ) -> ImportResult:
    """Attach the votes of ``path`` to the run's pair items and relabel them by ``gold_rule`` (module
    docstring)."""
    try:
        check_gold_rule(gold_rule)
    except ValueError as exc:
        raise ItemError(str(exc), field="gold-rule") from None
    votes = read_votes(path, annotators=annotators, field_map=field_map, value_map=value_map,
                       file_pattern=file_pattern)
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


def _pairs(key: VoteKey, stored: dict[tuple[str, str], PairItem], by_id: dict[str, list[str]]) -> list[PairItem]:
    """The stored pairs a vote names: its item id (or, with the two systems, the question's pair of them:
    ``<item_id>-<A>-vs-<B>``, :func:`._keys.pair_item_id`) in its dataset, or in any dataset."""
    from ._keys import pair_item_id

    ds, iid, systems = key
    ids = [iid] if systems is None else [iid, pair_item_id(iid, *systems)]
    found = []
    for i in ids:
        for d in ([ds] if ds is not None else by_id.get(i, [])):
            it = stored.get((d, i))
            if it is None or (systems is not None and it.system_a is not None
                              and tuple(sorted((it.system_a, it.system_b or ""))) != systems):
                continue
            found.append(it)
    return found


def _relabelled(votes: dict[VoteKey, list[tuple[str, str, int]]],
                stored: dict[tuple[str, str], PairItem], rule: str, path: str) -> dict[tuple[str, str], PairItem]:
    by_id: dict[str, list[str]] = defaultdict(list)
    for stored_ds, stored_id in stored:
        by_id[stored_id].append(stored_ds)
    problems = Problems(path)
    out: dict[tuple[str, str], PairItem] = {}
    for key, vs in votes.items():
        ds, iid, systems = key
        row = vs[0][2]
        found = _pairs(key, stored, by_id)
        pair = "" if systems is None else f" of systems {systems[0]!r} and {systems[1]!r}"
        if not found:
            problems.add(ItemError(f"no pair {iid!r}{pair}{'' if ds is None else f' of dataset {ds!r}'} in this run",
                                   path=path, row=row, field="item_id"))
            continue
        if len(found) > 1:
            problems.add(ItemError(f"item id {iid!r}{pair} names pairs of datasets "
                                   f"{sorted({it.dataset for it in found})}: add a dataset column",
                                   path=path, row=row, field="item_id"))
            continue
        it = found[0]
        before = out[(it.dataset, it.item_id)].votes if (it.dataset, it.item_id) in out else ()
        all_votes = [*before, *(Vote.model_validate({"annotator": a, "vote": v}) for a, v, _ in vs)]
        out[(it.dataset, it.item_id)] = it.model_copy(update={"votes": tuple(all_votes), "label_rule": rule,
                                                              "label": gold_label([v.vote for v in all_votes], rule)})
    problems.raise_if_any()
    return out
