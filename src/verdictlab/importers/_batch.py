"""What an importer returns, and how judgment rows are built and written to a run store."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..core.items import ItemError, PairItem, PointItem, Problems
from ..core.judgment import judgment_dict
from ..core.ranges import REP, TEMPERATURE, Range, RangeError
from ..core.vocab import canonical_first_won, check_order
from ..store import RunStore
from ._reimport import ReimportError, plan_reimport, replace_judgments


@dataclass
class ImportBatch:
    """Judgment rows (all :data:`verdictlab.store.JUDGMENT_COLUMNS`) and the items they are about."""

    format: str
    source: str
    judgments: list[dict[str, Any]]
    items: list[PairItem | PointItem] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    checked: bool = False      # check_batch already ran over these rows (the importer collected its problems)


@dataclass(frozen=True)
class ImportResult:
    format: str
    source: str
    run_dir: str
    n_rows: int          # judgment rows read from the source
    n_inserted: int      # rows newly written (a trial already in the store is never duplicated)
    n_items: int
    n_unparsed: int
    cells: tuple[tuple[str, str, str, float], ...]   # (judge, protocol, dataset, temperature)
    notes: tuple[str, ...] = ()
    n_replaced: int = 0   # rows that differed from the stored trial and replaced it (replace=True)
    n_identical: int = 0  # rows already stored with the same content (nothing written)

    @property
    def n_skipped(self) -> int:
        return self.n_rows - self.n_inserted - self.n_replaced


def shown_first_won(verdict: str | None, order: str) -> int | None:
    """1 if the first-shown response won, 0 if the second did, None for ties and unparsed
    (:func:`verdictlab.core.vocab.canonical_first_won`)."""
    return canonical_first_won(verdict, check_order(order))


def judgment_row(*, judge: str, dataset: str, item_id: str, protocol: str, order: str,
                 temperature: float, rep: int, verdict: str | None, label: str | None,
                 step: str = "", category: str | None = None, raw_output: str | None = None,
                 parse_status: str | None = None, parse_detail: str | None = None,
                 **extra: Any) -> dict[str, Any]:
    """One complete judgment row (a dict of every column), built by
    :func:`verdictlab.core.judgment.make_judgment`.  ``verdict`` is in canonical terms; ``parse_status``
    defaults to 'ok' for a verdict and 'failed' (verdict NULL) when the source recorded no parseable
    verdict.  Bad order, verdict, status or column names raise ``ValueError``."""
    extra.setdefault("attempts", 1)
    extra.setdefault("cache_hit", 0)
    return judgment_dict(judge=judge, dataset=dataset, item_id=str(item_id), protocol=protocol, order=order,
                         temperature=float(temperature), rep=int(rep), step=step or "", verdict=verdict,
                         label=label, category=category, raw_output=raw_output, parse_status=parse_status,
                         parse_detail=parse_detail, **extra)


def checked(range_: Range, value: Any, *, path: str | None = None, row: int | None = None,
            field: str | None = None) -> Any:
    """``value`` within ``range_`` (:mod:`verdictlab.core.ranges`), else an :class:`ItemError` naming the
    file, row and field (or the option: ``field="--temperature"``)."""
    try:
        return range_.check(value)
    except RangeError as exc:
        raise ItemError(str(exc), path=path, row=row, field=field) from None


def check_options(options: dict[str, Any], *, path: str | None = None) -> None:
    """The whole-file numbers an import is given (``--temperature``, ``--rep``), checked before any
    importer reads its source -- whatever the format."""
    for name, range_ in (("temperature", TEMPERATURE), ("rep", REP)):
        if options.get(name) is not None:
            checked(range_, options[name], path=path, field=f"--{name}")


#: the columns of a judgment row that describe its item rather than the trial: one value per item
PER_ITEM_COLUMNS = ("label", "category", "system_a", "system_b")
_TRIAL_KEY = ("judge", "dataset", "item_id", "protocol", "order", "temperature", "rep", "step")


def _show(value: Any) -> str:
    return "empty" if value is None else repr(value)


def check_batch(batch: ImportBatch, problems: Problems | None = None) -> None:
    """The rows of one import agree with themselves: no trial twice (two source rows for one trial
    key would be a silent choice), and one value of each per-item column (:data:`PER_ITEM_COLUMNS`:
    the gold label, the category, the two systems) for all rows of one item -- an item labelled A on its AB row and B
    on its BA row would make accuracy depend on row order.  Every problem is collected."""
    own = problems is None
    problems = Problems(batch.source) if problems is None else problems
    seen: dict[str, int] = {}
    per_item: dict[tuple[str, str], tuple[tuple[Any, ...], int]] = {}
    for i, r in enumerate(batch.judgments, start=1):
        row = r.get("_row") or i
        tid = r["trial_id"]
        if tid in seen:
            key = ", ".join(f"{k}={r[k]!r}" for k in _TRIAL_KEY)
            problems.add(ItemError(f"two judgments for one trial ({key}); first was judgment {seen[tid]}",
                                   path=batch.source, row=row))
        else:
            seen[tid] = row
        item = (r["dataset"], r["item_id"])
        values = tuple(r.get(c) for c in PER_ITEM_COLUMNS)
        first = per_item.setdefault(item, (values, row))
        if first[0] != values:
            for c, new, old in zip(PER_ITEM_COLUMNS, values, first[0], strict=True):
                if new != old:
                    problems.add(ItemError(f"item {item[1]!r} of dataset {item[0]!r} has {c} {_show(new)} here "
                                           f"but {_show(old)} on row {first[1]}: one item has one {c} (fix the "
                                           "file; labels can also come from --items)", path=batch.source,
                                           row=row, field=c))
    if own:
        problems.raise_if_any()


def check_stored_items(batch: ImportBatch, store: RunStore) -> None:
    """The per-item columns of the batch agree with the judgments already stored for the same items
    (an earlier import of the other order's file, say): one item, one label, across imports too."""
    if store.count() == 0:
        return
    # the stored rows of the batch's own trials are compared trial by trial (new / identical / changed)
    stored = store.item_columns(PER_ITEM_COLUMNS, except_trials=[r["trial_id"] for r in batch.judgments])
    problems = Problems(batch.source)
    reported: set[tuple[str, str, str]] = set()
    for i, r in enumerate(batch.judgments, start=1):
        item = (r["dataset"], r["item_id"])
        old = stored.get(item)
        if old is None:
            continue
        for c, before in zip(PER_ITEM_COLUMNS, old, strict=True):
            if r.get(c) != before and (*item, c) not in reported:
                reported.add((*item, c))
                problems.add(ItemError(f"item {item[1]!r} of dataset {item[0]!r} has {c} {_show(r.get(c))} here but "
                                       f"{_show(before)} in the judgments already stored in {store.run_dir}: one "
                                       f"item has one {c} (fix the file, or import into another run dir)",
                                       path=batch.source, row=r.get("_row") or i, field=c))
    problems.raise_if_any()


def unique_items(batch: ImportBatch) -> list[PairItem | PointItem]:
    """The batch's items once each; one id with two different contents is an error naming the field."""
    out: dict[tuple[str, str], PairItem | PointItem] = {}
    for it in batch.items:
        key = (it.dataset, it.item_id)
        prev = out.get(key)
        if prev is not None:
            before, after = prev.model_dump(exclude={"meta"}), it.model_dump(exclude={"meta"})
            if before != after:
                which = next((k for k in after if before.get(k) != after[k]), "item_id")
                raise ItemError(f"item {it.item_id!r} of dataset {it.dataset!r} appears twice with different "
                                f"content ({which} differs)", path=batch.source, field=which)
        out.setdefault(key, it)
    return list(out.values())


def record_import(store: RunStore, *, format: str, source: str, n_rows: int, inserted: int, replaced: int,
                  identical: int, notes: list[str]) -> None:
    """The import's meta: one more ``imports`` record, the source in ``imported_from``, ``import_format``."""
    record = {"format": format, "path": source, "n_rows": n_rows, "n_inserted": inserted,
              "n_replaced": replaced, "n_identical": identical, "notes": list(notes), "at": time.time()}
    imports = list(store.get_meta("imports", []) or [])
    imports.append(record)
    store.set_meta("imports", imports)
    sources = list(store.get_meta("imported_from", []) or [])
    if source not in sources:
        sources.append(source)
    store.set_meta("imported_from", sources)
    store.set_meta("import_format", format)


def write_batch(batch: ImportBatch, run_dir: str | Path, *, replace: bool = False) -> ImportResult:
    """Write items, judgments and import meta (``imported_from``, ``imports``) into ``run_dir``.

    Re-import is never silent (:mod:`._reimport`): rows identical to the stored trial are a no-op,
    rows that differ refuse the whole import (:class:`ReimportError`, nothing written) unless
    ``replace`` -- then they replace the stored rows and the result counts them."""
    if not batch.judgments:
        raise ItemError("no judgments found to import", path=batch.source)
    if not batch.checked:
        check_batch(batch)
    items = unique_items(batch)
    with RunStore(run_dir) as store:
        check_stored_items(batch, store)
        # rows are passed on as they are (no copy: imports are large); created_at left unset (None) so
        # the store stamps the write time; the source-row marker is only for the checks above
        for r in batch.judgments:
            r.pop("_row", None)
            r.pop("_file", None)
        rows = batch.judgments
        plan = plan_reimport(store, rows, items)
        if (plan.changed or plan.items_changed) and not replace:
            raise ReimportError(plan.refusal(batch.source), path=batch.source)
        if items:
            store.write_items(items)
        inserted = store.add_judgments(plan.new)
        replaced = replace_judgments(store, plan.changed) if replace else 0
        record_import(store, format=batch.format, source=batch.source, n_rows=len(rows), inserted=inserted,
                      replaced=replaced, identical=plan.n_identical, notes=batch.notes)
    cells = sorted({(r["judge"], r["protocol"], r["dataset"], float(r["temperature"])) for r in rows})
    return ImportResult(format=batch.format, source=batch.source, run_dir=str(run_dir),
                        n_rows=len(rows), n_inserted=inserted, n_items=len(items),
                        n_unparsed=sum(r["verdict"] is None for r in rows), cells=tuple(cells),
                        notes=tuple(batch.notes), n_replaced=replaced, n_identical=plan.n_identical)
