"""The run store: ``RUN_DIR/run.sqlite`` (SQLite, WAL).

Tables
------
``judgments``  one row per trial, unique on ``trial_id`` (the hash of the trial key).
``items``      the items of the run (so reports can show question and responses).
``attempts``   one row per call attempt (engine outcome accounting: ok / retry / failed).
``meta``       key -> JSON value: schema version, config, versions, judge parameters.

Verdicts are always stored in canonical terms; ``order`` says how they were shown.
Results are committed in small transactions so a killed run loses at most the calls in flight.
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from .items import PairItem, PointItem

SCHEMA_VERSION = 1
STORE_FILENAME = "run.sqlite"

PARSE_STATUSES: tuple[str, ...] = ("ok", "repaired", "fallback", "failed")

# (name, SQL type, description) -- the stable judgment schema, documented in the README.
JUDGMENT_COLUMNS: tuple[tuple[str, str, str], ...] = (
    ("trial_id", "TEXT", "sha1 of the trial key"),
    ("judge", "TEXT", "judge id, e.g. 'sim:skill=0.8,...' or 'llamacpp:smollm2-135m'"),
    ("dataset", "TEXT", "dataset name"),
    ("item_id", "TEXT", "item id within the dataset"),
    ("protocol", "TEXT", "protocol id (direct, vf-json, ...)"),
    ("order", "TEXT", "'AB' shows response_a first, 'BA' shows response_b first"),
    ("temperature", "REAL", "sampling temperature"),
    ("rep", "INTEGER", "repetition index, 0-based"),
    ("step", "TEXT", "criterion / round for multi-call protocols, '' otherwise"),
    ("label", "TEXT", "gold label in canonical terms: A, B, tie or NULL"),
    ("category", "TEXT", "item category, if any"),
    ("raw_output", "TEXT", "the judge's raw text"),
    ("verdict", "TEXT", "parsed verdict in canonical terms: A, B, tie or NULL (unparsed)"),
    ("shown_first_won", "INTEGER", "1 if the first-shown response won, 0 if the second, NULL otherwise"),
    ("parse_status", "TEXT", "ok | repaired | fallback | failed"),
    ("parse_detail", "TEXT", "what the parser did or why it failed"),
    ("fallback_rule", "TEXT", "the rule that produced a fallback verdict, if any"),
    ("scores", "TEXT", "JSON object of protocol scores (e.g. score_a, score_b)"),
    ("p_a", "REAL", "P(canonical A wins) from token log-probabilities, if available"),
    ("latency_s", "REAL", "wall time of the successful call"),
    ("tokens_in", "INTEGER", "prompt tokens"),
    ("tokens_out", "INTEGER", "completion tokens"),
    ("cost_usd", "REAL", "cost of the call(s) in US dollars"),
    ("attempts", "INTEGER", "number of call attempts made"),
    ("error", "TEXT", "last error if the trial failed for good"),
    ("cache_hit", "INTEGER", "1 if served from the response cache"),
    ("prompt_hash", "TEXT", "sha1 of the full request (messages + parameters)"),
    ("created_at", "REAL", "unix time the row was written"),
)
JUDGMENT_COLUMN_NAMES: tuple[str, ...] = tuple(c[0] for c in JUDGMENT_COLUMNS)

_DDL = f"""
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS items (
    dataset TEXT NOT NULL, item_id TEXT NOT NULL, kind TEXT NOT NULL, data TEXT NOT NULL,
    PRIMARY KEY (dataset, item_id)
);
CREATE TABLE IF NOT EXISTS judgments (
    {", ".join(f'"{n}" {t}' + (" PRIMARY KEY" if n == "trial_id" else "") for n, t, _ in JUDGMENT_COLUMNS)}
);
CREATE INDEX IF NOT EXISTS judgments_cell ON judgments (judge, protocol, dataset, temperature);
CREATE TABLE IF NOT EXISTS attempts (
    id INTEGER PRIMARY KEY AUTOINCREMENT, trial_id TEXT NOT NULL, judge TEXT NOT NULL,
    attempt INTEGER NOT NULL, outcome TEXT NOT NULL, error_kind TEXT, error TEXT,
    latency_s REAL, created_at REAL NOT NULL
);
"""


class StoreError(RuntimeError):
    pass


class RunStore:
    """SQLite store of one run.  Safe to reopen; a second open resumes."""

    def __init__(self, run_dir: str | Path, *, create: bool = True) -> None:
        self.run_dir = Path(run_dir)
        self.path = self.run_dir / STORE_FILENAME
        if not self.path.exists() and not create:
            raise StoreError(f"{self.path}: no run store here (expected {STORE_FILENAME})")
        self.run_dir.mkdir(parents=True, exist_ok=True)
        self.conn = sqlite3.connect(self.path, timeout=30.0, isolation_level=None,
                                    check_same_thread=False)
        self.conn.execute("PRAGMA journal_mode=WAL")
        self.conn.execute("PRAGMA synchronous=NORMAL")
        self.conn.executescript(_DDL)
        version = self.get_meta("schema_version")
        if version is None:
            self.set_meta("schema_version", SCHEMA_VERSION)
        elif int(version) > SCHEMA_VERSION:
            raise StoreError(f"{self.path}: schema version {version} is newer than this verdictlab "
                             f"({SCHEMA_VERSION}); upgrade verdictlab")

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

    def items(self, dataset: str | None = None) -> list[PairItem | PointItem]:
        q = "SELECT kind, data FROM items"
        args: tuple[Any, ...] = ()
        if dataset is not None:
            q += " WHERE dataset = ?"
            args = (dataset,)
        out: list[PairItem | PointItem] = []
        for kind, data in self.conn.execute(q, args):
            out.append(PairItem.model_validate_json(data) if kind == "pair"
                       else PointItem.model_validate_json(data))
        return out

    def items_frame(self) -> pd.DataFrame:
        """Items as a frame (dataset, item_id, kind, question, response_a, response_b, label, category)."""
        recs = []
        for it in self.items():
            d = it.model_dump()
            d["kind"] = "pair" if isinstance(it, PairItem) else "point"
            recs.append(d)
        return pd.DataFrame.from_records(recs)

    # -- judgments ----------------------------------------------------------------------------
    def done_trial_ids(self) -> set[str]:
        return {r[0] for r in self.conn.execute("SELECT trial_id FROM judgments")}

    def add_judgments(self, rows: Sequence[dict[str, Any]]) -> int:
        """Insert judgment rows in one transaction; rows whose trial is already stored are
        ignored (never duplicated).  Returns the number of rows inserted."""
        if not rows:
            return 0
        cols = JUDGMENT_COLUMN_NAMES
        now = time.time()
        values = []
        for r in rows:
            unknown = set(r) - set(cols)
            if unknown:
                raise StoreError(f"unknown judgment column(s): {sorted(unknown)}")
            rec = dict(r)
            rec.setdefault("created_at", now)
            if isinstance(rec.get("scores"), dict):
                rec["scores"] = json.dumps(rec["scores"], sort_keys=True)
            for b in ("shown_first_won", "cache_hit"):
                if isinstance(rec.get(b), bool):
                    rec[b] = int(rec[b])
            ps = rec.get("parse_status")
            if ps is not None and ps not in PARSE_STATUSES:
                raise StoreError(f"parse_status must be one of {PARSE_STATUSES}, got {ps!r}")
            values.append(tuple(rec.get(c) for c in cols))
        placeholders = ", ".join("?" for _ in cols)
        collist = ", ".join(f'"{c}"' for c in cols)
        with self.transaction():
            before = self.conn.total_changes
            self.conn.executemany(f"INSERT INTO judgments ({collist}) VALUES ({placeholders}) "
                                  "ON CONFLICT(trial_id) DO NOTHING", values)
            return self.conn.total_changes - before

    def add_attempts(self, rows: Sequence[dict[str, Any]]) -> None:
        if not rows:
            return
        now = time.time()
        with self.transaction():
            self.conn.executemany(
                "INSERT INTO attempts(trial_id, judge, attempt, outcome, error_kind, error, latency_s, "
                "created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                [(r["trial_id"], r["judge"], r["attempt"], r["outcome"], r.get("error_kind"),
                  r.get("error"), r.get("latency_s"), r.get("created_at", now)) for r in rows])

    def judgments(self) -> pd.DataFrame:
        """All judgments as a DataFrame with the stable column set and dtypes."""
        df = pd.read_sql_query("SELECT * FROM judgments", self.conn)
        if df.empty:
            df = pd.DataFrame({c: pd.Series(dtype=_pandas_dtype(t)) for c, t, _ in JUDGMENT_COLUMNS})
        return df[list(JUDGMENT_COLUMN_NAMES)]

    def attempts(self) -> pd.DataFrame:
        return pd.read_sql_query("SELECT * FROM attempts", self.conn)

    def count(self) -> int:
        return int(self.conn.execute("SELECT COUNT(*) FROM judgments").fetchone()[0])

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
        self.conn.execute("COMMIT" if exc_type is None else "ROLLBACK")


def _pandas_dtype(sql_type: str) -> str:
    return {"TEXT": "object", "REAL": "float64", "INTEGER": "Int64"}[sql_type]


def open_store(run_dir: str | Path) -> RunStore:
    """Open an existing run directory (error if it holds no run store)."""
    return RunStore(run_dir, create=False)
