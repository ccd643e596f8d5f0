"""The run store: ``RUN_DIR/run.sqlite`` (SQLite, WAL).

Tables
------
``judgments``  one row per trial, unique on ``trial_id`` (the hash of the trial key).
``items``      the items of the run (so reports can show question and responses).
``attempts``   one row per call attempt (engine outcome accounting: ok / retry / failed).
``meta``       key -> JSON value: schema version, config, versions, judge parameters.
``cache``      response cache of the engine: request hash -> the judge's response (JSON).

This module holds all of verdictlab's SQL.  The judgment columns are defined once, in
:mod:`verdictlab.core.judgment`.  Opening a store for writing migrates it in place, additively, so a run
written by an earlier verdictlab opens, reports and resumes, and an earlier verdictlab can still
open a migrated store: a column added to the schema later is added with its default (``decoding``,
``free``), and the indexes are brought to the current set (:data:`INDEXES`).

Reading judgments for figures should name its columns (:meth:`RunStore.judgments` with
``columns=``): a scan of SQLite costs per value read, and the wide text columns (``raw_output``,
``parse_detail``, ``trial_id``, ``prompt_hash``) are most of a row.  ``compact=True`` gives the
low-cardinality text columns as pandas categoricals (a few bytes per row instead of a string
object each); docs/scale.md has the measured comparison of layers behind this choice.

Verdicts are always stored in canonical terms; ``order`` says how they were shown.
Results are committed in small transactions so a killed run loses at most the calls in flight.
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Iterable, Mapping, Sequence
from operator import attrgetter
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ..core.collector import gc_paused
from ..core.items import PairItem, PointItem
from ..core.judgment import (
    JUDGMENT_COLUMN_NAMES,
    JUDGMENT_COLUMNS,
    Judgment,
    JudgmentError,
    as_row_values,
    pandas_dtype,
)
from ..core.vocab import DEFAULT_DECODING, PARSE_STATUSES
from ..errors import StoreError

SCHEMA_VERSION = 1
STORE_FILENAME = "run.sqlite"

_DDL = f"""
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS items (
    dataset TEXT NOT NULL, item_id TEXT NOT NULL, kind TEXT NOT NULL, data TEXT NOT NULL,
    PRIMARY KEY (dataset, item_id)
);
CREATE TABLE IF NOT EXISTS judgments (
    {", ".join(f'"{n}" {t}' + (" PRIMARY KEY" if n == "trial_id" else "") for n, t, _ in JUDGMENT_COLUMNS)}
);
CREATE TABLE IF NOT EXISTS cache (
    key TEXT PRIMARY KEY, judge TEXT NOT NULL, response TEXT NOT NULL, created_at REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS attempts (
    id INTEGER PRIMARY KEY AUTOINCREMENT, trial_id TEXT NOT NULL, judge TEXT NOT NULL,
    attempt INTEGER NOT NULL, outcome TEXT NOT NULL, error_kind TEXT, error TEXT,
    latency_s REAL, created_at REAL NOT NULL
);
"""

#: the indexes of the judgments table (name -> definition), created on a writable open
INDEXES: dict[str, str] = {
    # a cell's rows, and the rows of one (judge, dataset) partition of an export, by a prefix of one index
    "judgments_by_cell": "ON judgments (judge, dataset, protocol, temperature)",
    # trials whose call failed for good: counted by every report and resumed run, a few rows in millions
    "judgments_failed": "ON judgments (trial_id) WHERE error IS NOT NULL",
}
#: indexes of earlier versions, dropped when a store is migrated (judgments_by_cell replaces it)
RETIRED_INDEXES = ("judgments_cell",)
#: text columns with few distinct values: categoricals when a frame is read with ``compact=True``
CATEGORICAL_COLUMNS = frozenset({"judge", "dataset", "item_id", "protocol", "order", "step", "label", "category",
                                 "verdict", "parse_status", "fallback_rule", "decoding", "error", "system_a",
                                 "system_b"})
#: judgment columns that repeat a field of the row's item: a store written before they were columns
#: has them filled from its items (``system_a`` / ``system_b``: ``model_a`` / ``model_b`` in older items)
ITEM_FIELD_COLUMNS: dict[str, tuple[str, ...]] = {"system_a": ("system_a", "model_a"),
                                                  "system_b": ("system_b", "model_b")}
_READ_CHUNK = 200_000
_CACHE_KIB = 65_536     # page cache of a writable connection: bulk inserts into a store of millions of rows


class RunStore:
    """SQLite store of one run.  Safe to reopen; a second open resumes."""

    def __init__(self, run_dir: str | Path, *, create: bool = True, read_only: bool = False) -> None:
        self.run_dir = Path(run_dir)
        self.path = self.run_dir / STORE_FILENAME
        self.read_only = read_only
        if not self.path.is_file() and (not create or read_only):
            raise StoreError(f"{self.path}: no run store here (expected {STORE_FILENAME})")
        try:
            if read_only:
                self.conn = _connect_read_only(self.path)
            else:
                self.run_dir.mkdir(parents=True, exist_ok=True)
                self.conn = sqlite3.connect(self.path, timeout=30.0, isolation_level=None,
                                            check_same_thread=False)
                self.conn.execute("PRAGMA journal_mode=WAL")
                self.conn.execute("PRAGMA synchronous=NORMAL")
                self.conn.execute(f"PRAGMA cache_size=-{_CACHE_KIB}")
                self.conn.executescript(_DDL)
                self._add_missing_columns()
                self._migrate_indexes()
            version = self.get_meta("schema_version")
            if version is None and not read_only:
                self.set_meta("schema_version", SCHEMA_VERSION)
        except sqlite3.DatabaseError as exc:      # garbage, truncated, not SQLite, or a locked/full disk
            raise StoreError(f"{self.path}: not a readable run store ({exc})") from None
        if version is not None and int(version) > SCHEMA_VERSION:
            raise StoreError(f"{self.path}: schema version {version} is newer than this verdictlab "
                             f"({SCHEMA_VERSION}); upgrade verdictlab")

    def _add_missing_columns(self) -> None:
        """Columns added to the schema after a store was written (additive, with their default; the
        columns that repeat an item field filled from the stored items, :data:`ITEM_FIELD_COLUMNS`)."""
        have = {r[1] for r in self.conn.execute('PRAGMA table_info("judgments")')}
        added = []
        for name, sql_type, _ in JUDGMENT_COLUMNS:
            if name not in have:
                default = f" DEFAULT '{DEFAULT_DECODING}'" if name == "decoding" else ""
                self.conn.execute(f'ALTER TABLE judgments ADD COLUMN "{name}" {sql_type}{default}')
                added.append(name)
        filled = [name for name in added if name in ITEM_FIELD_COLUMNS]
        if filled and self.conn.execute("SELECT 1 FROM items LIMIT 1").fetchone() is not None:
            with self.transaction() as conn:
                for name in filled:
                    pick = ", ".join(f"json_extract(i.data, '$.{f}')" for f in ITEM_FIELD_COLUMNS[name])
                    conn.execute(f'UPDATE judgments SET "{name}" = (SELECT COALESCE({pick}) FROM items i WHERE '
                                 "i.dataset = judgments.dataset AND i.item_id = judgments.item_id)")

    def _item_fields(self, names: Sequence[str]) -> dict[tuple[str, str], tuple[Any, ...]]:
        """``{(dataset, item_id): values}`` of the item fields behind judgment columns ``names``
        (:data:`ITEM_FIELD_COLUMNS`), for a store opened read-only that lacks those columns."""
        picks = ", ".join("COALESCE(" + ", ".join(f"json_extract(data, '$.{f}')" for f in ITEM_FIELD_COLUMNS[n])
                          + ")" for n in names)
        return {(r[0], r[1]): tuple(r[2:]) for r in
                self.conn.execute(f"SELECT dataset, item_id, {picks} FROM items WHERE kind = 'pair'")}

    def _migrate_indexes(self) -> None:
        """Bring the judgments indexes to :data:`INDEXES` (building one over millions of rows takes a
        few seconds, once)."""
        have = {r[0] for r in self.conn.execute("SELECT name FROM sqlite_master WHERE type = 'index'")}
        for name in RETIRED_INDEXES:
            if name in have:
                self.conn.execute(f'DROP INDEX "{name}"')
        for name, definition in INDEXES.items():
            if name not in have:
                self.conn.execute(f'CREATE INDEX "{name}" {definition}')

    # -- meta ---------------------------------------------------------------------------------
    def set_meta(self, key: str, value: Any) -> None:
        self.conn.execute("INSERT INTO meta(key, value) VALUES (?, ?) "
                          "ON CONFLICT(key) DO UPDATE SET value = excluded.value",
                          (key, json.dumps(value, default=str)))

    def get_meta(self, key: str, default: Any = None) -> Any:
        row = self.conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return default if row is None else json.loads(row[0])

    def all_meta(self) -> dict[str, Any]:
        return {k: json.loads(v) for k, v in self.conn.execute("SELECT key, value FROM meta")}

    # -- items --------------------------------------------------------------------------------
    def write_items(self, items: Iterable[PairItem | PointItem]) -> None:
        rows = [(it.dataset, it.item_id, "pair" if isinstance(it, PairItem) else "point",
                 it.model_dump_json()) for it in items]
        with self.transaction():
            self.conn.executemany("INSERT OR REPLACE INTO items(dataset, item_id, kind, data) "
                                  "VALUES (?, ?, ?, ?)", rows)

    def relabel_items(self, items: Sequence[PairItem]) -> int:
        """Write these pair items (their votes and gold label changed) and give every stored judgment of
        each the item's label, in one transaction.  Returns the number of judgments relabelled."""
        rows = [(it.dataset, it.item_id, "pair", it.model_dump_json()) for it in items]
        with self.transaction() as conn:
            conn.executemany("INSERT OR REPLACE INTO items(dataset, item_id, kind, data) VALUES (?, ?, ?, ?)", rows)
            before = conn.total_changes
            conn.executemany("UPDATE judgments SET label = ? WHERE dataset = ? AND item_id = ?",
                             [(it.label, it.dataset, it.item_id) for it in items])
            return conn.total_changes - before

    def items(self, dataset: str | None = None) -> list[PairItem | PointItem]:
        """The stored items (of ``dataset``), in table order.

        Validated with the garbage collector paused: each item is a few container objects, and at
        100,000 items the collections they set off rescanned them again and again -- after the figure
        frame was read (as a report does) the 5.4Mp run's items took 1.8-1.9 s of CPU, now 1.1-1.3 s,
        most of it pydantic's validation (without the pause, its ``_renamed`` validator seemed to cost
        0.4 s; with it, a validator without it is no faster)."""
        q = "SELECT kind, data FROM items"
        args: tuple[Any, ...] = ()
        if dataset is not None:
            q += " WHERE dataset = ?"
            args = (dataset,)
        pair = PairItem.__pydantic_validator__.validate_json      # model_validate_json without its wrapper
        point = PointItem.__pydantic_validator__.validate_json
        with gc_paused():
            return [pair(data) if kind == "pair" else point(data) for kind, data in self.conn.execute(q, args)]

    def items_frame(self, items: Sequence[PairItem | PointItem] | None = None) -> pd.DataFrame:
        """Items as a frame (dataset, item_id, kind, question, response_a, response_b, label, category):
        a row per item, its fields as ``model_dump`` gives them.  ``items`` (what :meth:`items` returned)
        spares reading and validating them again."""
        if items is None:
            items = self.items()
        with gc_paused():
            pairs = [it for it in items if type(it) is PairItem]    # not a subclass: its fields are known
            if pairs and len(pairs) == len(items):
                return _pair_items_frame(pairs)
            recs = []
            for it in items:
                d = it.model_dump()
                d["kind"] = "pair" if isinstance(it, PairItem) else "point"
                recs.append(d)
            return pd.DataFrame.from_records(recs)

    # -- judgments ----------------------------------------------------------------------------
    def done_trial_ids(self) -> set[str]:
        return {r[0] for r in self.conn.execute("SELECT trial_id FROM judgments")}

    def add_judgments(self, rows: Sequence[Judgment | dict[str, Any]]) -> int:
        """Insert judgment rows (:class:`~verdictlab.core.judgment.Judgment` or column dicts) in one
        transaction; rows whose trial is already stored are ignored (never duplicated).  Returns the
        number of rows inserted."""
        if not rows:
            return 0
        values = _row_values(rows)
        with self.transaction():
            before = self.conn.total_changes
            self.conn.executemany(_INSERT_JUDGMENT, values)
            return self.conn.total_changes - before

    def bulk_insert(self, chunks: Iterable[Sequence[tuple[Any, ...]]], *,
                    items: Iterable[PairItem | PointItem] = (), expected: int | None = None) -> int:
        """Chunks of store-ready judgment tuples (:data:`JUDGMENT_COLUMN_NAMES` order), then items, in
        ONE transaction, for imports of millions of rows (``items`` is consumed after the last chunk,
        so a generator may yield what the chunks found).  Rows whose trial is stored are ignored.  With
        ``expected``, a count of inserted rows other than that rolls everything back (nothing written)
        and is returned.  An exception from a chunk rolls back too.  Returns the number of rows
        inserted."""
        conn = self.conn
        conn.execute("BEGIN IMMEDIATE")
        try:
            before = conn.total_changes
            for chunk in chunks:
                conn.executemany(_INSERT_JUDGMENT, chunk)
            inserted = conn.total_changes - before
            conn.executemany("INSERT OR REPLACE INTO items(dataset, item_id, kind, data) VALUES (?, ?, ?, ?)",
                             [(it.dataset, it.item_id, "pair" if isinstance(it, PairItem) else "point",
                               it.model_dump_json()) for it in items])
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise
        conn.execute("ROLLBACK" if expected is not None and inserted != expected else "COMMIT")
        return inserted

    def stored_content(self, trial_ids: Sequence[str], columns: Sequence[str]) -> dict[str, tuple[Any, ...]]:
        """``{trial_id: (values of columns)}`` for the stored ones of ``trial_ids`` (importers compare a
        re-import with what is stored)."""
        bad = [c for c in columns if c not in JUDGMENT_COLUMN_NAMES]
        if bad:
            raise StoreError(f"unknown judgment column(s): {bad}")
        cols = ", ".join(f'j."{c}"' for c in columns)
        out: dict[str, tuple[Any, ...]] = {}
        with self.transaction() as conn:
            conn.execute("CREATE TEMP TABLE IF NOT EXISTS _wanted_ids (trial_id TEXT PRIMARY KEY)")
            conn.execute("DELETE FROM _wanted_ids")
            conn.executemany("INSERT OR IGNORE INTO _wanted_ids (trial_id) VALUES (?)", [(t,) for t in trial_ids])
            for row in conn.execute(f"SELECT j.trial_id, {cols} FROM judgments j JOIN _wanted_ids USING (trial_id)"):
                out[row[0]] = tuple(row[1:])
            conn.execute("DELETE FROM _wanted_ids")
        return out

    def item_columns(self, columns: Sequence[str], *,
                     except_trials: Sequence[str] = ()) -> dict[tuple[str, str], tuple[Any, ...]]:
        """``{(dataset, item_id): (values of columns)}`` from one stored judgment of each item, leaving out
        the trials ``except_trials`` (an import checks that its per-item columns -- label, category --
        agree with the other stored judgments of the same items)."""
        bad = [c for c in columns if c not in JUDGMENT_COLUMN_NAMES]
        if bad:
            raise StoreError(f"unknown judgment column(s): {bad}")
        cols = ", ".join(f'j."{c}"' for c in columns)
        out: dict[tuple[str, str], tuple[Any, ...]] = {}
        with self.transaction() as conn:
            conn.execute("CREATE TEMP TABLE IF NOT EXISTS _except_ids (trial_id TEXT PRIMARY KEY)")
            conn.execute("DELETE FROM _except_ids")
            conn.executemany("INSERT OR IGNORE INTO _except_ids (trial_id) VALUES (?)", [(t,) for t in except_trials])
            query = (f"SELECT j.dataset, j.item_id, {cols} FROM judgments j WHERE j.trial_id NOT IN "
                     "(SELECT trial_id FROM _except_ids) GROUP BY j.dataset, j.item_id")
            for row in conn.execute(query):
                out[(row[0], row[1])] = tuple(row[2:])
            conn.execute("DELETE FROM _except_ids")
        return out

    def replace_judgments(self, rows: Sequence[Judgment | dict[str, Any]]) -> int:
        """Insert or overwrite these judgment rows (every column but ``trial_id``), in one
        transaction -- only for an explicit ``import --replace``.  Returns the number of rows."""
        if not rows:
            return 0
        values = _row_values(rows)
        with self.transaction() as conn:
            conn.executemany(_UPSERT_JUDGMENT, values)
        return len(values)

    def delete_failed(self, trial_ids: Iterable[str]) -> int:
        """Remove the rows of these trials whose calls failed for good (``error`` set; unparseable
        answers are kept) so they are judged again.  Returns how many were removed."""
        wanted = set(trial_ids)
        failed = [r[0] for r in self.conn.execute("SELECT trial_id FROM judgments WHERE error IS NOT NULL")
                  if r[0] in wanted]
        if failed:
            with self.transaction() as conn:
                conn.executemany("DELETE FROM judgments WHERE trial_id = ?", [(t,) for t in failed])
        return len(failed)

    def prior_spend(self) -> tuple[int, int, float]:
        """``(calls, tokens, dollars)`` spent by earlier sessions (attempts made; tokens and cost of
        rows not served from the cache) -- what a resumed run's budget starts from."""
        calls = int(self.conn.execute("SELECT COUNT(*) FROM attempts").fetchone()[0])
        tok, usd = self.conn.execute(
            "SELECT COALESCE(SUM(COALESCE(tokens_in, 0) + COALESCE(tokens_out, 0)), 0), "
            "COALESCE(SUM(cost_usd), 0) FROM judgments WHERE COALESCE(cache_hit, 0) = 0").fetchone()
        return calls, int(tok), float(usd)

    def stored_item_data(self) -> Iterable[tuple[str, str, str]]:
        """``(dataset, item_id, JSON)`` of every stored item (to check a resumed run's items)."""
        return self.conn.execute("SELECT dataset, item_id, data FROM items")

    # -- response cache ------------------------------------------------------------------------
    def cache_get(self, key: str) -> str | None:
        """The cached response (JSON text) for a request hash, or None."""
        row = self.conn.execute("SELECT response FROM cache WHERE key = ?", (key,)).fetchone()
        return None if row is None else str(row[0])

    def cache_put(self, entries: Sequence[tuple[str, str, str, float]]) -> None:
        """Store ``(key, judge, response JSON, created_at)`` entries in one transaction."""
        if entries:
            with self.transaction() as conn:
                conn.executemany("INSERT OR REPLACE INTO cache(key, judge, response, created_at) "
                                 "VALUES (?, ?, ?, ?)", entries)

    def write_batch(self, *, judgments: Sequence[Judgment | dict[str, Any]] = (),
                    attempts: Sequence[dict[str, Any]] = (),
                    cache: Sequence[tuple[str, str, str, float]] = ()) -> int:
        """Attempts, cache entries and judgments of one writer flush, in one transaction (one
        commit instead of three).  Returns the number of judgments inserted."""
        if not (judgments or attempts or cache):
            return 0
        now = time.time()
        try:
            values = [as_row_values(r, now=now) for r in judgments]
        except JudgmentError as exc:
            raise StoreError(str(exc)) from None
        with self.transaction() as conn:
            if attempts:
                conn.executemany(_INSERT_ATTEMPT, [_attempt_values(r, now) for r in attempts])
            if cache:
                conn.executemany("INSERT OR REPLACE INTO cache(key, judge, response, created_at) "
                                 "VALUES (?, ?, ?, ?)", cache)
            before = conn.total_changes
            if values:
                conn.executemany(_INSERT_JUDGMENT, values)
            return conn.total_changes - before

    def add_attempts(self, rows: Sequence[dict[str, Any]]) -> None:
        if not rows:
            return
        now = time.time()
        with self.transaction():
            self.conn.executemany(_INSERT_ATTEMPT, [_attempt_values(r, now) for r in rows])

    def judgments(self, columns: Sequence[str] | None = None, *, where: Mapping[str, Any] | None = None,
                  compact: bool = False, figure_details: bool = False) -> pd.DataFrame:
        """Judgments as a DataFrame: ``columns`` (default all of :data:`JUDGMENT_COLUMNS`, in that
        order) of the rows whose columns equal ``where``'s values (default every row).

        ``compact=False`` gives the stable dtypes every caller has had.  ``compact=True`` reads in
        chunks and gives :data:`CATEGORICAL_COLUMNS` as categoricals, ``rep``, ``shown_first_won``,
        ``cache_hit``, token and attempt counts as nullable ``Int64`` and real columns as ``float64``:
        the frame of 5.4 million judgments' figure columns in a few hundred megabytes.  A column an
        older store lacks (opened read-only) comes back with its default.

        ``figure_details=True`` reads ``parse_detail`` only where a figure reads it
        (:func:`figure_detail_kept`: a judgment not parsed cleanly, or decoded under a constraint) and
        NULL elsewhere: an import writes a different detail on every row, which would otherwise be
        most of a compact frame."""
        names = list(JUDGMENT_COLUMN_NAMES) if columns is None else list(columns)
        bad = [c for c in [*names, *(where or {})] if c not in JUDGMENT_COLUMN_NAMES]
        if bad:
            raise StoreError(f"unknown judgment column(s): {bad}")
        have = self._judgment_columns()
        stored = [c for c in names if c in have]
        rows = " FROM judgments"
        args: tuple[Any, ...] = ()
        if where:
            rows += " WHERE " + " AND ".join(f'"{c}" IS ?' for c in where)
            args = tuple(where.values())
        fill = [n for n in names if n not in have and n in ITEM_FIELD_COLUMNS]
        if fill:        # read in rowid order, as _fill_item_fields reads the rows' items
            rows += " ORDER BY rowid"
        if not stored:
            n = int(self.conn.execute("SELECT COUNT(*)" + rows, args).fetchone()[0])
            df = pd.DataFrame(index=pd.RangeIndex(n))
        else:
            picks = [_FIGURE_DETAIL_SQL.format(decoding='"decoding"' if "decoding" in have else "NULL")
                     if c == "parse_detail" and figure_details else f'"{c}"' for c in stored]
            sql = "SELECT " + ", ".join(picks) + rows
            df = (_read_compact if compact else _read_plain)(self.conn, sql, args, stored)
        for name in names:     # an older store opened read-only lacks newer columns
            if name not in have:
                df[name] = pd.Series(dtype=pandas_dtype(_SQL_TYPE[name]), index=df.index)
        self._fill_item_fields(df, fill, rows, args)
        if compact:
            for name in names:
                if name not in have and name in CATEGORICAL_COLUMNS:
                    df[name] = df[name].astype("category")
        return with_read_defaults(df[names])

    def _fill_item_fields(self, df: pd.DataFrame, names: list[str], rows: str, args: tuple[Any, ...]) -> None:
        """The item-field columns ``names`` of an older store (opened read-only, without them) from its
        items, row for row in the order ``rows`` reads the judgments."""
        if not names or not len(df):
            return
        fields = self._item_fields(names)
        if not fields:
            return
        keys = self.conn.execute("SELECT dataset, item_id" + rows, args).fetchall()
        none = (None,) * len(names)
        values = [fields.get((d, i), none) for d, i in keys]
        for k, name in enumerate(names):
            df[name] = pd.Series([v[k] for v in values], index=df.index)

    def distinct(self, columns: Sequence[str]) -> list[tuple[Any, ...]]:
        """The distinct value combinations of judgment ``columns``, sorted (NULLs first)."""
        bad = [c for c in columns if c not in JUDGMENT_COLUMN_NAMES]
        if bad or not columns:
            raise StoreError(f"unknown judgment column(s): {bad or list(columns)}")
        cols = ", ".join(f'"{c}"' for c in columns)
        return [tuple(r) for r in self.conn.execute(f"SELECT DISTINCT {cols} FROM judgments ORDER BY {cols}")]

    def attempts(self) -> pd.DataFrame:
        return pd.read_sql_query("SELECT * FROM attempts", self.conn)

    def count_failed(self) -> int:
        """Judgments whose calls failed for good (``error`` set), over the whole store."""
        return int(self.conn.execute("SELECT COUNT(*) FROM judgments WHERE error IS NOT NULL").fetchone()[0])

    def count(self) -> int:
        return int(self.conn.execute("SELECT COUNT(*) FROM judgments").fetchone()[0])

    # -- read-only queries of the viewer (verdictlab view) ---------------------------------------
    # The viewer opens the store read-only and never writes; these queries only read.  They address
    # judgments by SQLite rowid (what the viewer's index keeps per pair, 8 bytes a judgment) so that a
    # pair's page is a primary-key lookup, not a scan of the table.

    def judgment_keys(self, *, chunk_rows: int = 250_000) -> pd.DataFrame:
        """Every judgment's ``rowid`` and the columns its outcome depends on -- the cell key
        (``judge, protocol, dataset, temperature, decoding``), ``step, item_id, order, rep, verdict,
        label`` -- without texts or accounting.  Read in chunks with the text columns categorical, so
        a million judgments take tens of megabytes, not the gigabyte their Python strings would.
        ``step`` NULL is ``''``; a store written before ``decoding`` existed reads ``free``."""
        decoding = '"decoding"' if "decoding" in self._judgment_columns() else f"'{DEFAULT_DECODING}'"
        text_cols = ["judge", "protocol", "dataset", "decoding", "step", "item_id", "order", "verdict", "label"]
        sql = (f'SELECT rowid, judge, protocol, dataset, temperature, COALESCE({decoding}, '
               f"'{DEFAULT_DECODING}') AS decoding, COALESCE(step, '') AS step, item_id, \"order\", rep, "
               "verdict, label FROM judgments ORDER BY rowid")
        names = ["rowid", "judge", "protocol", "dataset", "temperature", "decoding", "step", "item_id", "order",
                 "rep", "verdict", "label"]
        parts: dict[str, list[Any]] = {n: [] for n in names}
        cur = self.conn.execute(sql)
        while rows := cur.fetchmany(chunk_rows):
            for name, values in zip(names, zip(*rows, strict=True), strict=True):
                # categorical straight from the Python values: no intermediate string column per chunk
                parts[name].append(_categorical(values) if name in text_cols
                                   else np.asarray(values, dtype=np.float64 if name == "temperature" else np.int64))
        out: dict[str, Any] = {}
        for name in names:
            if name not in text_cols:
                out[name] = np.concatenate(parts[name]) if parts[name] else np.zeros(0, dtype=np.int64)
            elif parts[name]:
                out[name] = pd.api.types.union_categoricals(parts[name], ignore_order=True)
            else:
                out[name] = pd.Categorical(np.zeros(0, dtype=object))
        if not parts["rowid"]:
            out["temperature"] = np.zeros(0, dtype=np.float64)
        return pd.DataFrame(out, columns=names)

    def judgment_extent(self) -> tuple[int, int]:
        """``(number of judgments, largest rowid)``: changes whenever judgments are added or removed.

        Two sub-selects of one statement (one snapshot): each gets SQLite's shortcut (COUNT(*) counts
        the cells of the smallest index, MAX(rowid) reads the last leaf), which one ``SELECT COUNT(*),
        MAX(rowid)`` does not -- it scans every row: 0.11 s of CPU instead of 0.47 at 5.4 million rows."""
        n, last = self.conn.execute("SELECT (SELECT COUNT(*) FROM judgments), "
                                    "(SELECT COALESCE(MAX(rowid), 0) FROM judgments)").fetchone()
        return int(n), int(last)

    def judgments_at(self, rowids: Sequence[int]) -> list[dict[str, Any]]:
        """The full rows (every judgment column) of these rowids, in rowid order."""
        out: list[dict[str, Any]] = []
        ids = sorted({int(r) for r in rowids})
        cols = ", ".join(f'"{c}"' for c in JUDGMENT_COLUMN_NAMES if c in self._judgment_columns())
        for start in range(0, len(ids), 500):           # well under SQLite's bound-parameter limit
            part = ids[start:start + 500]
            cur = self.conn.execute(f"SELECT {cols} FROM judgments WHERE rowid IN "
                                    f"({', '.join('?' for _ in part)}) ORDER BY rowid", part)
            names = [d[0] for d in cur.description]
            out.extend(dict(zip(names, row, strict=True)) for row in cur)
        for rec in out:
            for name, value in READ_DEFAULTS.items():
                if rec.get(name) is None:
                    rec[name] = value
        return out

    def pair_texts(self, pairs: Sequence[Mapping[str, Any]]) -> list[dict[tuple[str, int], tuple[Any, Any]]]:
        """For each pair, ``{(order, rep): (raw_output, parse_detail)}`` of its judgments in its cell: a
        pair names ``judge, dataset, protocol, temperature, item_id`` and optionally ``step`` (none:
        ``''``) and ``decoding`` (none: ``free``).  One query per cell (its index range, filtered by
        the items asked for), so a report's few hundred shown pairs cost a few scans of their cells."""
        decoding = (f"COALESCE(\"decoding\", '{DEFAULT_DECODING}')" if "decoding" in self._judgment_columns()
                    else f"'{DEFAULT_DECODING}'")
        cells: dict[tuple[Any, ...], list[int]] = {}
        for k, pair in enumerate(pairs):
            cell = (*(pair[c] for c in ("judge", "dataset", "protocol", "temperature")), pair.get("step") or "",
                    pair.get("decoding") or DEFAULT_DECODING)
            cells.setdefault(cell, []).append(k)
        out: list[dict[tuple[str, int], tuple[Any, Any]]] = [{} for _ in pairs]
        for cell, at in cells.items():
            where = {str(pairs[k]["item_id"]): k for k in at}
            for start in range(0, len(at), 500):         # SQLite's bound-parameter limit, with room
                ids = list(where)[start:start + 500]
                sql = ("SELECT item_id, \"order\", rep, raw_output, parse_detail FROM judgments WHERE judge IS ? "
                       "AND dataset IS ? AND protocol IS ? AND temperature IS ? AND COALESCE(step, '') IS ? "
                       f"AND {decoding} IS ? AND item_id IN ({', '.join('?' * len(ids))})")
                for item, order, rep, raw, detail in self.conn.execute(sql, (*cell, *ids)):
                    out[where[str(item)]][(order, int(rep))] = (raw, detail)
        return out

    def _judgment_columns(self) -> set[str]:
        return {r[1] for r in self.conn.execute('PRAGMA table_info("judgments")')}

    def item_record(self, dataset: str, item_id: str) -> PairItem | PointItem | None:
        """One stored item, or None."""
        row = self.conn.execute("SELECT kind, data FROM items WHERE dataset = ? AND item_id = ?",
                                (dataset, item_id)).fetchone()
        if row is None:
            return None
        return PairItem.model_validate_json(row[1]) if row[0] == "pair" else PointItem.model_validate_json(row[1])

    def item_judgment_count(self, dataset: str, item_id: str) -> int:
        """How many judgments the run holds about one item."""
        return int(self.conn.execute("SELECT COUNT(*) FROM judgments WHERE dataset = ? AND item_id = ?",
                                     (dataset, item_id)).fetchone()[0])

    def record_curation(self, item: PairItem | PointItem, event: Mapping[str, Any]) -> None:
        """Replace a stored item by its curated form and append ``event`` to the run's audit trail (meta
        ``curation``), in one transaction; a :class:`StoreError` when the item is not in the store."""
        with self.transaction() as conn:
            cur = conn.execute("UPDATE items SET data = ? WHERE dataset = ? AND item_id = ?",
                               (item.model_dump_json(), item.dataset, item.item_id))
            if cur.rowcount != 1:
                raise StoreError(f"{self.path}: no item {item.dataset}/{item.item_id} to curate")
            row = conn.execute("SELECT value FROM meta WHERE key = 'curation'").fetchone()
            trail = json.loads(row[0]) if row is not None else []
            trail.append(dict(event))
            conn.execute("INSERT INTO meta(key, value) VALUES ('curation', ?) "
                         "ON CONFLICT(key) DO UPDATE SET value = excluded.value", (json.dumps(trail, default=str),))

    def retried_attempts(self) -> list[dict[str, Any]]:
        """The call attempts that did not succeed (retries and failures: ``trial_id, attempt, outcome,
        error_kind, error, latency_s, created_at``), a small share of the ``attempts`` table."""
        cur = self.conn.execute("SELECT trial_id, attempt, outcome, error_kind, error, latency_s, created_at "
                                "FROM attempts WHERE outcome != 'ok' ORDER BY trial_id, attempt")
        names = [d[0] for d in cur.description]
        return [dict(zip(names, row, strict=True)) for row in cur]

    # -- plumbing -----------------------------------------------------------------------------
    def transaction(self) -> _Transaction:
        return _Transaction(self.conn)

    def close(self) -> None:
        self.conn.close()

    def __enter__(self) -> RunStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class _Transaction:
    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn

    def __enter__(self) -> sqlite3.Connection:
        self.conn.execute("BEGIN IMMEDIATE")
        return self.conn

    def __exit__(self, exc_type: object, *rest: object) -> None:
        if exc_type is None:
            self.conn.execute("COMMIT")
        elif self.conn.in_transaction:    # SQLite may have rolled back already (disk full): keep that error
            self.conn.execute("ROLLBACK")


_INSERT_JUDGMENT = (f"INSERT INTO judgments ({', '.join(f'{chr(34)}{c}{chr(34)}' for c in JUDGMENT_COLUMN_NAMES)}) "
                    f"VALUES ({', '.join('?' for _ in JUDGMENT_COLUMN_NAMES)}) ON CONFLICT(trial_id) DO NOTHING")
_UPSERT_JUDGMENT = (_INSERT_JUDGMENT.replace(" ON CONFLICT(trial_id) DO NOTHING", "")
                    + " ON CONFLICT(trial_id) DO UPDATE SET "
                    + ", ".join(f'"{c}" = excluded."{c}"' for c in JUDGMENT_COLUMN_NAMES if c != "trial_id"))
_INSERT_ATTEMPT = ("INSERT INTO attempts(trial_id, judge, attempt, outcome, error_kind, error, latency_s, "
                   "created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)")


def _attempt_values(r: dict[str, Any], now: float) -> tuple[Any, ...]:
    return (r["trial_id"], r["judge"], r["attempt"], r["outcome"], r.get("error_kind"), r.get("error"),
            r.get("latency_s"), r.get("created_at", now))


def _connect_read_only(path: Path) -> sqlite3.Connection:
    """Open ``path`` without writing anything: ``mode=ro``; where SQLite cannot even create its
    shared-memory file (a read-only mount or folder), ``immutable=1`` -- unless a non-empty ``-wal``
    file holds changes not yet merged into the database, which an immutable open would not see."""
    uri = path.resolve().as_uri()
    conn = sqlite3.connect(f"{uri}?mode=ro", uri=True, isolation_level=None, check_same_thread=False)
    try:
        conn.execute("SELECT COUNT(*) FROM sqlite_master").fetchone()
        return conn
    except sqlite3.OperationalError:
        conn.close()
    wal = path.with_name(path.name + "-wal")
    if wal.exists() and wal.stat().st_size > 0:
        raise StoreError(f"{path}: holds changes in {wal.name} that cannot be merged on a read-only "
                         "location; copy the run directory somewhere writable and open the copy")
    conn = sqlite3.connect(f"{uri}?immutable=1", uri=True, isolation_level=None, check_same_thread=False)
    conn.execute("SELECT COUNT(*) FROM sqlite_master").fetchone()
    return conn


def _row_values(rows: Sequence[Judgment | dict[str, Any]]) -> list[tuple[Any, ...]]:
    """The rows as insert tuples (one ``created_at`` for the batch); a bad row is a StoreError."""
    now = time.time()
    try:
        return [as_row_values(r, now=now) for r in rows]
    except JudgmentError as exc:
        raise StoreError(str(exc)) from None


_SQL_TYPE = {name: sql_type for name, sql_type, _ in JUDGMENT_COLUMNS}


def _read_plain(conn: sqlite3.Connection, sql: str, args: tuple[Any, ...], columns: list[str]) -> pd.DataFrame:
    df = pd.read_sql_query(sql, conn, params=args)
    if df.empty:
        df = pd.DataFrame({c: pd.Series(dtype=pandas_dtype(_SQL_TYPE[c])) for c in columns})
    return df


#: ``parse_detail`` where a figure reads it (the SQL of :func:`figure_detail_kept`)
_FIGURE_DETAIL_SQL = ("CASE WHEN \"parse_status\" IS NOT 'ok' OR COALESCE({decoding}, 'free') IS NOT 'free' "
                      "THEN \"parse_detail\" END AS \"parse_detail\"")


#: what a judgment column holds where a store has no value for it (a row stored before the column existed,
#: or an older store opened read-only that lacks it): filled once, when the store is read, so no reader of
#: a frame from the store fills it again.  A store written before ``decoding`` existed was free decoding.
READ_DEFAULTS: dict[str, Any] = {"decoding": DEFAULT_DECODING}


def with_read_defaults(df: pd.DataFrame) -> pd.DataFrame:
    """``df`` (judgment columns read from a store) with every :data:`READ_DEFAULTS` column's missing
    values filled (a categorical column gains the default as a category)."""
    for name, value in READ_DEFAULTS.items():
        if name not in df.columns or not df[name].isna().any():
            continue
        col = df[name]
        if isinstance(col.dtype, pd.CategoricalDtype):
            if value not in col.cat.categories:
                col = col.cat.add_categories([value])
            df[name] = col.fillna(value)
        else:
            df[name] = col.astype(object).fillna(value)
    return df


def figure_detail_kept(parse_status: Sequence[Any], decoding: Sequence[Any]) -> np.ndarray:
    """Which rows' ``parse_detail`` a figure reads: the judgments not parsed cleanly (status other than
    ``ok``: the parse audit's reasons) and those decoded under a constraint (the mechanism the decoding
    table names).  ``RunStore.judgments(figure_details=True)`` reads the others as NULL."""
    status = np.asarray(parse_status, dtype=object)
    mode = np.asarray(decoding, dtype=object)
    return (status != "ok") | ((mode != DEFAULT_DECODING) & pd.notna(mode))


class CompactColumns:
    """Builds a compact judgments frame (the dtypes of ``RunStore.judgments(compact=True)``) from
    chunks of column values, one chunk's Python objects alive at a time: what a compact read does with
    the rows SQLite returns, and what a bulk import does with the columns it writes."""

    def __init__(self, columns: Sequence[str]) -> None:
        self.columns = list(columns)
        self._parts: dict[str, list[Any]] = {c: [] for c in self.columns}

    def add(self, values: Mapping[str, Sequence[Any]]) -> None:
        """One chunk: ``{column: values}`` for every column, all of one length."""
        for name in self.columns:
            self._parts[name].append(_compact_column(name, values[name]))

    def add_rows(self, rows: Sequence[tuple[Any, ...]]) -> None:
        """One chunk of row tuples (the values in :attr:`columns` order)."""
        self.add(dict(zip(self.columns, zip(*rows, strict=True), strict=True)))

    def frame(self) -> pd.DataFrame:
        """The frame of every chunk added (once: each column's chunks are released as it is joined,
        so the chunks and the frame are not both held in full)."""
        from pandas.api.types import union_categoricals

        out: dict[str, Any] = {}
        for name in self.columns:
            chunks = self._parts.pop(name, [])
            if not chunks:
                out[name] = _compact_column(name, [])
            elif name in CATEGORICAL_COLUMNS:
                cat = union_categoricals(chunks, sort_categories=True) if len(chunks) > 1 else chunks[0]
                out[name] = cat.reorder_categories(pd.Index(sorted(cat.categories), dtype=object))
            else:
                out[name] = np.concatenate(chunks) if isinstance(chunks[0], np.ndarray) else pd.concat(
                    [pd.Series(c) for c in chunks], ignore_index=True).array
            del chunks
        return pd.DataFrame(out, copy=False)


def _compact_column(name: str, values: Sequence[Any]) -> Any:
    sql_type = _SQL_TYPE[name]
    if name in CATEGORICAL_COLUMNS:
        return _categorical(values)
    if sql_type == "REAL":
        return np.array(values, dtype=np.float64)      # None -> NaN
    if sql_type == "INTEGER":
        return pd.array(values, dtype="Int64")
    return pd.array(values, dtype="string")


def _read_compact(conn: sqlite3.Connection, sql: str, args: tuple[Any, ...], columns: list[str]) -> pd.DataFrame:
    """Read ``sql`` in chunks, each chunk's columns converted at once (categoricals for the
    repetitive text), so the Python objects of only one chunk are alive at a time."""
    frame = CompactColumns(columns)
    cur = conn.execute(sql, args)
    while rows := cur.fetchmany(_READ_CHUNK):
        frame.add_rows(rows)
    return frame.frame()


def _categorical(values: Sequence[Any]) -> pd.Categorical:
    """A categorical of Python strings (None missing) with plain object categories -- built from
    ``pd.factorize`` codes, which skips the inference of an Arrow string column for every chunk."""
    codes, uniques = pd.factorize(np.asarray(values, dtype=object), use_na_sentinel=True)
    return pd.Categorical.from_codes(codes, categories=pd.Index(uniques, dtype=object))


#: the fields of a pair item that ``model_dump`` copies (containers); the others it gives as they are
_PAIR_DUMPED = ("meta", "votes")


def _pair_items_frame(items: Sequence[PairItem]) -> pd.DataFrame:
    """``pd.DataFrame.from_records([{**it.model_dump(), "kind": "pair"} for it in items])``, column by
    column: the text fields as the items hold them, ``meta`` and ``votes`` dumped only where not empty
    (a fresh ``{}`` / ``()`` elsewhere, as the dump gives), the rows given as tuples (the same conversion
    of the same values).  For the 5.4Mp run's 100,000 items 0.8-1.0 s of CPU as dumps and dicts,
    0.43-0.44 s this way (most of it pandas making Arrow strings of the texts)."""
    fields = list(PairItem.model_fields)
    columns: list[list[Any]] = [list(c) for c in zip(*map(attrgetter(*fields), items), strict=True)]
    for name in _PAIR_DUMPED:
        k = fields.index(name)
        columns[k] = [it.model_dump(include={name})[name] if v else type(v)()
                      for it, v in zip(items, columns[k], strict=True)]
    columns.append(["pair"] * len(items))
    return pd.DataFrame.from_records(list(zip(*columns, strict=True)), columns=[*fields, "kind"])


def open_store(run_dir: str | Path, *, read_only: bool = True) -> RunStore:
    """Open an existing run directory (error if it holds no run store).  Read-only by default:
    reading a run (report, export, review, compare) writes nothing, so an archived run on a
    read-only mount can be reported; ``read_only=False`` opens it for writing."""
    return RunStore(run_dir, create=False, read_only=read_only)


__all__ = ["CATEGORICAL_COLUMNS", "INDEXES", "ITEM_FIELD_COLUMNS", "CompactColumns", "figure_detail_kept",
           "JUDGMENT_COLUMNS", "JUDGMENT_COLUMN_NAMES", "PARSE_STATUSES", "READ_DEFAULTS", "SCHEMA_VERSION",
           "STORE_FILENAME", "RunStore", "StoreError", "open_store", "with_read_defaults"]
