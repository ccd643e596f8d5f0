"""A run store written by the previous store layout opens, reports and resumes; column reads.

The previous layout is written here with its own DDL (as the code before the migration created it:
the judgments table with every current column and the ``judgments_cell`` index, no
``judgments_by_cell`` / ``judgments_failed``), not from a committed binary file.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from verdictlab.core.judgment import JUDGMENT_COLUMN_NAMES, JUDGMENT_COLUMNS
from verdictlab.core.policy import FigurePolicy
from verdictlab.engine import run_config
from verdictlab.engine.config import config_from_dict
from verdictlab.report import build_report
from verdictlab.store import INDEXES, StoreError, open_store

PREVIOUS_DDL = f"""
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE items (
    dataset TEXT NOT NULL, item_id TEXT NOT NULL, kind TEXT NOT NULL, data TEXT NOT NULL,
    PRIMARY KEY (dataset, item_id)
);
CREATE TABLE judgments (
    {", ".join(f'"{n}" {t}' + (" PRIMARY KEY" if n == "trial_id" else "") for n, t, _ in JUDGMENT_COLUMNS)}
);
CREATE INDEX judgments_cell ON judgments (judge, protocol, dataset, temperature);
CREATE TABLE cache (
    key TEXT PRIMARY KEY, judge TEXT NOT NULL, response TEXT NOT NULL, created_at REAL NOT NULL
);
CREATE TABLE attempts (
    id INTEGER PRIMARY KEY AUTOINCREMENT, trial_id TEXT NOT NULL, judge TEXT NOT NULL,
    attempt INTEGER NOT NULL, outcome TEXT NOT NULL, error_kind TEXT, error TEXT,
    latency_s REAL, created_at REAL NOT NULL
);
"""


def _config(tmp_path: Path) -> Any:
    data = tmp_path / "pairs.jsonl"
    with data.open("w") as fh:
        for i in range(5):
            fh.write(json.dumps({"item_id": i, "question": f"q{i}", "response_a": f"first answer {i}",
                                 "response_b": f"second answer {i}", "label": "AB"[i % 2]}) + "\n")
    return config_from_dict({"name": "m", "datasets": [{"name": "jsonl", "path": "pairs.jsonl"}],
                             "judges": ["sim:skill=0.8,position_lock=0.3,noise=0.2,seed=5"],
                             "protocols": ["direct", "vf-json"], "orders": ["AB", "BA"],
                             "temperatures": [0.7], "repetitions": 3}, source=tmp_path / "cfg.yaml")


def _indexes(db: Path) -> set[str]:
    con = sqlite3.connect(db)
    try:
        return {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'index' "
                                          "AND name NOT LIKE 'sqlite_autoindex%'")}
    finally:
        con.close()


def test_a_store_of_the_previous_layout_reports_and_resumes(tmp_path: Path) -> None:
    cfg = _config(tmp_path)
    full = run_config(cfg, tmp_path / "full", progress=False)          # 5 items x 2 x 2 x 3 = 60 trials
    assert full.n_trials == 60
    # the previous layout, holding the first half of the full run's judgments, its items and meta
    old = tmp_path / "old"
    old.mkdir()
    con = sqlite3.connect(old / "run.sqlite")
    con.executescript(PREVIOUS_DDL)
    con.execute("ATTACH DATABASE ? AS full", (str(tmp_path / "full" / "run.sqlite"),))
    con.execute("INSERT INTO items SELECT * FROM full.items")
    con.execute("INSERT INTO meta SELECT * FROM full.meta WHERE key IN ('schema_version', 'config')")
    con.execute("INSERT INTO judgments SELECT * FROM full.judgments ORDER BY rowid LIMIT 30")
    con.commit()
    con.execute("DETACH DATABASE full")
    con.close()
    assert _indexes(old / "run.sqlite") == {"judgments_cell"}

    # read-only (report, export) reads it as it is: nothing migrated, nothing written
    with open_store(old) as st:
        assert st.count() == 30 and len(st.judgments(["verdict"], compact=True)) == 30
    assert _indexes(old / "run.sqlite") == {"judgments_cell"}
    assert len(build_report(old, policy=FigurePolicy(n_bootstrap=50)).cells) == 2

    # resuming migrates it and judges only the other half; the result equals the full run's
    again = run_config(cfg, old, progress=False)
    assert (again.n_skipped, again.n_written) == (30, 30)
    assert _indexes(old / "run.sqlite") == set(INDEXES)
    cols = ["trial_id", "verdict", "parse_status", "raw_output"]
    with open_store(old) as st, open_store(tmp_path / "full") as ref:
        got = st.judgments(cols).sort_values("trial_id", ignore_index=True)
        want = ref.judgments(cols).sort_values("trial_id", ignore_index=True)
    pd.testing.assert_frame_equal(got, want)
    from verdictlab.report import report_json

    assert (report_json(build_report(old, policy=FigurePolicy(n_bootstrap=50)))["cells"]
            == report_json(build_report(tmp_path / "full", policy=FigurePolicy(n_bootstrap=50)))["cells"])


def test_column_reads_compact_and_filtered(tmp_path: Path) -> None:
    cfg = _config(tmp_path)
    run_config(cfg, tmp_path / "run", progress=False)
    with open_store(tmp_path / "run") as st:
        plain = st.judgments()
        assert list(plain.columns) == list(JUDGMENT_COLUMN_NAMES)
        figure_cols = ["judge", "item_id", "protocol", "order", "rep", "verdict", "shown_first_won", "p_a"]
        small = st.judgments(figure_cols, compact=True)
        assert list(small.columns) == figure_cols
        assert str(small["verdict"].dtype) == "category" and str(small["rep"].dtype) == "Int64"
        assert small["p_a"].dtype == "float64"
        # the same values as the plain read, row for row
        for c in figure_cols:
            a = small[c].astype(object).where(small[c].notna(), None).tolist()
            b = plain[c].astype(object).where(plain[c].notna(), None).tolist()
            assert a == b, c
        # where=: the rows of one cell (30 of 60), and no column at all is a row count
        one = st.judgments(["order"], where={"protocol": "direct", "temperature": 0.7}, compact=True)
        assert len(one) == 30 and set(one["order"]) == {"AB", "BA"}
        assert st.judgments([], where={"protocol": "nope"}).shape == (0, 0)
        assert st.distinct(["protocol"]) == [("direct",), ("vf-json",)]
        with pytest.raises(StoreError, match="unknown judgment column"):
            st.judgments(["colour"])
        with pytest.raises(StoreError, match="unknown judgment column"):
            st.judgments(where={"colour": "red"})
