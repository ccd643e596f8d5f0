"""The bulk path of the Parquet import stores exactly the rows the per-row import stores.

Each test imports one table twice: through :func:`import_into` (which takes the bulk path) and through
the per-row importer (``get_importer`` + ``attach_items`` + ``write_batch``), and compares the stored
judgments column by column (``created_at`` aside: the write time), the items and the import result.
Tables the bulk path must not take (a bad cell, a trial twice, a store that already holds judgments)
give the per-row import's own result or error.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from verdictlab.core.items import ItemError, PairItem
from verdictlab.importers import _bulk, attach_items, get_importer, import_into, tabular, write_batch
from verdictlab.store import open_store
from verdictlab.store.column_cache import cache_root, cached_folder, figure_frame, figure_key


@pytest.fixture(autouse=True)
def _small_chunks(monkeypatch: pytest.MonkeyPatch) -> None:
    """Chunks of 5 rows, so the 12-row tables below go to the store in three chunks (row numbers,
    attached items and the rollback are per import, not per chunk)."""
    monkeypatch.setattr(_bulk, "_CHUNK", 5)


def _table(n: int = 12) -> pa.Table:
    """Rows with every kind of cell the bulk path converts: verdict words with spaces and case, empty
    and null verdicts, null labels, a given and a missing parse_detail, null and set optional values."""
    verdicts = ["A", "b", " B ", "tie", "", None, "Tie", "a", "B", "A", None, "TIE"]
    return pa.table({
        "item_id": [f"i{k // 4}" for k in range(n)],
        "protocol": ["direct"] * (n // 2) + ["vf-json"] * (n - n // 2),
        "dataset": ["d"] * n,
        "order": ["AB", "BA"] * (n // 2),
        "rep": pa.array([(k // 2) % 2 for k in range(n)], pa.int64()),
        "temperature": pa.array([0] * n, pa.int64()),            # integers, stored as 0.0
        "verdict": verdicts[:n],
        # one label and one category per item (rows of one item that disagree are refused), every kind
        # of value across the items: a word, "tie", none
        "label": [("A", "tie", None)[(k // 4) % 3] for k in range(n)],
        "category": [(None, "facts", "facts")[(k // 4) % 3] for k in range(n)],
        "raw_output": [f"out {k}" for k in range(n)],
        "parse_detail": [None, "", "my note"] + [None] * (n - 3),
        "step": [None, ""] * (n // 2),
        "p_a": pa.array([0.25, None] * (n // 2), pa.float64()),
        "tokens_in": pa.array([100 + k for k in range(n)], pa.int64()),
        "cost_usd": pa.array([None] * n, pa.float64()),
    })


def _both(tmp_path: Path, table: pa.Table, *, items: list[PairItem] | None = None,
          **options: Any) -> tuple[Any, Any, Path, Path]:
    src = tmp_path / "judgments.parquet"
    pq.write_table(table, src)
    bulk = import_into("parquet", src, run_dir=tmp_path / "bulk", items=items, **options)
    batch = get_importer("parquet")(src, **options)
    if items:
        attach_items(batch, items)
    per_row = write_batch(batch, tmp_path / "rows")
    return bulk, per_row, tmp_path / "bulk", tmp_path / "rows"


def _stored(run: Path) -> tuple[pd.DataFrame, list[Any]]:
    with open_store(run) as st:
        df = st.judgments().drop(columns=["created_at"]).sort_values("trial_id", ignore_index=True)
        return df, sorted(st.items(), key=lambda it: (it.dataset, it.item_id))


def _same(tmp_path: Path, table: pa.Table, monkeypatch: pytest.MonkeyPatch, **kw: Any) -> tuple[Any, Any]:
    calls: list[int] = []
    real = tabular.import_table
    monkeypatch.setattr(tabular, "import_table", lambda *a, **k: calls.append(1) or real(*a, **k))
    bulk, per_row, a, b = _both(tmp_path, table, **kw)
    assert len(calls) == 1           # only the per-row reference read the file row by row
    (got, got_items), (want, want_items) = _stored(a), _stored(b)
    pd.testing.assert_frame_equal(got, want)
    assert got_items == want_items
    for field in ("n_rows", "n_inserted", "n_items", "n_unparsed", "cells", "notes", "n_replaced", "n_identical"):
        assert getattr(bulk, field) == getattr(per_row, field), field
    # the bulk path leaves the report's figure columns cached, equal to a read of the store (dtypes too)
    with open_store(a) as st:
        assert cached_folder(cache_root("columns"), figure_key(st)) is not None
        pd.testing.assert_frame_equal(figure_frame(st, cache=cache_root("columns")), figure_frame(st))
    return bulk, got


def test_bulk_path_stores_the_per_row_rows(tmp_path, monkeypatch):
    res, got = _same(tmp_path, _table(), monkeypatch, judge="sim:x")
    assert res.n_rows == 12 and res.n_unparsed == 3           # '', None and None
    assert got["judge"].unique().tolist() == ["sim:x"] and set(got["parse_detail"]) >= {"my note"}


def test_bulk_path_positional_verdicts_integer_item_ids_and_attached_items(tmp_path, monkeypatch):
    t = _table().drop_columns(["item_id", "label"])
    t = t.append_column("item_id", pa.array([k // 4 for k in range(12)], pa.int64()))
    items = [PairItem(item_id=str(k), dataset="other", question=f"q{k}", response_a="x", response_b="y",
                      label="AB"[k % 2], category="cat") for k in range(2)]
    res, got = _same(tmp_path, t, monkeypatch, judge="sim:x", verdicts="positional", items=items)
    assert res.n_items == 2 and got["label"].notna().sum() == 8        # items 0 and 1 labelled, 2 not
    assert any("positional verdict" in d for d in got["parse_detail"])


@pytest.mark.parametrize("bad", ["order", "rep", "p_a"])
def test_a_bad_cell_gives_the_per_row_error_and_writes_nothing(tmp_path, bad):
    t = _table()
    good = t.column(bad).to_pylist()
    good[7] = {"order": "ba", "rep": -1, "p_a": 1.5}[bad]        # row 8: in the second chunk
    col = pa.array(good, t.schema.field(bad).type)
    t = t.set_column(t.schema.get_field_index(bad), bad, col)
    src = tmp_path / "j.parquet"
    pq.write_table(t, src)
    with pytest.raises(ItemError) as per_row:
        get_importer("parquet")(src, judge="sim:x")
    with pytest.raises(ItemError) as bulk:
        import_into("parquet", src, run_dir=tmp_path / "run", judge="sim:x")
    assert str(bulk.value) == str(per_row.value) and "row 8" in str(bulk.value)
    with open_store(tmp_path / "run") as st:
        assert st.count() == 0


def test_a_trial_twice_and_a_second_import_take_the_per_row_path(tmp_path):
    t = _table()
    src = tmp_path / "j.parquet"
    pq.write_table(pa.concat_tables([t, t.slice(5, 1)]), src)
    with pytest.raises(ItemError, match="two judgments for one trial"):
        import_into("parquet", src, run_dir=tmp_path / "run", judge="sim:x")
    with open_store(tmp_path / "run") as st:
        assert st.count() == 0 and st.items() == []              # the bulk transaction was rolled back
    pq.write_table(t, src)
    first = import_into("parquet", src, run_dir=tmp_path / "run", judge="sim:x")
    again = import_into("parquet", src, run_dir=tmp_path / "run", judge="sim:x")
    assert (first.n_inserted, again.n_inserted, again.n_identical) == (12, 0, 12)


def test_trial_ids_of_columns_equal_trial_id_row_by_row():
    from verdictlab.core.design import trial_id, trial_ids

    rows = [("j", "d", "i1", "direct", "AB", 0.0, 0, ""), ("j", "d", 7, "vf-json", "BA", 0.70, 2, "clarity"),
            ("sim:x", "e", "i1", "direct", "AB", 1, 1, None)]
    cols = [list(c) for c in zip(*rows, strict=True)]
    for decoding in (None, "free", "constrained"):
        assert trial_ids(*cols, decoding=decoding) == [trial_id(*r, decoding=decoding) for r in rows]
